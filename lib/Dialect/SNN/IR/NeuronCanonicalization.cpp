//===- NeuronCanonicalization.cpp - A described IF/LIF/PLIF is that op ----===//
//
// The canonical form of an snn.neuron whose description is IF, LIF or
// ParametricLIF (schema::matchKnownNeuron: the same step program, constants
// where the named neuron has its parameters) is the named op, which runs on
// the hand-written fused kernels and in the fused spiking blocks.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/NeuronMatch.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace snn;

namespace {

struct SpecializeKnownNeuron : public OpRewritePattern<NeuronOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NeuronOp op, PatternRewriter &rewriter) const override {
    schema::NeuronDescriptionResult described = schema::describeNeuron(op.getParts());
    if (!described.error.empty())
      return rewriter.notifyMatchFailure(op, described.error);
    std::optional<schema::KnownNeuron> known = schema::matchKnownNeuron(described.description);
    if (!known)
      return rewriter.notifyMatchFailure(op, "not an IF, LIF or PLIF");
    FloatAttr threshold = rewriter.getF32FloatAttr(float(known->vThreshold));
    FloatAttr reset = known->vReset ? rewriter.getF32FloatAttr(float(*known->vReset)) : nullptr;
    BoolAttr detach = rewriter.getBoolAttr(known->detachReset);
    BoolAttr decayInput = rewriter.getBoolAttr(known->decayInput);
    Operation *named = nullptr;
    switch (known->kind) {
    case schema::KnownNeuronKind::IF:
      named = IFNodeOp::create(rewriter, op.getLoc(), op.getType(), op.getInput(), threshold, reset,
                               detach, op.getSurrogateAttr(), op.getAlphaAttr(), op.getBetaAttr());
      break;
    case schema::KnownNeuronKind::LIF:
      named = LIFNodeOp::create(rewriter, op.getLoc(), op.getType(), op.getInput(),
                                rewriter.getF32FloatAttr(float(known->tau)), decayInput, threshold,
                                reset, detach, op.getSurrogateAttr(), op.getAlphaAttr(),
                                op.getBetaAttr());
      break;
    case schema::KnownNeuronKind::PLIF:
      named = PLIFNodeOp::create(rewriter, op.getLoc(), op.getType(), op.getInput(),
                                 op.getParams().front(), decayInput, threshold, reset, detach,
                                 op.getSurrogateAttr(), op.getAlphaAttr(), op.getBetaAttr());
      break;
    }
    named->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, named->getResults());
    return success();
  }
};

} // namespace

void NeuronOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<SpecializeKnownNeuron>(context);
}

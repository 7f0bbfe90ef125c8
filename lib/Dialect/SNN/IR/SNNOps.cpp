#include "snn/Dialect/SNN/IR/SNNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"

#include "snn/Dialect/SNN/IR/SNNShapeInference.h"
#include "snn/Schema/NeuronProgram.h"
#include "snn/Schema/Surrogates.h"

#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace snn;

namespace {

LogicalResult fail(std::optional<Location> loc, const Twine &message) {
  return emitOptionalError(loc, message);
}

/// No upper bound on an input's rank.
constexpr int64_t kAnyRank = std::numeric_limits<int64_t>::max();

/// Which value an op reads, for messages: the op that defines it or the block argument's
/// number, with the value's name where it has one (an imported model's ONNX node name, which
/// also names the placeholders the ONNX legalization infers types on).
std::string describeValue(Value value) {
  auto name = dyn_cast<NameLoc>(value.getLoc());
  std::string named = name ? " '" + name.getName().str() + "'" : "";
  if (auto argument = dyn_cast<BlockArgument>(value))
    return name ? "the value" + named : "argument #" + std::to_string(argument.getArgNumber());
  return "the result of '" + value.getDefiningOp()->getName().getStringRef().str() + "'" +
         named;
}

/// Every activation is time-major: dims 0 and 1 are T and N, and its rank is one that
/// snn-run's kernel for the op takes (lib/Runtime/Execution: `minRank` to `maxRank`, laid
/// out as `layout`), so that what compiles also runs.
FailureOr<RankedTensorType> timeMajor(std::optional<Location> loc, Value value,
                                      int64_t minRank, StringRef what,
                                      int64_t maxRank = kAnyRank,
                                      StringRef layout = "[T, N, ...]") {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return fail(loc, what + " must be a ranked tensor (" + describeValue(value) + ")");
  int64_t rank = type.getRank();
  if (rank >= minRank && rank <= maxRank)
    return type;
  std::string want = maxRank == kAnyRank ? ">= " + std::to_string(minRank)
                     : minRank == maxRank
                         ? std::to_string(minRank)
                         : std::to_string(minRank) + " to " + std::to_string(maxRank);
  return fail(loc, what + " must have rank " + want + " (" + layout + "), got " + Twine(rank) +
                       " (" + describeValue(value) + ")");
}

bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

RankedTensorType withShape(RankedTensorType like, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, like.getElementType());
}

/// Checks that `value` is a 1-D tensor of `extent` elements (a per-channel parameter).
LogicalResult checkVector(std::optional<Location> loc, Value value, int64_t extent,
                          StringRef what) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != 1 || !compatible(type.getDimSize(0), extent))
    return fail(loc, what + " must be a 1-D tensor of " + Twine(extent) + " elements, got " +
                         llvm::formatv("{0}", type).str());
  return success();
}

LogicalResult checkPair(std::optional<Location> loc, ArrayRef<int64_t> values,
                        StringRef name) {
  if (values.size() != 2)
    return fail(loc, "'" + name + "' must have 2 values (height, width), got " +
                         Twine(values.size()));
  return success();
}

/// Spatial output extents of a 2-D sliding window over [T, N, C, H, W].
FailureOr<SmallVector<int64_t>> windowShape(std::optional<Location> loc,
                                            RankedTensorType input, int64_t channels,
                                            ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                                            ArrayRef<int64_t> padding,
                                            ArrayRef<int64_t> dilation, bool ceilMode) {
  if (failed(checkPair(loc, kernel, "kernel_size")) ||
      failed(checkPair(loc, stride, "stride")) ||
      failed(checkPair(loc, padding, "padding")) ||
      failed(checkPair(loc, dilation, "dilation")))
    return failure();
  SmallVector<int64_t> shape{input.getDimSize(0), input.getDimSize(1), channels};
  for (int i = 0; i < 2; ++i) {
    std::optional<int64_t> extent =
        slidingWindowExtent(input.getDimSize(3 + i), kernel[i], stride[i], padding[i],
                            dilation[i], ceilMode);
    if (!extent)
      return fail(loc, "window (kernel " + Twine(kernel[i]) + ", stride " + Twine(stride[i]) +
                           ", padding " + Twine(padding[i]) + ", dilation " +
                           Twine(dilation[i]) + ") does not fit spatial dim of size " +
                           Twine(input.getDimSize(3 + i)));
    shape.push_back(*extent);
  }
  return shape;
}

} // namespace

//===----------------------------------------------------------------------===//
// ParameterOp
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() {
  if (getName().empty())
    return emitOpError("parameter name must not be empty");
  return success();
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 3, "linear input");
  if (failed(input))
    return failure();
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (weight.getRank() != 2)
    return fail(loc, "linear weight must be [out_features, in_features], got " +
                         llvm::formatv("{0}", weight).str());
  int64_t inFeatures = input->getShape().back();
  if (!compatible(inFeatures, weight.getDimSize(1)))
    return fail(loc, "linear input has " + Twine(inFeatures) +
                         " features but weight expects " + Twine(weight.getDimSize(1)));
  if (adaptor.getBias() &&
      failed(checkVector(loc, adaptor.getBias(), weight.getDimSize(0), "linear bias")))
    return failure();
  SmallVector<int64_t> shape(input->getShape());
  shape.back() = weight.getDimSize(0);
  inferred.push_back(withShape(*input, shape));
  return success();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 5, "conv2d input", 5, "[T, N, C, H, W]");
  if (failed(input))
    return failure();
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (weight.getRank() != 4)
    return fail(loc, "conv2d weight must be [out_channels, in_channels/groups, kH, kW], got " +
                         llvm::formatv("{0}", weight).str());
  int64_t groups = static_cast<int64_t>(adaptor.getGroups());
  int64_t outChannels = weight.getDimSize(0);
  if (groups <= 0 || (!ShapedType::isDynamic(outChannels) && outChannels % groups != 0))
    return fail(loc, "conv2d groups (" + Twine(groups) + ") must be positive and divide " +
                         Twine(outChannels) + " output channels");
  int64_t inChannels = input->getDimSize(2), perGroup = weight.getDimSize(1);
  // Checked: groups comes from the model file and may be huge.
  std::optional<int64_t> expected = llvm::checkedMul(perGroup, groups);
  if (!ShapedType::isDynamic(inChannels) && !ShapedType::isDynamic(perGroup) &&
      (!expected || inChannels != *expected))
    return fail(loc, "conv2d input has " + Twine(inChannels) + " channels but weight expects " +
                         (expected ? Twine(*expected)
                                   : Twine(perGroup) + " x " + Twine(groups) + " groups"));
  if (adaptor.getBias() &&
      failed(checkVector(loc, adaptor.getBias(), outChannels, "conv2d bias")))
    return failure();
  SmallVector<int64_t> kernel{weight.getDimSize(2), weight.getDimSize(3)};
  auto shape = windowShape(loc, *input, outChannels, kernel, adaptor.getStride(),
                           adaptor.getPadding(), adaptor.getDilation(), /*ceilMode=*/false);
  if (failed(shape))
    return failure();
  inferred.push_back(withShape(*input, *shape));
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 3, "batch_norm input", 5, "[T, N, C, ...]");
  if (failed(input))
    return failure();
  int64_t channels = input->getDimSize(2);
  if (failed(checkVector(loc, adaptor.getWeight(), channels, "batch_norm weight")) ||
      failed(checkVector(loc, adaptor.getBias(), channels, "batch_norm bias")) ||
      failed(checkVector(loc, adaptor.getRunningMean(), channels, "batch_norm running_mean")) ||
      failed(checkVector(loc, adaptor.getRunningVar(), channels, "batch_norm running_var")))
    return failure();
  if (!(adaptor.getEps().convertToFloat() > 0.0f))
    return fail(loc, "batch_norm eps must be > 0");
  inferred.push_back(*input);
  return success();
}

LogicalResult GroupNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 3, "group_norm input");
  if (failed(input))
    return failure();
  int64_t channels = input->getDimSize(2), groups = adaptor.getNumGroups();
  if (failed(checkVector(loc, adaptor.getWeight(), channels, "group_norm weight")) ||
      failed(checkVector(loc, adaptor.getBias(), channels, "group_norm bias")))
    return failure();
  if (groups <= 0 || (!ShapedType::isDynamic(channels) && channels % groups != 0))
    return fail(loc, llvm::formatv("group_norm num_groups {0} must be positive and divide the "
                                   "{1} channels",
                                   groups, channels));
  if (!(adaptor.getEps().convertToFloat() > 0.0f))
    return fail(loc, "group_norm eps must be > 0");
  inferred.push_back(*input);
  return success();
}

/// The product of `dims`, or nullopt when one is dynamic or the product overflows.
static std::optional<int64_t> staticCount(ArrayRef<int64_t> dims) {
  std::optional<int64_t> count = 1;
  for (int64_t dim : dims) {
    if (ShapedType::isDynamic(dim) || dim < 0)
      return std::nullopt;
    if (!(count = llvm::checkedMul(*count, dim)))
      return std::nullopt;
  }
  return count;
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 3, "reshape input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = adaptor.getShape();
  std::optional<int64_t> from = staticCount(input->getShape().drop_front(2));
  std::optional<int64_t> to = staticCount(shape);
  if (shape.empty() || llvm::any_of(shape, [](int64_t d) { return d <= 0; }) || !to)
    return fail(loc, "reshape shape must be positive sizes, got " +
                         llvm::formatv("[{0}]", llvm::make_range(shape.begin(), shape.end()))
                             .str());
  if (!from || *from != *to)
    return fail(loc, llvm::formatv("reshape of {0} to per-step dims [{1}]: the element counts "
                                   "per step must be static and equal",
                                   *input, llvm::make_range(shape.begin(), shape.end())));
  SmallVector<int64_t> dims{input->getDimSize(0), input->getDimSize(1)};
  dims.append(shape.begin(), shape.end());
  inferred.push_back(withShape(*input, dims));
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 5, "max_pool2d input", 5, "[T, N, C, H, W]");
  if (failed(input))
    return failure();
  auto shape = windowShape(loc, *input, input->getDimSize(2), adaptor.getKernelSize(),
                           adaptor.getStride(), adaptor.getPadding(), adaptor.getDilation(),
                           adaptor.getCeilMode());
  if (failed(shape))
    return failure();
  inferred.push_back(withShape(*input, *shape));
  return success();
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 5, "avg_pool2d input", 5, "[T, N, C, H, W]");
  if (failed(input))
    return failure();
  SmallVector<int64_t> dilation{1, 1};
  auto shape = windowShape(loc, *input, input->getDimSize(2), adaptor.getKernelSize(),
                           adaptor.getStride(), adaptor.getPadding(), dilation,
                           adaptor.getCeilMode());
  if (failed(shape))
    return failure();
  inferred.push_back(withShape(*input, *shape));
  return success();
}

LogicalResult AdaptiveAvgPool2dOp::inferReturnTypes(MLIRContext *,
                                                    std::optional<Location> loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 5, "adaptive_avg_pool2d input", 5,
                         "[T, N, C, H, W]");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> size = adaptor.getOutputSize();
  if (failed(checkPair(loc, size, "output_size")) || size[0] <= 0 || size[1] <= 0)
    return fail(loc, "adaptive_avg_pool2d output_size must be two positive values");
  inferred.push_back(withShape(
      *input, {input->getDimSize(0), input->getDimSize(1), input->getDimSize(2), size[0],
               size[1]}));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 3, "flatten input");
  if (failed(input))
    return failure();
  std::optional<int64_t> features = 1;
  for (int64_t dim : input->getShape().drop_front(2)) {
    if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(*features))
      features = ShapedType::kDynamic;
    else if (!(features = llvm::checkedMul(*features, dim)))
      return fail(loc, "flatten input " + llvm::formatv("{0}", *input).str() +
                           " has more features per step than 64 bits can count");
  }
  inferred.push_back(
      withShape(*input, {input->getDimSize(0), input->getDimSize(1), *features}));
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 2, "dropout input");
  if (failed(input))
    return failure();
  float p = adaptor.getP().convertToFloat();
  if (!(p >= 0.0f && p < 1.0f))
    return fail(loc, "dropout probability must be in [0, 1), got " + llvm::formatv("{0}", p).str());
  inferred.push_back(*input);
  return success();
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 3, "reduce_mean input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> axes = adaptor.getAxes();
  int64_t rank = input->getRank();
  if (axes.empty())
    return fail(loc, "reduce_mean needs at least one axis");
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 2 || axis >= rank)
      return fail(loc, llvm::formatv("reduce_mean axis {0} must be a per-step dim of {1} "
                                     "(2 to {2})",
                                     axis, *input, rank - 1));
    if (i > 0 && axis <= axes[i - 1])
      return fail(loc, llvm::formatv("reduce_mean axes must be ascending and distinct, got "
                                     "{0} after {1}",
                                     axis, axes[i - 1]));
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(input->getDimSize(d));
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  inferred.push_back(withShape(*input, shape));
  return success();
}

LogicalResult SpikingAttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 4, "spiking_attention input", 4,
                         "[T, N, 3*C, L]");
  if (failed(input))
    return failure();
  int64_t heads = adaptor.getNumHeads(), channels = input->getDimSize(2);
  // A state built without the default-valued attribute (an inferring builder) has none yet.
  IntegerAttr groupsAttr = adaptor.getHeadGroupsAttr();
  int64_t groups = groupsAttr ? groupsAttr.getInt() : 1;
  if (heads < 1)
    return fail(loc, "spiking_attention num_heads must be >= 1, got " + Twine(heads));
  if (groups < 1 || heads % groups != 0)
    return fail(loc, llvm::formatv("spiking_attention head_groups {0} must be >= 1 and divide "
                                   "num_heads {1}",
                                   groups, heads));
  if (!std::isfinite(adaptor.getScale().convertToFloat()))
    return fail(loc, "spiking_attention scale must be finite");
  if (ShapedType::isDynamic(channels) || channels % (3 * heads) != 0)
    return fail(loc, llvm::formatv("spiking_attention input channels of {0} must be a static "
                                   "multiple of 3 * num_heads = {1} (q, k, v of whole heads)",
                                   *input, 3 * heads));
  inferred.push_back(withShape(*input, {input->getDimSize(0), input->getDimSize(1),
                                        channels / 3, input->getDimSize(3)}));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto first = timeMajor(loc, adaptor.getFirst(), 3, "concat operand");
  if (failed(first))
    return failure();
  int64_t axis = adaptor.getAxis(), rank = first->getRank();
  if (axis < 2 || axis >= rank)
    return fail(loc, llvm::formatv("concat axis {0} must be a per-step dim of {1} (2 to {2})",
                                   axis, *first, rank - 1));
  SmallVector<int64_t> shape(first->getShape());
  SmallVector<Value> others{adaptor.getSecond()};
  others.append(adaptor.getRest().begin(), adaptor.getRest().end());
  for (Value other : others) {
    auto type = timeMajor(loc, other, rank, "concat operand");
    if (failed(type))
      return failure();
    if (type->getRank() != rank)
      return fail(loc, llvm::formatv("concat operands {0} and {1} differ in rank", *first,
                                     *type));
    for (int64_t d = 0; d < rank; ++d) {
      int64_t a = shape[d], b = type->getDimSize(d);
      if (d == axis) {
        shape[d] = ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ? ShapedType::kDynamic
                                                                         : a + b;
      } else if (!compatible(a, b)) {
        return fail(loc, llvm::formatv("concat operands {0} and {1} differ outside axis {2}",
                                       *first, *type, axis));
      }
    }
  }
  inferred.push_back(withShape(*first, shape));
  return success();
}

LogicalResult SumTimeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 2, "sum_time input");
  if (failed(input))
    return failure();
  inferred.push_back(withShape(*input, input->getShape().drop_front()));
  return success();
}

LogicalResult MeanTimeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto input = timeMajor(loc, adaptor.getInput(), 2, "mean_time input");
  if (failed(input))
    return failure();
  inferred.push_back(withShape(*input, input->getShape().drop_front()));
  return success();
}

//===----------------------------------------------------------------------===//
// Neurons
//===----------------------------------------------------------------------===//

/// Checks shared by every neuron: a time-major input and a surrogate its parameters fit.
template <typename AnyNeuronOp>
static LogicalResult verifyInputAndSurrogate(AnyNeuronOp op) {
  if (op.getInput().getType().getRank() < 2)
    return op.emitOpError("input must be time-major [T, N, ...], got rank ")
           << op.getInput().getType().getRank();
  StringRef name = stringifySurrogateKind(op.getSurrogate());
  const snn::schema::SurrogateSpec *spec = snn::schema::findSurrogate(name);
  if (!spec)
    return op.emitOpError("surrogate '") << name << "' is not in the surrogate table";
  std::optional<APFloat> beta = op.getBeta();
  if (beta && !spec->hasBeta())
    return op.emitOpError("the ") << name << " surrogate takes no beta";
  float betaValue = beta ? beta->convertToFloat() : spec->beta.defaultValue;
  if (std::string error = snn::schema::surrogateParameterError(
          *spec, op.getAlpha().convertToFloat(), betaValue);
      !error.empty())
    return op.emitOpError(error);
  return success();
}

/// The checks of the named neurons: the above, a finite threshold and reset.
template <typename NamedNeuronOp> static LogicalResult verifyNeuron(NamedNeuronOp op) {
  if (failed(verifyInputAndSurrogate(op)))
    return failure();
  if (!std::isfinite(op.getVThreshold().convertToFloat()))
    return op.emitOpError("v_threshold must be finite");
  if (auto reset = op.getVReset(); reset && !std::isfinite(reset->convertToFloat()))
    return op.emitOpError("v_reset must be finite");
  return success();
}

LogicalResult IFNodeOp::verify() { return verifyNeuron(*this); }

LogicalResult LIFNodeOp::verify() {
  if (failed(verifyNeuron(*this)))
    return failure();
  float tau = getTau().convertToFloat();
  if (!(tau > 1.0f) || !std::isfinite(tau))
    return emitOpError("tau must be > 1, got ") << tau;
  return success();
}

LogicalResult PLIFNodeOp::verify() { return verifyNeuron(*this); }

static std::vector<std::string> stringsOf(ArrayAttr array) {
  std::vector<std::string> out;
  for (Attribute a : array)
    out.push_back(cast<StringAttr>(a).str());
  return out;
}

/// The description attributes snn.neuron and snn.recurrent_neuron share.
template <typename DescribedOp> static snn::schema::NeuronParts partsOf(DescribedOp op) {
  snn::schema::NeuronParts parts;
  parts.states = stringsOf(op.getStates());
  parts.constants = stringsOf(op.getConstants());
  parts.operands = stringsOf(op.getOperandNames());
  parts.charge = stringsOf(op.getCharge());
  parts.update = stringsOf(op.getUpdate());
  parts.fire = op.getFire().value_or("").str();
  parts.reset = op.getReset().str();
  parts.output = op.getOutput().str();
  parts.detachReset = op.getDetachReset();
  return parts;
}

snn::schema::NeuronParts NeuronOp::getParts() { return partsOf(*this); }
snn::schema::NeuronParts RecurrentNeuronOp::getParts() { return partsOf(*this); }

/// The description compiles and each operand fits the input: [] or [C], [T] or [T, C] for
/// one read per step (C the input's dim 2).
template <typename DescribedOp> static LogicalResult verifyDescription(DescribedOp op) {
  if (failed(verifyInputAndSurrogate(op)))
    return failure();
  snn::schema::NeuronDescriptionResult described = snn::schema::describeNeuron(op.getParts());
  if (!described.error.empty())
    return op.emitOpError(described.error);
  if (op.getOperandNames().size() != op.getParams().size())
    return op.emitOpError() << op.getOperandNames().size() << " operand names for "
                            << op.getParams().size() << " operands";
  snn::schema::NeuronCompileResult compiled = snn::schema::compileNeuron(described.description);
  if (!compiled.error.empty())
    return op.emitOpError(compiled.error);
  RankedTensorType input = op.getInput().getType();
  int64_t steps = input.getDimSize(0);
  int64_t channels = input.getRank() > 2 ? input.getDimSize(2) : 1;
  const snn::schema::NeuronDescription &d = described.description;
  for (auto [i, param] : llvm::enumerate(op.getParams())) {
    auto type = cast<RankedTensorType>(param.getType());
    ArrayRef<int64_t> shape = type.getShape();
    bool hasChannels = input.getRank() > 2;
    bool perStep = d.operandPerStep[i];
    bool fits = (type.getRank() == 0 && !perStep) ||
                (type.getRank() == 1 &&
                 (perStep ? shape[0] == steps : hasChannels && shape[0] == channels)) ||
                (hasChannels && type.getRank() == 2 && shape[0] == steps && shape[1] == channels);
    if (!fits)
      return op.emitOpError("operand '")
             << d.operands[i] << "' must be " << (perStep ? "[T] or [T, C]" : "[], [C] or [T, C]")
             << " of the input " << input << " (C its dim 2), got " << type;
  }
  return success();
}

LogicalResult NeuronOp::verify() { return verifyDescription(*this); }

LogicalResult RecurrentNeuronOp::verify() {
  if (failed(verifyDescription(*this)))
    return failure();
  RankedTensorType input = getInput().getType();
  if (input.getRank() != 3)
    return emitOpError("input must be [T, N, F] features, got ") << input;
  int64_t features = input.getDimSize(2);
  RankedTensorType weight = getRecurrentWeight().getType();
  RankedTensorType bias = getRecurrentBias().getType();
  if (weight.getRank() != 2 || weight.getDimSize(0) != features ||
      weight.getDimSize(1) != features)
    return emitOpError("recurrent_weight must be [F, F] for the input ")
           << input << ", got " << weight;
  if (bias.getRank() != 1 || bias.getDimSize(0) != features)
    return emitOpError("recurrent_bias must be [F] for the input ") << input << ", got " << bias;
  snn::schema::NeuronCompileResult compiled = snn::schema::compileNeuron(
      snn::schema::describeNeuron(getParts()).description);
  if (std::string error = snn::schema::recurrentProgramError(compiled.program); !error.empty())
    return emitOpError(error);
  return success();
}

//===----------------------------------------------------------------------===//
// Parallel spiking neurons
//===----------------------------------------------------------------------===//

/// `k` for masked and sliding only, in 1..T; `lambda` for masked only, finite.
static LogicalResult verifyParallelAttributes(ParallelNeuronOp op, int64_t steps) {
  ParallelVariant variant = op.getVariant();
  StringRef name = stringifyParallelVariant(variant);
  IntegerAttr k = op.getKAttr();
  if ((variant == ParallelVariant::psn) == bool(k))
    return k ? op.emitOpError("psn takes no k (its weight is the whole [T, T] matrix)")
             : op.emitOpError(name) << " needs k";
  if (k && (k.getInt() < 1 || k.getInt() > steps))
    return op.emitOpError("k must be in 1..T (T = ") << steps << "), got " << k.getInt();
  std::optional<APFloat> lambda = op.getLambda();
  if ((variant == ParallelVariant::masked) != lambda.has_value())
    return lambda ? op.emitOpError(name) << " takes no lambda (only masked does)"
                  : op.emitOpError("masked needs lambda");
  if (lambda && !std::isfinite(lambda->convertToFloat()))
    return op.emitOpError("lambda must be finite");
  return success();
}

LogicalResult ParallelNeuronOp::verify() {
  if (failed(verifyInputAndSurrogate(*this)))
    return failure();
  int64_t steps = getInput().getType().getDimSize(0);
  if (ShapedType::isDynamic(steps))
    return emitOpError("needs a static number of time steps (input dim 0)");
  if (failed(verifyParallelAttributes(*this, steps)))
    return failure();
  bool sliding = getVariant() == ParallelVariant::sliding;
  // SpikingJelly's shapes: SlidingPSN's k weights and scalar bias, the others' [T, T] and [T, 1].
  SmallVector<int64_t> weightShape =
      sliding ? SmallVector<int64_t>{getKAttr().getInt()} : SmallVector<int64_t>{steps, steps};
  SmallVector<int64_t> biasShape =
      sliding ? SmallVector<int64_t>{} : SmallVector<int64_t>{steps, 1};
  StringRef name = stringifyParallelVariant(getVariant());
  if (getWeight().getType().getShape() != ArrayRef<int64_t>(weightShape))
    return emitOpError() << name << " weight must be " << (sliding ? "[k] = " : "[T, T] = ")
                         << llvm::interleaved_array(weightShape) << ", got "
                         << getWeight().getType();
  if (getBias().getType().getShape() != ArrayRef<int64_t>(biasShape))
    return emitOpError() << name << " bias must be "
                         << (sliding ? "a scalar" : "[T, 1] = [" + std::to_string(steps) + ", 1]")
                         << ", got " << getBias().getType();
  return success();
}

#define GET_OP_CLASSES
#include "snn/Dialect/SNN/IR/SNNOps.cpp.inc"

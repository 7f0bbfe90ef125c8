#ifndef SNN_CONVERSION_PASSES_TD
#define SNN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// ONNXToSNN
//===----------------------------------------------------------------------===//

def LegalizeONNX : Pass<"snn-legalize-onnx", "::mlir::func::FuncOp"> {
  let summary = "Rewrite imported ONNX nodes into time-distributed snn ops and neurons";
  let description = [{
    Recognises SpikingJelly's folding of stateless layers,
    `[T, N, ...] -Reshape-> [T*N, ...] -op...-> [T*N, ...] -Reshape-> [T, N, ...]`,
    and replaces the whole chain with time-distributed snn ops on the time-major tensor.
    Neuron nodes of the `spikemesh` domain become snn neuron ops, `Add`/`Mul` of time-major
    tensors become `snn.add`/`snn.mul`, and `ReduceMean(axes=[0])` becomes `snn.mean_time`.
    Any ONNX node left afterwards is reported as unsupported, naming the node and its op type.
    The pass fails if the rewrite patterns have not converged within `max-iterations`.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", "10",
           "Iterations of the greedy rewrite driver before the pass gives up (fails)">,
  ];
  let dependentDialects = ["::snn::SNNDialect", "::mlir::arith::ArithDialect"];
}

#endif // SNN_CONVERSION_PASSES_TD

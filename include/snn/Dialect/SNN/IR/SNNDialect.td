#ifndef SNN_DIALECT_TD
#define SNN_DIALECT_TD

include "mlir/IR/OpBase.td"

def SNN_Dialect : Dialect {
  let name = "snn";
  let summary = "Multi-step spiking neural networks";
  let description = [{
    Ops of spiking neural networks in SpikingJelly's multi-step form. Activations are time-major
    tensors `[T, N, ...]`. Stateless layers are time-distributed (applied to every step on its
    own); neurons carry a membrane potential across the T steps of one input sequence.
  }];
  let cppNamespace = "::snn";
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class SNN_Op<string mnemonic, list<Trait> traits = []> :
    Op<SNN_Dialect, mnemonic, traits>;

#endif // SNN_DIALECT_TD

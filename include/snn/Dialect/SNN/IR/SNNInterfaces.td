#ifndef SNN_INTERFACES_TD
#define SNN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def StatefulNeuronOpInterface : OpInterface<"StatefulNeuronOpInterface"> {
  let description = [{
    A neuron that keeps a membrane potential per element of one time step and carries it across
    the time dimension. Partitioning passes use it to keep the state sharded like its input.
  }];
  let cppNamespace = "::snn";
  let methods = [
    InterfaceMethod<"The time-major input [T, N, ...].", "::mlir::Value", "getNeuronInput">,
    InterfaceMethod<"Which dimension of the input is time.", "int64_t", "getTimeDim", (ins),
      [{}], [{ return 0; }]>,
    InterfaceMethod<"Shape of the state: the input shape without the time dimension.",
      "::mlir::RankedTensorType", "getStateType", (ins), [{}], [{
        auto type = ::llvm::cast<::mlir::RankedTensorType>($_op.getNeuronInput().getType());
        return ::mlir::RankedTensorType::get(type.getShape().drop_front(),
                                             type.getElementType());
      }]>,
  ];
}

def TimeDistributedOpTrait : NativeOpTrait<"TimeDistributed"> {
  let cppNamespace = "::snn";
}

#endif // SNN_INTERFACES_TD

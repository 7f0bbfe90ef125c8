#ifndef SNN_OPS_TD
#define SNN_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "snn/Dialect/SNN/IR/SNNDialect.td"
include "snn/Dialect/SNN/IR/SNNInterfaces.td"
include "snn/Dialect/SNN/IR/SNNAttributes.td"

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// The case names are the `surrogate` values of include/snn/Schema/Surrogates.h
// (the neuron verifier looks each one up there).
def SNN_SurrogateKind : I32EnumAttr<"SurrogateKind", "surrogate gradient function", [
    I32EnumAttrCase<"sigmoid", 0>,
    I32EnumAttrCase<"atan", 1>,
    I32EnumAttrCase<"piecewise_quadratic", 2>,
    I32EnumAttrCase<"piecewise_exp", 3>,
    I32EnumAttrCase<"soft_sign", 4>,
    I32EnumAttrCase<"super_spike", 5>,
    I32EnumAttrCase<"nonzero_sign_log_abs", 6>,
    I32EnumAttrCase<"erf", 7>,
    I32EnumAttrCase<"piecewise_leaky_relu", 8>,
    I32EnumAttrCase<"squarewave_fourier_series", 9>,
    I32EnumAttrCase<"s2nn", 10>,
    I32EnumAttrCase<"q_pseudo_spike", 11>,
    I32EnumAttrCase<"leaky_k_relu", 12>,
    I32EnumAttrCase<"fake_numerical_gradient", 13>,
    I32EnumAttrCase<"log_tailed_relu", 14>,
    I32EnumAttrCase<"rect", 15>]> {
  let cppNamespace = "::snn";
  let genSpecializedAttr = 0;
}
def SNN_SurrogateAttr : EnumAttr<SNN_Dialect, SNN_SurrogateKind, "surrogate">;

// The case names are the `variant` values of the ONNX ParallelSpikingNeuron node
// (include/snn/Schema/OnnxProfile.h): SpikingJelly's PSN, MaskedPSN and SlidingPSN.
def SNN_ParallelVariant : I32EnumAttr<"ParallelVariant", "parallel spiking neuron class", [
    I32EnumAttrCase<"psn", 0>,
    I32EnumAttrCase<"masked", 1>,
    I32EnumAttrCase<"sliding", 2>]> {
  let cppNamespace = "::snn";
  let genSpecializedAttr = 0;
}
def SNN_ParallelVariantAttr : EnumAttr<SNN_Dialect, SNN_ParallelVariant, "parallel_variant">;

def SNN_F32Tensor : RankedTensorOf<[F32]>;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def SNN_ParameterOp : SNN_Op<"parameter", [Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "A named weight or buffer of the model";
  let description = [{
    A trainable weight (or, with `buffer`, a non-trainable state such as BatchNorm running
    statistics), named by its PyTorch `state_dict` key. The value is the initial value.
    `frozen` marks a weight PyTorch does not train (`requires_grad=False`): it is still a
    weight of the model, but no optimizer step may change it.
    ```mlir
    %w = snn.parameter "fc.0.weight" = dense<0.5> : tensor<10x16xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, ElementsAttr:$value, UnitAttr:$buffer, UnitAttr:$frozen);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$name (`buffer` $buffer^)? (`frozen` $frozen^)? `=` $value attr-dict";
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::ElementsAttr":$value, "bool":$buffer), [{
      build($_builder, $_state, value.getType(), name, value, buffer, /*frozen=*/false);
    }]>];
}

//===----------------------------------------------------------------------===//
// Generic ONNX node (import stage, before legalization)
//===----------------------------------------------------------------------===//

def SNN_ONNXNodeOp : SNN_Op<"onnx_node"> {
  let summary = "An ONNX node not yet legalized to snn ops";
  let description = [{
    The importer turns every ONNX node into one of these, keeping its op type, domain and
    attributes. `--snn-legalize-onnx` rewrites them into snn ops; one that remains is an
    unsupported op.
  }];
  let arguments = (ins StrAttr:$op_type, StrAttr:$domain, DictionaryAttr:$onnx_attrs,
                       Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $op_type `(` $inputs `)` `domain` $domain `attrs` $onnx_attrs attr-dict
    `:` functional-type($inputs, $outputs)
  }];
}

//===----------------------------------------------------------------------===//
// Time-distributed layers: each is applied to every time step independently.
//===----------------------------------------------------------------------===//

class SNN_LayerOp<string mnemonic, list<Trait> traits = []> :
    SNN_Op<mnemonic, !listconcat(traits, [TimeDistributedOpTrait, InferTypeOpAdaptor])>;

def SNN_LinearOp : SNN_LayerOp<"linear", [Pure]> {
  let summary = "y = x W^T + b on the last dimension of every step";
  let arguments = (ins SNN_F32Tensor:$input, SNN_F32Tensor:$weight,
                       Optional<SNN_F32Tensor>:$bias);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def SNN_Conv2dOp : SNN_LayerOp<"conv2d", [Pure]> {
  let summary = "2-D convolution of every step ([T, N, C, H, W], PyTorch weight layout)";
  let arguments = (ins SNN_F32Tensor:$input, SNN_F32Tensor:$weight,
                       Optional<SNN_F32Tensor>:$bias,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def SNN_BatchNormOp : SNN_LayerOp<"batch_norm", [Pure]> {
  let summary = "Batch normalisation over channel dim 2 of [T, N, C, ...]";
  let description = [{
    In training the statistics are taken over T*N*spatial (SpikingJelly folds T into the batch).
    `momentum` is PyTorch's (weight of the new statistic).
  }];
  let arguments = (ins SNN_F32Tensor:$input, SNN_F32Tensor:$weight, SNN_F32Tensor:$bias,
                       SNN_F32Tensor:$running_mean, SNN_F32Tensor:$running_var,
                       F32Attr:$eps, F32Attr:$momentum);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `,` $running_mean `,` $running_var attr-dict
    `:` functional-type(operands, results)
  }];
}

class SNN_Pool2dOp<string mnemonic, dag extraArgs> : SNN_LayerOp<mnemonic, [Pure]> {
  let arguments = !con((ins SNN_F32Tensor:$input, DenseI64ArrayAttr:$kernel_size,
                            DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                            BoolAttr:$ceil_mode), extraArgs);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def SNN_MaxPool2dOp : SNN_Pool2dOp<"max_pool2d", (ins DenseI64ArrayAttr:$dilation)> {
  let summary = "2-D max pooling of every step";
}

def SNN_AvgPool2dOp : SNN_Pool2dOp<"avg_pool2d", (ins BoolAttr:$count_include_pad)> {
  let summary = "2-D average pooling of every step";
}

def SNN_AdaptiveAvgPool2dOp : SNN_LayerOp<"adaptive_avg_pool2d", [Pure]> {
  let summary = "Adaptive 2-D average pooling of every step to `output_size`";
  let arguments = (ins SNN_F32Tensor:$input, DenseI64ArrayAttr:$output_size);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def SNN_GroupNormOp : SNN_LayerOp<"group_norm", [Pure]> {
  let summary = "Group normalisation over channel dim 2 of [T, N, C, ...]";
  let description = [{
    PyTorch's group_norm applied to every step: each sample's C channels are split into
    `num_groups` groups and normalised with that group's mean and biased variance (the same in
    training and inference; no running statistics), then scaled and shifted per channel by
    `weight` and `bias` [C].
  }];
  let arguments = (ins SNN_F32Tensor:$input, SNN_F32Tensor:$weight, SNN_F32Tensor:$bias,
                       I64Attr:$num_groups, F32Attr:$eps);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` functional-type(operands, results)
  }];
}

def SNN_ReshapeOp : SNN_LayerOp<"reshape", [Pure]> {
  let summary = "[T, N, d1, ..., dk] -> [T, N, shape...] (the same elements per step)";
  let description = [{
    A per-step reshape: every step's d1*...*dk values, in order, as a tensor of dims `shape`
    (e.g. a VotingLayer's [F] features as a [1, 1, F] plane to average-pool).
  }];
  let arguments = (ins SNN_F32Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def SNN_FlattenOp : SNN_LayerOp<"flatten", [Pure]> {
  let summary = "[T, N, d1, ..., dk] -> [T, N, d1*...*dk]";
  let arguments = (ins SNN_F32Tensor:$input);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def SNN_DropoutOp : SNN_LayerOp<"dropout"> {
  let summary = "Dropout with probability `p` in training, identity in inference";
  let arguments = (ins SNN_F32Tensor:$input, F32Attr:$p);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def SNN_ReduceMeanOp : SNN_LayerOp<"reduce_mean", [Pure]> {
  let summary = "Mean of every step over per-step dims `axes` (each >= 2)";
  let description = [{
    `x.mean(axes, keepdim)` of a time-major tensor over dims after T and N (a Spikformer's
    mean over its tokens: `[T, N, C, L]` over axis 3 gives `[T, N, C]`). `axes` are
    ascending; `keepdims` keeps each reduced dim with size 1.
    ```mlir
    %m = snn.reduce_mean %x {axes = array<i64: 3>, keepdims = false}
        : (tensor<4x?x64x16xf32>) -> tensor<4x?x64xf32>
    ```
  }];
  let arguments = (ins SNN_F32Tensor:$input, DenseI64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def SNN_SpikingAttentionOp : SNN_LayerOp<"spiking_attention", [Pure]> {
  let summary = "Spiking self-attention of every step over heads of a fused q, k, v tensor";
  let description = [{
    The attention product of SpikingJelly's SpikingSelfAttention (no softmax). The input is
    the spikes of the fused qkv projection, `[T, N, 3*C, L]`, its channels laid out as
    `(3, num_heads, D)` with `D = C / num_heads`: q, k and v are its first, second and third
    thirds, each head a block of D channels. Per step and head,
    `out = ((v k^T) q) * scale` over `[D, L]` matrices; the result is `[T, N, C, L]` with the
    heads in order. Tensor parallelism splits it by whole heads: before the split, the
    partition relays the fused projection's channels out as `(head_groups, 3, H / head_groups,
    D)` (each group the q, k and v of the heads one rank computes), so that a contiguous
    split of the channels gives every rank whole heads; a rank's own op has `head_groups = 1`.
    ```mlir
    %a = snn.spiking_attention %qkv {num_heads = 4 : i64, scale = 1.250000e-01 : f32}
        : (tensor<4x?x192x16xf32>) -> tensor<4x?x64x16xf32>
    ```
  }];
  let arguments = (ins SNN_F32Tensor:$input, I64Attr:$num_heads, F32Attr:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$head_groups);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

class SNN_ElementwiseOp<string mnemonic> : SNN_Op<mnemonic,
    [Pure, Commutative, TimeDistributedOpTrait, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let arguments = (ins SNN_F32Tensor:$lhs, SNN_F32Tensor:$rhs);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def SNN_AddOp : SNN_ElementwiseOp<"add"> {
  let summary = "Elementwise sum of two same-shape tensors (SEW-ResNet ADD connect)";
}

def SNN_MulOp : SNN_ElementwiseOp<"mul"> {
  let summary = "Elementwise product of two same-shape tensors";
}

def SNN_BiasAddOp : SNN_Op<"bias_add", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Adds a per-feature bias along dimension `axis`";
  let description = [{
    `result = input + bias` broadcast along `axis` (`bias` has `input`'s size there). A
    tensor-parallel partition adds a reduction-split layer's bias once, after the all-reduce
    of the partial sums, so every rank holds the whole bias and the same gradient for it.
    ```mlir
    %y = snn.bias_add %sum, %b {axis = 2 : i64} : tensor<4x?x8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins SNN_F32Tensor:$input, SNN_F32Tensor:$bias, I64Attr:$axis);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($result) `,` type($bias)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives of a partitioned (per-rank) program
//===----------------------------------------------------------------------===//

// Not Pure: each is a step of a protocol every member of the group must take in the same
// order, so no rewrite may merge, drop or reorder one on its own.
class SNN_CollectiveOp<string mnemonic, dag extraArgs> : SNN_Op<mnemonic> {
  let arguments = !con((ins SNN_F32Tensor:$input, StrAttr:$mesh_axis), extraArgs);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input `over` $mesh_axis attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def SNN_AllReduceOp : SNN_CollectiveOp<"all_reduce", (ins)> {
  let summary = "Sum over the members of a mesh axis; the gradient passes through";
  let description = [{
    Every member gets the elementwise sum of the members' `input`s. In the backward pass
    the (replicated) gradient is passed on unchanged: the `g` of a Megatron pair.
  }];
}

def SNN_AllGatherOp : SNN_CollectiveOp<"all_gather", (ins I64Attr:$axis)> {
  let summary = "Concatenation of the members' tensors along `axis`";
  let description = [{
    Members are concatenated in the order of their coordinate on the mesh axis. In the
    backward pass each member keeps its own part of the (replicated) gradient.
  }];
}

def SNN_AllSliceOp : SNN_CollectiveOp<"all_slice", (ins I64Attr:$axis)> {
  let summary = "This member's part of a replicated tensor, split evenly along `axis`";
  let description = [{
    No communication in the forward pass; in the backward pass the members' gradient parts
    are all-gathered. Applied to an `snn.parameter`, the artifact stores each rank's part
    as that rank's parameter instead.
  }];
}

def SNN_BackwardAllReduceOp : SNN_CollectiveOp<"backward_all_reduce", (ins)> {
  let summary = "Identity; the gradient is summed over the members of a mesh axis";
  let description = [{
    Marks where a replicated value enters a computation that each member does on its own
    part (a column-split layer, a neuron parameter read by split activations): each member's
    gradient is a partial sum, and the sum is the gradient. The `f` of a Megatron pair.
  }];
}

//===----------------------------------------------------------------------===//
// Pipeline stage boundaries
//===----------------------------------------------------------------------===//

// Not Pure: a send or receive is one step of the protocol between two pipeline stages;
// no rewrite may drop, merge or reorder one. The runtime's schedule moves the tensors (and
// their gradients, the other way) between the ranks that hold the two stages.
def SNN_SendOp : SNN_Op<"send"> {
  let summary = "Hands a boundary tensor to logical pipeline stage `peer` as its `slot`";
  let description = [{
    Appears in the function of one logical pipeline stage (`@stage_<k>`, attribute
    `snn.pp_stage = k`). Each microbatch's forward sends the value, `[T, n, ...]` with all
    T steps; the backward pass receives its gradient from `peer`. The matching
    `snn.recv` in stage `peer` has the same `slot` and type.
    ```mlir
    snn.send %h to stage 1 slot 0 : tensor<4x?x128xf32>
    ```
  }];
  let arguments = (ins SNN_F32Tensor:$input, I64Attr:$peer, I64Attr:$slot);
  let assemblyFormat = "$input `to` `stage` $peer `slot` $slot attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def SNN_RecvOp : SNN_Op<"recv"> {
  let summary = "The boundary tensor `slot` that logical pipeline stage `peer` sends";
  let description = [{
    The counterpart of `snn.send`: the value computed by stage `peer`; in the backward pass
    its gradient goes back to `peer`. The dynamic batch dimension is the microbatch size.
    ```mlir
    %h = snn.recv from stage 0 slot 0 : tensor<4x?x128xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$slot);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "`from` `stage` $peer `slot` $slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def SNN_SumTimeOp : SNN_Op<"sum_time", [Pure, InferTypeOpAdaptor]> {
  let summary = "Readout: sum over the time dimension, [T, N, ...] -> [N, ...]";
  let arguments = (ins SNN_F32Tensor:$input);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def SNN_ConcatOp : SNN_Op<"concat", [Pure, TimeDistributedOpTrait, InferTypeOpAdaptor]> {
  let summary = "Concatenation of time-major tensors along a per-step dim `axis` (>= 2)";
  let description = [{
    torch.cat of [T, N, ...] tensors along a dim after T and N (channels of a conv net: 2).
    Every other dim must agree.
  }];
  let arguments = (ins SNN_F32Tensor:$first, SNN_F32Tensor:$second,
                       Variadic<SNN_F32Tensor>:$rest, I64Attr:$axis);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = [{
    $first `,` $second (`,` $rest^)? attr-dict `:` functional-type(operands, results)
  }];
}

def SNN_MeanTimeOp : SNN_Op<"mean_time", [Pure, InferTypeOpAdaptor]> {
  let summary = "Readout: mean over the time dimension, [T, N, ...] -> [N, ...]";
  let arguments = (ins SNN_F32Tensor:$input);
  let results = (outs SNN_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Stateful neurons
//===----------------------------------------------------------------------===//

class SNN_NeuronOp<string mnemonic, dag extraArgs> : SNN_Op<mnemonic, [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<StatefulNeuronOpInterface, ["getNeuronInput"]>]> {
  let arguments = !con((ins SNN_F32Tensor:$input), extraArgs,
                       (ins F32Attr:$v_threshold, OptionalAttr<F32Attr>:$v_reset,
                            BoolAttr:$detach_reset, SNN_SurrogateAttr:$surrogate,
                            F32Attr:$alpha, OptionalAttr<F32Attr>:$beta));
  let results = (outs SNN_F32Tensor:$result);
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::Value $cppClass::getNeuronInput() { return getInput(); }
  }];
}

def SNN_IFNodeOp : SNN_NeuronOp<"if_node", (ins)> {
  let summary = "Integrate-and-fire neuron over T steps: H = V + X";
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def SNN_LIFNodeOp : SNN_NeuronOp<"lif_node", (ins F32Attr:$tau, BoolAttr:$decay_input)> {
  let summary = "Leaky integrate-and-fire neuron over T steps";
  let description = [{
    decay_input: H = V + (X - (V - V_reset)) / tau; otherwise H = V - (V - V_reset) / tau + X.
    `tau` must be > 1.
  }];
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def SNN_PLIFNodeOp : SNN_NeuronOp<"plif_node",
    (ins 0DTensorOf<[F32]>:$w, BoolAttr:$decay_input)> {
  let summary = "Parametric LIF neuron: 1/tau = sigmoid(w), w a learnable scalar";
  let assemblyFormat = "$input `,` $w attr-dict `:` type($result) `,` type($w)";
}

def SNN_NeuronOp : SNN_Op<"neuron", [Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<StatefulNeuronOpInterface, ["getNeuronInput"]>]> {
  let summary = "A neuron described by its parts: states, charge, fire, reset, update, output";
  let description = [{
    Any neuron of docs/neuron-programs.md. `states` and `constants` are "name=value" strings
    (the membrane first), `operand_names` names the tensor operands after the input (learnable
    parameters: [], per channel [C], per step and channel [T, C], or per step [T] when named
    `name[t]`), `charge` and `update`
    are statements of the neuron language, `fire` the distance to the threshold (absent for a
    neuron that does not spike), `reset` hard, soft or none, `output` the expression each step
    outputs. The verifier compiles the description. Canonicalization turns a description that
    is IF, LIF or ParametricLIF (the same step program with constants for their parameters)
    into snn.if_node, snn.lif_node or snn.plif_node.
  }];
  let arguments = (ins SNN_F32Tensor:$input, Variadic<SNN_F32Tensor>:$params,
                       StrArrayAttr:$states, StrArrayAttr:$constants,
                       StrArrayAttr:$operand_names, StrArrayAttr:$charge,
                       OptionalAttr<StrAttr>:$fire, StrAttr:$reset, BoolAttr:$detach_reset,
                       StrArrayAttr:$update, StrAttr:$output, SNN_SurrogateAttr:$surrogate,
                       F32Attr:$alpha, OptionalAttr<F32Attr>:$beta);
  let results = (outs SNN_F32Tensor:$result);
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let assemblyFormat = [{
    $input (`(` $params^ `:` type($params) `)`)? attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// The description's attributes as schema::describeNeuron reads them.
    ::snn::schema::NeuronParts getParts();
  }];
  let extraClassDefinition = [{
    ::mlir::Value $cppClass::getNeuronInput() { return getInput(); }
  }];
}

def SNN_RecurrentNeuronOp : SNN_Op<"recurrent_neuron", [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<StatefulNeuronOpInterface, ["getNeuronInput"]>]> {
  let summary = "A described neuron whose output feeds back into its input through a Linear";
  let description = [{
    The neuron of `snn.neuron` (the same description attributes) on [T, N, F] features, with
    a recurrent Linear: the input of step t is `input[t] + output[t-1] W^T + b`, `output[-1]`
    zero (so step 0 receives the bias). `recurrent_weight` is [F, F], `recurrent_bias` [F]
    (a frozen zero for a feedback without bias); `params` are the description's operands.
    The feedback is one step late: the neuron's output at t reaches its input at t + 1.
    The steps run in order, so only the batch is ever split; the op is one unit that no
    pipeline cut divides.
  }];
  let arguments = (ins SNN_F32Tensor:$input, SNN_F32Tensor:$recurrent_weight,
                       SNN_F32Tensor:$recurrent_bias, Variadic<SNN_F32Tensor>:$params,
                       StrArrayAttr:$states, StrArrayAttr:$constants,
                       StrArrayAttr:$operand_names, StrArrayAttr:$charge,
                       OptionalAttr<StrAttr>:$fire, StrAttr:$reset, BoolAttr:$detach_reset,
                       StrArrayAttr:$update, StrAttr:$output, SNN_SurrogateAttr:$surrogate,
                       F32Attr:$alpha, OptionalAttr<F32Attr>:$beta);
  let results = (outs SNN_F32Tensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $recurrent_weight `,` $recurrent_bias (`(` $params^ `:` type($params) `)`)?
    attr-dict `:` type($result) `,` type($recurrent_weight) `,` type($recurrent_bias)
  }];
  let extraClassDeclaration = [{
    /// The description's attributes as schema::describeNeuron reads them.
    ::snn::schema::NeuronParts getParts();
  }];
  let extraClassDefinition = [{
    ::mlir::Value $cppClass::getNeuronInput() { return getInput(); }
  }];
}

//===----------------------------------------------------------------------===//
// Parallel spiking neurons
//===----------------------------------------------------------------------===//

def SNN_ParallelNeuronOp : SNN_Op<"parallel_neuron", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "SpikingJelly's PSN, MaskedPSN, SlidingPSN: S = Heaviside(W X + B) over T";
  let description = [{
    Mixes the time-major input [T, N, ...] over its steps with a [T, T] matrix W and fires
    where H = W X + B >= 0 (X viewed as [T, N * ...]; docs/semantics.md). It keeps no state
    from step to step: every output step reads every input step at once.
    - `psn`: W = `weight` [T, T], B = `bias` [T, 1].
    - `masked`: W = `weight` [T, T] times the mask of the last `k` steps (1 where
      0 <= i - j < k), mixed with ones by `lambda` while it is below 1; `bias` [T, 1].
    - `sliding`: W[i][j] = weight[k - 1 - (i - j)] for 0 <= i - j < k, else 0, from `weight`
      [k]; `bias` a scalar.
    The surrogate gives the spike's gradient in the backward.
  }];
  let arguments = (ins SNN_F32Tensor:$input, SNN_F32Tensor:$weight, SNN_F32Tensor:$bias,
                       SNN_ParallelVariantAttr:$variant, OptionalAttr<I64Attr>:$k,
                       OptionalAttr<F32Attr>:$lambda, SNN_SurrogateAttr:$surrogate,
                       F32Attr:$alpha, OptionalAttr<F32Attr>:$beta);
  let results = (outs SNN_F32Tensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($result) `,` type($weight) `,` type($bias)
  }];
}

#endif // SNN_OPS_TD

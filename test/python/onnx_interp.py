"""A small interpreter for the ONNX profile of docs/onnx-profile.md (test oracle).
Layers use torch.nn.functional; spikemesh neurons use the NumPy oracle in snn_numpy."""
import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

import snn_numpy
from snnexport.export.names import DOMAIN, SPIKING_ATTENTION


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _sym_pads(pads):
    assert pads[:2] == pads[2:], f"asymmetric pads {pads}"
    return tuple(pads[:2])


def _neuron(node, a, ins):
    x = ins[0].numpy()
    w = float(ins[1]) if node.op_type == "ParametricLIFNode" else None
    s, _, _ = snn_numpy.forward(
        node.op_type, x, v_threshold=a["v_threshold"], v_reset=a.get("v_reset"),
        tau=a.get("tau", 2.0), decay_input=bool(a.get("decay_input", 1)), w=w)
    return torch.from_numpy(s)


def _spiking_attention(a, qkv):
    """The profile's SpikingAttention, associated the other way: v (k^T q) per head. Every
    partial sum of 0/1 spikes is a small integer, exact in float32, so this equals the
    exporter's ((v k^T) q) bit for bit."""
    t, n, c3, length = qkv.shape
    heads = a["num_heads"]
    assert c3 % (3 * heads) == 0, (c3, heads)
    parts = qkv.reshape(t, n, 3, heads, c3 // (3 * heads), length)
    q, k, v = parts[:, :, 0], parts[:, :, 1], parts[:, :, 2]
    kq = torch.einsum("tnhel,tnhem->tnhlm", k, q)  # k^T q: [L, L] per head
    out = torch.einsum("tnhdl,tnhlm->tnhdm", v, kq) * a["scale"]
    return out.reshape(t, n, c3 // 3, length)


def _op(node, a, ins):
    op = node.op_type
    if node.domain == DOMAIN and op == SPIKING_ATTENTION:
        return _spiking_attention(a, ins[0])
    if node.domain == DOMAIN:
        return _neuron(node, a, ins)
    x = ins[0]
    if op == "Reshape":
        return x.reshape([int(d) for d in ins[1]])
    if op == "Gemm":
        assert a.get("transB") == 1 and a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0
        return F.linear(x, ins[1], ins[2] if len(ins) > 2 else None)
    if op == "Conv":
        return F.conv2d(x, ins[1], ins[2] if len(ins) > 2 else None, tuple(a["strides"]),
                        _sym_pads(a["pads"]), tuple(a["dilations"]), a["group"])
    if op == "BatchNormalization":
        return F.batch_norm(x, ins[3], ins[4], ins[1], ins[2], False, 0.0, a["epsilon"])
    if op == "MaxPool":
        return F.max_pool2d(x, a["kernel_shape"], a["strides"], _sym_pads(a["pads"]),
                            a["dilations"], bool(a["ceil_mode"]))
    if op == "AveragePool":
        return F.avg_pool2d(x, a["kernel_shape"], a["strides"], _sym_pads(a["pads"]),
                            bool(a["ceil_mode"]), bool(a["count_include_pad"]))
    if op == "GlobalAveragePool":
        return x.mean((2, 3), keepdim=True)
    if op == "Flatten":
        return x.reshape(int(np.prod(x.shape[:a["axis"]])), -1)
    if op in ("Dropout", "Identity"):
        return x
    if op == "Add":
        return x + ins[1]
    if op == "Mul":
        return x * ins[1]
    if op == "ReduceMean":
        return x.mean(tuple(a["axes"]), keepdim=bool(a["keepdims"]))
    raise NotImplementedError(op)


def run(model: onnx.ModelProto, x: np.ndarray, values=None) -> np.ndarray:
    """The graph's output for input `x`; `values`, a dict, also receives every node's output
    (by value name) as a NumPy array."""
    env = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
           for i in model.graph.initializer}
    env[model.graph.input[0].name] = torch.from_numpy(np.asarray(x, np.float32))
    with torch.no_grad():
        for node in model.graph.node:
            out = _op(node, _attrs(node), [env[i] for i in node.input])
            env[node.output[0]] = out
            if values is not None:
                values[node.output[0]] = out.numpy()
    return env[model.graph.output[0].name].numpy()

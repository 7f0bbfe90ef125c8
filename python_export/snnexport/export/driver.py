"""The entry points: `build_onnx` (model -> ModelProto), `check` and `export_onnx` (checked,
written atomically). Copies the model, traces it, translates the graph and assembles the file
(input and output, value shapes, opsets, the metadata: frozen parameters, an input the model
repeats over T)."""
from __future__ import annotations

import copy
import os
from typing import List, Union

import onnx
import torch
from onnx import helper
from torch import nn

from ..functional import reset_net
from .emit_tensor import direct_encoding_steps
from .graph import Graph, value_info
from .names import (DOMAIN, FROZEN_KEY, INPUT_NAME, INPUT_REPEATED_OVER_TIME_KEY, IR_VERSION,
                    OPSET, OUTPUT_NAME)
from .tracer import prepare, run_example, trace
from .translator import Translator

PathLike = Union[str, "os.PathLike[str]"]


def _detached_copy(model: nn.Module) -> nn.Module:
    # deepcopy fails on non-leaf tensors (e.g. a neuron's v after a training forward).
    memo = {}
    for m in model.modules():
        for v in vars(m).values():
            if isinstance(v, torch.Tensor) and v.grad_fn is not None:
                memo[id(v)] = v.detach()
    return copy.deepcopy(model, memo)


def build_onnx(model: nn.Module, example_input: torch.Tensor) -> onnx.ModelProto:
    """Returns the ONNX ModelProto for `model` (not checked, not written)."""
    if not isinstance(example_input, torch.Tensor) or example_input.dim() < 2:
        raise ValueError("example_input must be a tensor [T, N, ...] (or [N, ...] for a model "
                         "that repeats its input over T itself)")
    if example_input.dtype != torch.float32:
        raise ValueError(f"example_input must be float32, got {example_input.dtype}")
    net = _detached_copy(model).eval()
    prepare(net)
    reset_net(net)
    gm, prefix = trace(net, example_input)
    env = run_example(gm, example_input)
    placeholder = next(n for n in gm.graph.nodes if n.op == "placeholder")
    direct_T = direct_encoding_steps(placeholder, env)
    # A model that repeats its [N, ...] input over T takes the repeated [T, N, ...] tensor in
    # the artifact: exactly what `snn-run --repeat-time T` makes of a static batch.
    T = direct_T or int(example_input.shape[0])
    step_dims = list(example_input.shape[1 if direct_T else 2:])
    g = Graph(T, prefix)
    out, out_tm = Translator(gm, g, env, placeholder, direct_T is None).run()
    out_node = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    out_shape = list(env[out_node].shape)
    out_shape = [T, "N"] + out_shape[2:] if out_tm else ["N"] + out_shape[1:]
    if out == INPUT_NAME:
        raise ValueError("the model returns its input unchanged; nothing to export")
    for node in g.nodes:  # the returned value takes the graph output's name
        node.input[:] = [OUTPUT_NAME if i == out else i for i in node.input]
        node.output[:] = [OUTPUT_NAME if o == out else o for o in node.output]
    g.infos.pop(out, None)
    graph = helper.make_graph(
        g.nodes, type(model).__name__,
        [value_info(INPUT_NAME, [T, "N"] + step_dims)],
        [value_info(OUTPUT_NAME, out_shape)],
        initializer=list(g.inits.values()),
        value_info=[value_info(k, s) for k, s in g.infos.items()])
    onnx_model = helper.make_model(
        graph, ir_version=IR_VERSION, producer_name="snnexport",
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(DOMAIN, 1)])
    props = {}
    frozen = _frozen_names(model, g, prefix)
    if frozen:
        props[FROZEN_KEY] = ",".join(frozen)
    if direct_T:  # the runtime may then take the model's own [N, ...] input and repeat it
        props[INPUT_REPEATED_OVER_TIME_KEY] = "true"
    if props:
        helper.set_model_props(onnx_model, props)
    return onnx_model


def _frozen_names(model: nn.Module, g: Graph, prefix: str) -> List[str]:
    """The written initializers of parameters with requires_grad=False (PyTorch never
    trains them; the artifact must not either)."""
    names = [g.name(prefix + k) if prefix else k
             for k, p in model.named_parameters() if not p.requires_grad]
    return sorted(n for n in names if n in g.inits)


def check(onnx_model: onnx.ModelProto) -> None:
    """onnx.checker (full check) plus strict shape inference; raises on any problem."""
    onnx.checker.check_model(onnx_model, full_check=True)
    onnx.shape_inference.infer_shapes(onnx_model, check_type=True, strict_mode=True)


def export_onnx(model: nn.Module, example_input: torch.Tensor,
                path: PathLike) -> onnx.ModelProto:
    """Writes `model` run on `example_input` [T, N, ...] to `path` as ONNX (profile in
    docs/onnx-profile.md). N is dynamic in the file, T fixed. The model is not modified.
    Raises ValueError for anything outside the profile. Returns the onnx.ModelProto."""
    onnx_model = build_onnx(model, example_input)
    check(onnx_model)
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"  # write-then-rename: never a partial file at `path`
    try:
        with open(tmp, "wb") as f:
            f.write(onnx_model.SerializeToString())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return onnx_model

"""``spikemesh.analyze``: the stateful neurons and tensor-parallel candidates of a model.

As the reference does, the names come from the PyTorch module tree (``named_modules``), so they
are the user's own module names. With ``example_input`` the model is also exported and run
through the compiler's analysis, which adds what needs shapes: the time steps, parameter and
activation sizes and the forward FLOPs (``model_stats``), and the model is ready to plan with
the cost model.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from snnexport import layer as _layer
from snnexport.functional import _is_stateful

from .compiler import Workspace, compile_onnx, export_model

_LINEAR = (nn.Linear,)
_UNSPLITTABLE = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


@dataclasses.dataclass
class SNNDistributedAnalysis:
    """What ``analyze`` found (the reference's fields, plus the compiler's when shapes are known).

    memory_module_names: every stateful neuron in the model (the whole model is searched).
    tensor_parallel_candidate_names: Linear layers under the roots (convolutions too with
        ``experimental_conv_tp``).
    unsupported_tensor_parallel_names: layers under the roots that cannot be split.
    tensor_parallel_roots: the roots searched (empty: the whole model).
    notes: findings in words.
    model_stats: with ``example_input``: ``time_steps``, ``param_bytes``, ``buffer_bytes``,
        ``forward_flops``, ``activation_bytes``, ``pipeline_units`` from the compiler.
    """

    memory_module_names: List[str]
    tensor_parallel_candidate_names: List[str]
    unsupported_tensor_parallel_names: List[str]
    tensor_parallel_roots: List[str]
    notes: List[str]
    model_family: Optional[str] = None
    experimental_conv_tp: bool = False
    model_stats: Dict[str, float] = dataclasses.field(default_factory=dict)
    model: Optional[nn.Module] = dataclasses.field(default=None, repr=False, compare=False)
    example_input: Optional[torch.Tensor] = dataclasses.field(default=None, repr=False,
                                                               compare=False)
    onnx_path: Optional[str] = dataclasses.field(default=None, repr=False, compare=False)
    workspace: Optional[Workspace] = dataclasses.field(default=None, repr=False, compare=False)


def _check_roots(model: nn.Module, roots: Optional[Sequence[str]]) -> List[str]:
    if roots is None:
        return []
    if isinstance(roots, str):
        roots = [roots]
    names = dict(model.named_modules())
    checked = []
    for root in roots:
        if not isinstance(root, str):
            raise TypeError(f"roots must be module names (str), got {type(root).__name__}")
        if root == "":
            raise ValueError("roots: an empty root name; name a submodule, or pass roots=None "
                             "to search the whole model")
        if root not in names:
            raise ValueError(f"roots: unknown root {root!r}: the model has no submodule of "
                             f"that name")
        checked.append(root)
    return checked


def _under(name: str, roots: List[str]) -> bool:
    return not roots or any(name == r or name.startswith(r + ".") for r in roots)


def _module_tree(model: nn.Module, roots: List[str], conv_tp: bool):
    neurons, candidates, unsupported = [], [], []
    for name, module in model.named_modules():
        if _is_stateful(module) and not isinstance(module, _layer.Dropout):
            neurons.append(name)
        if not name or not _under(name, roots):
            continue
        if isinstance(module, _LINEAR) or (conv_tp and isinstance(module, nn.Conv2d)):
            candidates.append(name)
        elif isinstance(module, _UNSPLITTABLE):
            unsupported.append(name)
    return neurons, candidates, unsupported


def analyze(model: nn.Module, *, model_family: Optional[str] = None,
            roots: Optional[Sequence[str]] = None,
            example_input: Optional[torch.Tensor] = None,
            experimental_conv_tp: bool = False) -> SNNDistributedAnalysis:
    """Finds the model's stateful neurons and its tensor-parallel candidates.

    Args:
        model: the SpikingJelly-style ``nn.Module`` (snnexport's or SpikingJelly's modules).
        model_family: a label kept on the analysis and the plan (the reference's argument).
        roots: submodule names to search for tensor-parallel candidates (default: all).
        example_input: an input batch as the model takes it (``[T, N, ...]``, or ``[N, ...]``
            for a model that repeats its input over T): adds the compiler's view of the model
            (sizes, FLOPs) and lets ``plan`` use the cost model; without it ``plan`` follows
            the reference's rules.
        experimental_conv_tp: count Conv2d layers as tensor-parallel candidates.

    Raises:
        TypeError: ``model`` is not an ``nn.Module``, or a root is not a string.
        ValueError: an empty or unknown root; a model the exporter cannot export (naming the
            module) or the compiler refuses.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    checked_roots = _check_roots(model, roots)
    neurons, candidates, unsupported = _module_tree(model, checked_roots,
                                                    bool(experimental_conv_tp))
    notes = []
    if not checked_roots:
        notes.append("no roots: tensor-parallel candidates are searched in the whole model")
    if not neurons:
        notes.append("no stateful neurons found: is this a spiking model?")
    if unsupported and not experimental_conv_tp:
        notes.append(f"{len(unsupported)} convolution layer(s) cannot be split without "
                     "experimental_conv_tp")
    analysis = SNNDistributedAnalysis(
        memory_module_names=neurons, tensor_parallel_candidate_names=candidates,
        unsupported_tensor_parallel_names=unsupported, tensor_parallel_roots=checked_roots,
        notes=notes, model_family=model_family, experimental_conv_tp=bool(experimental_conv_tp),
        model=model)
    if example_input is not None:
        _add_compiler_view(analysis, example_input)
    return analysis


def _add_compiler_view(analysis: SNNDistributedAnalysis, example_input: torch.Tensor) -> None:
    analysis.workspace = Workspace(analysis)
    analysis.onnx_path = analysis.workspace.file("model.onnx")
    export_model(analysis.model, example_input, analysis.onnx_path)
    analysis.example_input = example_input.detach()
    explanation = compile_onnx(
        analysis.onnx_path, plan=True,
        analyze_options={"roots": analysis.tensor_parallel_roots or None,
                         "experimental-conv-tp": analysis.experimental_conv_tp or None},
        plan_options={"topology": "dp=1"})
    analysis.model_stats = dict(explanation["plan"].get("model", {}))
    # The compiler finds the same neurons in the exported graph, named by the same paths.
    found = explanation.get("analysis", {}).get("memory_module_names", [])
    missing = sorted(set(found) - set(analysis.memory_module_names))
    if missing:
        analysis.notes.append(f"the compiler also found stateful neurons {', '.join(missing)}")

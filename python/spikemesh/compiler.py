"""The model as SpikeMesh's compiler sees it: exported to ONNX and compiled in this process.

Each compile writes into a private temporary directory that lives as long as the object that
asked for it (an analysis, a runtime); nothing is written next to the user's files.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from typing import Dict, Optional

import torch
from torch import nn

from . import _spikemesh
from snnexport import export_onnx

# The compiler's pass option names (--snn-analyze / --snn-plan): the one contract with
# Passes.td, which the Python API's tests check against `snn-opt --help`.
ANALYZE_OPTIONS = ("roots", "experimental-conv-tp")
PLAN_OPTIONS = ("topology", "objective", "batch-size", "mode", "allow-pipeline", "allow-zero",
                "experimental-conv-tp", "memory-budget", "cost-model", "pp-layout",
                "pp-schedule", "pp-microbatches", "pp-virtual-stages", "pp-delay-wgrad",
                "pp-memopt-stages", "memopt-ratio", "device-profile",
                "device-profile-any-machine", "optimizer-states")


class Workspace:
    """A temporary directory removed when its owner is garbage collected."""

    def __init__(self, owner: object) -> None:
        self.path = tempfile.mkdtemp(prefix="spikemesh-")
        self._finalizer = weakref.finalize(owner, shutil.rmtree, self.path, True)

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)


def option_text(options: Dict[str, object], allowed) -> str:
    """`key=value` pairs as a pass takes them; booleans as true/false, lists joined by ','."""
    words = []
    for key, value in options.items():
        if value is None:
            continue
        if key not in allowed:
            raise ValueError(f"unknown compiler option {key!r}")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        text = str(value)
        if any(c.isspace() for c in text):
            raise ValueError(f"compiler option {key}={text!r}: values cannot hold spaces")
        words.append(f"{key}={text}")
    return " ".join(words)


def export_model(model: nn.Module, example_input: torch.Tensor, path: str) -> None:
    """Exports with snnexport; its ValueError (a module it cannot export) names the module."""
    if not isinstance(example_input, torch.Tensor):
        raise TypeError(f"example_input must be a torch.Tensor, got {type(example_input).__name__}")
    export_onnx(model, example_input.detach(), path)


def compile_onnx(onnx_path: str, artifact_dir: str = "", *, plan: bool = False,
                 analyze_options: Optional[Dict[str, object]] = None,
                 plan_options: Optional[Dict[str, object]] = None) -> dict:
    """Runs the compile pipeline in process; returns its explanation (a dict) with a plan."""
    result = _spikemesh.compile(
        onnx_path, artifact_dir, plan,
        option_text(analyze_options or {}, ANALYZE_OPTIONS),
        option_text(plan_options or {}, PLAN_OPTIONS))
    explanation = json.loads(result["explanation_json"]) if result["explanation_json"] else {}
    explanation["text"] = result["explanation_text"]
    return explanation

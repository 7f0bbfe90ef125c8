"""``spikemesh.plan``: the compiler's planner, asked from Python.

The plan is SpikeMesh's: the cost model weighs every mode that fits the topology against the
model's FLOPs, parameter, activation and communication bytes (docs/planner.md) and says why in
``rationale``. The fields are the reference's, plus the planner's ``prediction``.
"""
from __future__ import annotations

import dataclasses
import os
import re
import warnings
from typing import Dict, List, Mapping, Optional, Union

from . import _spikemesh
from .analysis import SNNDistributedAnalysis
from .compiler import compile_onnx
from .helpers import recommend_snn_distributed_strategy

OBJECTIVES = ("speed", "memory", "capacity")
# The reference's mode names, and ours where they differ.
MODE_ALIASES = {"fsdp2": "fsdp", "fsdp2_tp": "fsdp_tp"}
MODES = ("auto", "none", "dp", "zero", "fsdp", "tp", "fsdp_tp", "pp")
# The mesh axis names as the compiler and runtime spell them (include/snn/Schema/MeshAxes.h).
TOPOLOGY_ORDER = tuple(_spikemesh.topology_order)


@dataclasses.dataclass
class SNNDistributedTopology:
    """Named mesh dimensions and their sizes (``{"dp": 2, "tp": 2}``); the product is the world
    size. Ordered dp, tp, pp, vpp, then the others, as the reference orders them."""

    dims: Dict[str, int]

    def __post_init__(self) -> None:
        if not isinstance(self.dims, Mapping) or not self.dims:
            raise ValueError(f"topology: expected named sizes such as {{'dp': 2}}, got "
                             f"{self.dims!r}")
        for name, size in self.dims.items():
            if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                raise ValueError(f"topology: bad dimension name {name!r}")
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"topology: size of {name!r} must be a positive integer, "
                                 f"got {size!r}")
        order = {n: i for i, n in enumerate(TOPOLOGY_ORDER)}
        self.dims = dict(sorted(self.dims.items(), key=lambda kv: order.get(kv[0], 99)))

    @property
    def world_size(self) -> int:
        size = 1
        for value in self.dims.values():
            size *= value
        return size

    def text(self) -> str:
        return ",".join(f"{n}={s}" for n, s in self.dims.items())

    @classmethod
    def parse(cls, value: Union["SNNDistributedTopology", Mapping[str, int], str]
              ) -> "SNNDistributedTopology":
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            dims = {}
            for part in value.split(","):
                name, sep, size = part.strip().partition("=")
                if not sep or not size.strip().isdigit():
                    raise ValueError(f"topology {value!r}: expected name=size pairs such as "
                                     f"'dp=2,tp=2'")
                if name in dims:
                    raise ValueError(f"topology {value!r}: {name!r} is given twice")
                dims[name.strip()] = int(size)
            return cls(dims)
        if isinstance(value, Mapping):
            return cls(dict(value))
        raise TypeError(f"topology must be a dict, a 'dp=2,tp=2' string or an "
                        f"SNNDistributedTopology, got {type(value).__name__}")


@dataclasses.dataclass
class DistributedFeatureSet:
    """Feature flags the planner may use (the ``--allow-*`` planning flags of snn-compile)."""

    experimental_conv_tp: bool = False
    allow_zero: bool = False
    allow_pipeline: bool = True
    pp_delay_wgrad: bool = False
    memory_budget: Optional[str] = None
    #: A pipeline's schedule (gpipe, 1f1b, interleaved, zero-bubble) and microbatches per
    #: step; None: the planner's choice (docs/planner.md).
    pp_schedule: Optional[str] = None
    pp_microbatches: Optional[int] = None


@dataclasses.dataclass
class SNNDistributedPlan:
    """What the planner chose and why (the reference's fields, plus ``prediction``)."""

    mode: str
    objective: str
    topology: SNNDistributedTopology
    backend: str
    batch_size: int
    model_family: Optional[str]
    optimizer_strategy: str
    memopt_level: int
    rationale: List[str]
    notes: List[str]
    tensor_parallel_roots: List[str]
    mesh_shape: List[int]
    mesh_axes: List[str]
    tp_mesh_dim: int
    dp_mesh_dim: int
    pp_microbatches: int
    pp_schedule: str
    pp_virtual_stages: int
    pp_layout: List[int]
    pp_delay_wgrad: bool
    features: DistributedFeatureSet
    decided_by: str
    prediction: Dict[str, object]
    explanation: str = dataclasses.field(repr=False, default="")
    analysis: Optional[SNNDistributedAnalysis] = dataclasses.field(default=None, repr=False,
                                                                   compare=False)
    compiler_options: Dict[str, object] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def world_size(self) -> int:
        return self.topology.world_size


def _check_request(analysis, objective, backend, batch_size, mode) -> Optional[str]:
    if not isinstance(analysis, SNNDistributedAnalysis):
        raise TypeError(f"analysis must be what spikemesh.analyze returned, got "
                        f"{type(analysis).__name__}")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: unknown objective {objective!r} (one of "
                         f"{', '.join(OBJECTIVES)})")
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string such as 'gloo', got {type(backend).__name__}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if mode is None:
        return None
    if not isinstance(mode, str) or MODE_ALIASES.get(mode, mode) not in MODES:
        raise ValueError(f"mode: unknown mode {mode!r} (one of {', '.join(MODES)}, or the "
                         f"reference's fsdp2 and fsdp2_tp)")
    return MODE_ALIASES.get(mode, mode)


def plan(*, analysis: SNNDistributedAnalysis, objective: str,
         topology: Union[SNNDistributedTopology, Mapping[str, int], str], backend: str,
         batch_size: int, model_family: Optional[str] = None, mode: Optional[str] = None,
         features: Optional[DistributedFeatureSet] = None,
         device_profile: Optional[Union[str, os.PathLike]] = None) -> SNNDistributedPlan:
    """Chooses how to run the model on ``topology``: mode, mesh, optimizer sharding, pipeline.

    With the model's shapes (``analyze(model, example_input=...)``) the cost model prices
    every mode; without them the mode follows the reference's rules (``decided_by ==
    "rules"``) and the compile at the first batch fills the pipeline fields and the prediction.

    Args:
        analysis: from ``analyze``.
        objective: ``"speed"``, ``"memory"`` or ``"capacity"``.
        topology: mesh sizes, ``{"dp": 2, "tp": 2}`` or ``"dp=2,tp=2"``; the product is the
            world size.
        backend: the collective backend (``"gloo"`` on CPU); recorded on the plan.
        batch_size: the global batch of a training step.
        model_family: a label kept on the plan (default: the analysis').
        mode: force a mode (``none``, ``dp``, ``zero``, ``fsdp``/``fsdp2``, ``tp``,
            ``fsdp_tp``/``fsdp2_tp``, ``pp``); default: the planner chooses.
        features: feature flags (ZeRO, pipelines, conv TP, memory budget).
        device_profile: a profile from ``snn-run calibrate`` to plan with measured times;
            default: this user's (``spikemesh.calibrate()``), or the built-in profile of
            this project's reference machine kind (``"builtin"``) with an
            ``UncalibratedPlanWarning`` when there is none of this machine.

    Raises:
        TypeError / ValueError: an argument of the wrong kind or value (named); any error of
            the planner (a mode that cannot use the topology, a split that does not divide, ...)
            as a ``SpikeMeshError`` (a ValueError) with its one-line message.
    """
    forced = _check_request(analysis, objective, backend, batch_size, mode)
    topo = SNNDistributedTopology.parse(topology)
    features = features if features is not None else DistributedFeatureSet(
        experimental_conv_tp=analysis.experimental_conv_tp)
    if not isinstance(features, DistributedFeatureSet):
        raise TypeError(f"features must be a DistributedFeatureSet, got "
                        f"{type(features).__name__}")
    if device_profile is not None and not os.path.isfile(os.fspath(device_profile)):
        raise ValueError(f"device_profile: no such file: {os.fspath(device_profile)}")
    if device_profile is None:
        device_profile = _user_device_profile()
    family = model_family if model_family is not None else analysis.model_family
    if analysis.onnx_path is None:
        return _plan_by_rules(analysis, objective, topo, backend, batch_size, family, forced,
                              features, device_profile)
    options = _compiler_options(analysis, objective, topo, batch_size, forced, features,
                                device_profile)
    explanation = compile_onnx(analysis.onnx_path, plan=True, analyze_options=options["analyze"],
                               plan_options=options["plan"])
    return _plan_from(explanation, topo, backend, batch_size, family, features, analysis,
                      options)


def _user_device_profile() -> Optional[str]:
    """This user's profile of this machine, or the built-in one with a warning that the plan's
    times are not this machine's (Python shows it once per call site); None when
    SPIKEMESH_DEVICE_PROFILE is ``none`` (the fixed constants)."""
    path, warning = _spikemesh.user_device_profile()
    if warning:
        warnings.warn(warning, UncalibratedPlanWarning, stacklevel=3)
    return path or None


class UncalibratedPlanWarning(UserWarning):
    """A plan priced with the built-in profile rather than this machine's measured one."""


def _compiler_options(analysis, objective, topo, batch_size, mode, features,
                      device_profile) -> Dict[str, Dict[str, object]]:
    """The --snn-analyze and --snn-plan options of a plan's compile."""
    plan_options = {"topology": topo.text(), "objective": objective, "batch-size": batch_size,
                    "mode": mode, "allow-zero": features.allow_zero,
                    "allow-pipeline": features.allow_pipeline,
                    "experimental-conv-tp": features.experimental_conv_tp or None,
                    "pp-delay-wgrad": features.pp_delay_wgrad or None,
                    "memory-budget": features.memory_budget,
                    "pp-schedule": features.pp_schedule,
                    "pp-microbatches": features.pp_microbatches,
                    "device-profile": os.fspath(device_profile) if device_profile else None}
    analyze_options = {"roots": analysis.tensor_parallel_roots or None,
                       "experimental-conv-tp": features.experimental_conv_tp or None}
    return {"analyze": analyze_options, "plan": plan_options}


def _rules_mode(analysis, objective, topo, batch_size, family, forced, features):
    """(mode as the compiler names it, memopt level, rationale) by the reference's decision
    table, or the forced mode."""
    if forced is not None:
        return forced, 0, [f"mode {forced} as asked"]
    rec = recommend_snn_distributed_strategy(
        family or "snn", topo.world_size, objective, batch_size,
        zero_redundancy_optimizer_available=features.allow_zero,
        pipelining_available=features.allow_pipeline)
    mode = MODE_ALIASES.get(rec.mode, rec.mode)
    if rec.optimizer_sharding == "zero":
        mode = "zero"
    rationale = list(rec.rationale)
    if mode in ("tp", "fsdp_tp") and not analysis.tensor_parallel_candidate_names:
        rationale.append(f"the model has no layer {mode} could split: fsdp instead")
        mode = "fsdp"
    return mode, rec.memopt_level, rationale


def _rules_mesh(mode: str, topo: SNNDistributedTopology) -> SNNDistributedTopology:
    """The mesh a mode runs on over ``topo``'s ranks: the topology itself where its axes fit
    the mode, else the reference's mesh for the mode."""
    world, axes = topo.world_size, set(topo.dims)
    if mode == "none":
        if world != 1:
            raise ValueError(f"mode none runs in one process, but the topology "
                             f"{topo.text()} has {world} ranks")
        return SNNDistributedTopology({"dp": 1})
    if mode == "fsdp_tp":
        if axes == {"dp", "tp"}:
            return topo
        if world % 2:
            raise ValueError(f"mode fsdp_tp pairs the ranks for tp, but the topology "
                             f"{topo.text()} has an odd number ({world})")
        return SNNDistributedTopology({"dp": world // 2, "tp": 2})
    if mode == "pp":
        return topo if "pp" in axes and axes <= {"dp", "pp"} else \
            SNNDistributedTopology({"pp": world})
    return SNNDistributedTopology({"tp" if mode == "tp" else "dp": world})


def _plan_by_rules(analysis, objective, topo, backend, batch_size, family, forced, features,
                   device_profile) -> SNNDistributedPlan:
    """A plan without the model's shapes: the mode by the reference's rules (the cost model
    needs shapes), compiled, and its pipeline and prediction fields filled, at the first
    forward."""
    mode, memopt, rationale = _rules_mode(analysis, objective, topo, batch_size, family,
                                          forced, features)
    mesh = _rules_mesh(mode, topo)
    axes = list(mesh.dims)
    options = _compiler_options(analysis, objective, mesh, batch_size, mode, features,
                                device_profile)
    rationale.append("without an example input the program is compiled at the first forward, "
                     "for that batch's shape")
    return SNNDistributedPlan(
        mode="dp" if mode == "zero" else mode, objective=objective, topology=mesh,
        backend=backend, batch_size=batch_size, model_family=family,
        optimizer_strategy="zero" if mode == "zero" else "none", memopt_level=memopt,
        rationale=rationale, notes=[], tensor_parallel_roots=list(analysis.tensor_parallel_roots),
        mesh_shape=list(mesh.dims.values()), mesh_axes=axes,
        tp_mesh_dim=axes.index("tp") if "tp" in axes else -1,
        dp_mesh_dim=axes.index("dp") if "dp" in axes else -1,
        pp_microbatches=features.pp_microbatches or 0,
        pp_schedule=features.pp_schedule or ("none" if mode != "pp" else "chosen at compile"),
        pp_virtual_stages=0, pp_layout=[], pp_delay_wgrad=features.pp_delay_wgrad,
        features=features, decided_by="rules", prediction={}, analysis=analysis,
        compiler_options=options)


def complete_plan(plan: SNNDistributedPlan, explanation: dict) -> None:
    """Fills what a compile decides (the pipeline's layout, schedule and microbatches, the
    prediction) into a plan made without shapes."""
    e = explanation["plan"]
    plan.pp_microbatches = int(e.get("pp_microbatches", plan.pp_microbatches))
    plan.pp_schedule = e.get("pp_schedule", plan.pp_schedule)
    plan.pp_virtual_stages = int(e.get("pp_virtual_stages", 0))
    plan.pp_layout = list(e.get("pp_layout", []))
    plan.prediction = dict(e.get("prediction", {}))
    plan.explanation = explanation.get("text", "")
    plan.notes = list(e.get("notes", []))


def _plan_from(explanation: dict, topo, backend, batch_size, model_family, features, analysis,
               options) -> SNNDistributedPlan:
    e = explanation["plan"]
    mesh = {"shape": e.get("mesh_shape", []), "axes": e.get("mesh_axes", [])}
    return SNNDistributedPlan(
        mode=e["mode"], objective=e["objective"], topology=topo, backend=backend,
        batch_size=batch_size, model_family=model_family,
        optimizer_strategy=e.get("optimizer_strategy", "none"),
        memopt_level=int(e.get("memopt_level", 0)), rationale=list(e.get("rationale", [])),
        notes=list(e.get("notes", [])),
        tensor_parallel_roots=list(explanation.get("analysis", {}).get("roots", [])),
        mesh_shape=list(mesh.get("shape", [])), mesh_axes=list(mesh.get("axes", [])),
        tp_mesh_dim=int(e.get("tp_mesh_dim", -1)), dp_mesh_dim=int(e.get("dp_mesh_dim", -1)),
        pp_microbatches=int(e.get("pp_microbatches", 0)),
        pp_schedule=e.get("pp_schedule", "none"),
        pp_virtual_stages=int(e.get("pp_virtual_stages", 0)),
        pp_layout=list(e.get("pp_layout", [])), pp_delay_wgrad=bool(e.get("pp_delay_wgrad")),
        features=features, decided_by=e.get("decided_by", ""),
        prediction=dict(e.get("prediction", {})), explanation=explanation.get("text", ""),
        analysis=analysis, compiler_options=options)

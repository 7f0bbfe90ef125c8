"""The reference package's helper functions, under its names and signatures, on spikemesh.

Scripts written for SpikingJelly's ``activation_based.distributed`` call these around
``analyze / plan / apply``; they behave as the reference documents them (rules and errors in
docs/python-api.md, "The reference's helpers"), with spikemesh's runtime underneath where they
touch a model.
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Optional, Sequence, Tuple

import torch
import torch.distributed as torch_dist
from torch import nn

from .optim import ZeroRedundancyOptimizer

PREFERENCES = ("speed", "memory", "capacity")


def recommended_pipeline_microbatches(batch_size: int, num_stages: int) -> int:
    """The largest microbatch count m in [S, min(B, 4S)] that divides B (S = num_stages)."""
    _require_positive_int(batch_size, "batch_size")
    _require_positive_int(num_stages, "num_stages")
    if batch_size < num_stages:
        raise ValueError(f"batch_size ({batch_size}) must be >= num_stages ({num_stages}) for "
                         f"pipeline parallelism: every stage needs a microbatch")
    top = min(batch_size, 4 * num_stages)
    for m in range(top, num_stages - 1, -1):
        if batch_size % m == 0:
            return m
    raise ValueError(f"batch_size ({batch_size}) is divisible by no microbatch count in "
                     f"[{num_stages}, {top}]")


def recommend_pipeline_memopt_stages(stage_costs: Sequence[float],
                                     stage_budget_ratio: float = 0.5) -> Tuple[int, ...]:
    """The k = max(1, min(n, round(n * stage_budget_ratio))) costliest of the n stages (ties
    to the lower index), in ascending order: the stages to recompute (activation
    checkpointing). No stages: none."""
    costs = [float(c) for c in stage_costs]
    ratio = stage_budget_ratio
    if not isinstance(ratio, (int, float)) or not math.isfinite(ratio) or not 0 < ratio <= 1:
        raise ValueError(f"stage_budget_ratio must be a finite number in (0, 1], got "
                         f"{ratio!r}")
    if not costs:
        return ()
    k = max(1, min(len(costs), round(len(costs) * ratio)))
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    return tuple(sorted(order[:k]))


def ensure_distributed_initialized(backend: Optional[str] = None,
                                   init_method: Optional[str] = None,
                                   rank: Optional[int] = None,
                                   world_size: Optional[int] = None) -> bool:
    """``torch.distributed.init_process_group`` unless it already ran (Gloo on CPU, NCCL with
    CUDA); True when this call initialised it. spikemesh's own ranks need no such call;
    scripts that use torch.distributed beside it (DistributedSampler, all_reduce of metrics)
    do."""
    if torch_dist.is_initialized():
        return False
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    kwargs = {k: v for k, v in (("init_method", init_method), ("rank", rank),
                                ("world_size", world_size)) if v is not None}
    torch_dist.init_process_group(backend=backend, **kwargs)
    return True


@dataclasses.dataclass(frozen=True)
class DeviceMesh:
    """A device mesh's shape, dimension names and this rank's coordinate on it (what
    ``apply(device_mesh=...)`` and the resolve_* helpers read; spikemesh builds its own groups
    per mesh axis)."""

    device_type: str
    mesh_shape: Tuple[int, ...]
    mesh_dim_names: Optional[Tuple[str, ...]]
    rank: int

    @property
    def ndim(self) -> int:
        return len(self.mesh_shape)

    def size(self) -> int:
        return math.prod(self.mesh_shape)

    def get_coordinate(self) -> Tuple[int, ...]:
        coordinate, rest = [], self.rank
        for extent in reversed(self.mesh_shape):
            coordinate.append(rest % extent)
            rest //= extent
        return tuple(reversed(coordinate))


def build_device_mesh(device_type: str = "cpu", mesh_shape: Optional[Tuple[int, ...]] = None,
                      mesh_dim_names: Optional[Tuple[str, ...]] = None) -> DeviceMesh:
    """A mesh over the job's ranks (torchrun's WORLD_SIZE and RANK, or torch.distributed's);
    its size must be the world size."""
    world, rank = _world()
    shape = tuple(mesh_shape) if mesh_shape is not None else (world,)
    if not shape or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in shape):
        raise ValueError(f"mesh_shape must be positive integers, got {mesh_shape!r}")
    if math.prod(shape) != world:
        raise ValueError(f"mesh_shape={shape} uses {math.prod(shape)} ranks, but "
                         f"world_size={world}")
    if mesh_dim_names is not None and len(tuple(mesh_dim_names)) != len(shape):
        raise ValueError(f"mesh_dim_names {mesh_dim_names!r} does not name the "
                         f"{len(shape)} dimensions of {shape}")
    names = tuple(mesh_dim_names) if mesh_dim_names is not None else None
    return DeviceMesh(device_type, shape, names, rank)


def resolve_data_parallel_partition(device_mesh: Optional[DeviceMesh],
                                    dp_mesh_dim: Optional[int],
                                    sharded_by_data_parallel: bool) -> Tuple[int, int]:
    """(partitions, this rank's partition) of the data along the mesh's dp dimension."""
    if not sharded_by_data_parallel or device_mesh is None:
        return 1, 0
    shape, coordinate = device_mesh.mesh_shape, device_mesh.get_coordinate()
    if dp_mesh_dim is None:
        if len(shape) != 1:
            raise ValueError("dp_mesh_dim must be given for data-parallel sharding on a "
                             "multi-dimensional mesh")
        return shape[0], coordinate[0]
    _require_dim(dp_mesh_dim, shape, "dp_mesh_dim")
    return shape[dp_mesh_dim], coordinate[dp_mesh_dim]


def resolve_tensor_parallel_group_size(device_mesh: Optional[DeviceMesh], tp_mesh_dim: int,
                                       tensor_parallel_enabled: bool) -> int:
    """The size of the mesh's tp dimension (1 without tensor parallelism or a mesh)."""
    if not tensor_parallel_enabled or device_mesh is None:
        return 1
    _require_dim(tp_mesh_dim, device_mesh.mesh_shape, "tp_mesh_dim")
    return device_mesh.mesh_shape[tp_mesh_dim]


def unwrap_parallel_module(module: nn.Module) -> nn.Module:
    """The module inside a DistributedDataParallel wrapper; any other module itself."""
    return module.module if isinstance(module, nn.parallel.DistributedDataParallel) else module


def build_snn_optimizer(module: nn.Module, mode: str, lr: float, weight_decay: float = 0.0,
                        optimizer_sharding: str = "none", foreach: Optional[bool] = None,
                        optimizer_cls=torch.optim.Adam, **optimizer_kwargs):
    """An optimizer of ``optimizer_cls`` over ``module``'s trainable parameters; with
    ``optimizer_sharding="zero"`` (mode ``dp`` only) a ZeroRedundancyOptimizer over the
    data-parallel ranks of a spikemesh runtime's model. A module without a trainable
    parameter (a pipeline rank whose stages are neurons and pooling only) gets an optimizer
    over an empty placeholder, so the loop's calls work unchanged."""
    if not (isinstance(optimizer_cls, type) and issubclass(optimizer_cls, torch.optim.Optimizer)):
        raise TypeError(f"optimizer_cls must be a torch.optim.Optimizer class, got "
                        f"{optimizer_cls!r}")
    if optimizer_sharding not in ("none", "zero"):
        raise ValueError(f"unsupported optimizer_sharding={optimizer_sharding!r}; expected "
                         f"'none' or 'zero'")
    if foreach is not None:
        optimizer_kwargs["foreach"] = foreach
    params = [p for p in module.parameters() if p.requires_grad]
    if optimizer_sharding == "zero":
        if mode != "dp":
            raise ValueError(f"optimizer_sharding='zero' needs mode 'dp', got {mode!r}")
        if not hasattr(module, "planned_data_parallel"):
            raise ValueError("optimizer_sharding='zero' shards over spikemesh's data-parallel "
                             "ranks: pass runtime.model")
        if module.data_parallel_size > 1:
            return ZeroRedundancyOptimizer(params, optimizer_cls, group=module, lr=lr,
                                           weight_decay=weight_decay, **optimizer_kwargs)
    if not params:
        # torch.optim refuses an empty list.
        params = [nn.Parameter(torch.zeros(0))]
    return optimizer_cls(params, lr=lr, weight_decay=weight_decay, **optimizer_kwargs)


@dataclasses.dataclass(frozen=True)
class SNNDistributedRecommendation:
    """The reference's rule-based recommendation (recommend_snn_distributed_strategy)."""

    prefer: str
    model: str
    world_size: int
    mode: str
    optimizer_sharding: str = "none"
    memopt_level: int = 0
    mesh_shape: Optional[Tuple[int, ...]] = None
    tp_mesh_dim: int = 0
    dp_mesh_dim: Optional[int] = None
    pp_microbatches: Optional[int] = None
    pp_memopt_stage_budget_ratio: float = 0.5
    pp_schedule: str = "1f1b"
    pp_virtual_stages: int = 1
    pp_layout: Optional[Tuple[int, ...]] = None
    pp_delay_wgrad: bool = False
    rationale: Tuple[str, ...] = ()


def recommend_snn_distributed_strategy(
        model: str, world_size: int, prefer: str, batch_size: int, backend: str = "gloo",
        zero_redundancy_optimizer_available: Optional[bool] = None,
        pipelining_available: Optional[bool] = None, fsdp2_available: Optional[bool] = None,
        tensor_parallel_available: Optional[bool] = None) -> SNNDistributedRecommendation:
    """The reference's decision table by world size, preference and batch (docs/python-api.md).
    It prices nothing: ``spikemesh.plan`` is the cost model, this is for scripts that call the
    reference's recommender. The availability flags default to True (spikemesh runs every
    mode); ``backend`` changes no decision, as in the reference."""
    prefer = str(prefer).lower()
    if prefer not in PREFERENCES:
        raise ValueError(f"unsupported prefer={prefer!r}; expected one of {PREFERENCES}")
    _require_positive_int(world_size, "world_size")
    _require_positive_int(batch_size, "batch_size")
    have = lambda flag: True if flag is None else bool(flag)  # noqa: E731
    make = lambda **kw: SNNDistributedRecommendation(  # noqa: E731
        prefer=prefer, model=model, world_size=world_size, **kw)
    if world_size <= 1:
        return make(mode="none", memopt_level=0 if prefer == "speed" else 1,
                    rationale=("one process: nothing to distribute",))
    if prefer == "capacity" and have(pipelining_available):
        virtual = 2 if batch_size >= 2 * world_size else 1 if batch_size >= world_size else 0
        if virtual:
            return make(mode="pp", memopt_level=1, mesh_shape=(world_size,),
                        pp_virtual_stages=virtual,
                        pp_schedule="interleaved_1f1b" if virtual > 1 else "1f1b",
                        pp_microbatches=recommended_pipeline_microbatches(
                            batch_size, world_size * virtual),
                        rationale=("capacity: pipeline stages hold a share of the layers",))
    if prefer == "speed":
        zero = "zero" if have(zero_redundancy_optimizer_available) else "none"
        return make(mode="dp", optimizer_sharding=zero, mesh_shape=(world_size,),
                    dp_mesh_dim=0, rationale=("speed: replicas split the batch",))
    if world_size >= 4 and world_size % 2 == 0 and have(fsdp2_available) and \
            have(tensor_parallel_available):
        return make(mode="fsdp2_tp", memopt_level=1, mesh_shape=(world_size // 2, 2),
                    tp_mesh_dim=1, dp_mesh_dim=0,
                    rationale=("memory: tp inside pairs, fsdp2 across them",))
    mode = "tp" if have(tensor_parallel_available) else \
        "fsdp2" if have(fsdp2_available) else "dp"
    return make(mode=mode, memopt_level=1, mesh_shape=(world_size,),
                dp_mesh_dim=None if mode == "tp" else 0,
                rationale=(f"memory: {mode} divides what each rank holds",))


def _world() -> Tuple[int, int]:
    if torch_dist.is_initialized():
        return torch_dist.get_world_size(), torch_dist.get_rank()
    return int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))


def _require_positive_int(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _require_dim(dim, shape: Tuple[int, ...], name: str) -> None:
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < len(shape):
        raise ValueError(f"{name}={dim!r} is out of range for a mesh with shape {shape}")

"""SpikeMesh from Python: analyze, plan and apply a SpikingJelly-style SNN inside your own loop.

The names follow SpikingJelly's ``activation_based.distributed`` package, so a script written
for it changes its imports::

    import spikemesh
    analysis = spikemesh.analyze(model, example_input=x)
    plan = spikemesh.plan(analysis=analysis, objective="speed", topology={"dp": 1},
                          backend="gloo", batch_size=x.shape[1])
    runtime = spikemesh.apply(model=model, plan=plan)
    out = runtime.model(x)              # SpikeMesh's compiled program on its native kernels

The compiler and the runtime run in this process (the ``_spikemesh`` extension module), over
the same LibTorch as ``torch``. ``spikemesh.export`` is the ``snnexport`` package (the
SpikingJelly-compatible modules and the ONNX exporter). docs/python-api.md is the guide.
"""
from ._spikemesh import SpikeMeshError
from .analysis import SNNDistributedAnalysis, analyze
from .planning import (DistributedFeatureSet, SNNDistributedPlan, SNNDistributedTopology,
                       UncalibratedPlanWarning, plan)
from .calibration import calibrate, user_device_profile_path
from .checkpoint import CheckpointInfo
from .tensor_shard import TensorShardMemoryModule, make_tensor_shard_memory_module
from .runtime import SNNDistributedRuntime, apply
from .pipeline_memopt import apply_pipeline_stage_memopt
from .helpers import (DeviceMesh, SNNDistributedRecommendation, build_device_mesh,
                      build_snn_optimizer, ensure_distributed_initialized,
                      recommend_pipeline_memopt_stages, recommend_snn_distributed_strategy,
                      recommended_pipeline_microbatches, resolve_data_parallel_partition,
                      resolve_tensor_parallel_group_size, unwrap_parallel_module)
from .debug import (enable_tp_communication_debug, get_tp_communication_debug_stats,
                    reset_tp_communication_debug_stats)
from .kernels import event_kernel_choices, event_kernels, set_event_kernels
from . import export, optim

__all__ = [
    "SpikeMeshError", "SNNDistributedAnalysis", "analyze", "DistributedFeatureSet",
    "SNNDistributedPlan", "SNNDistributedTopology", "plan", "SNNDistributedRuntime", "apply",
    "export", "optim", "enable_tp_communication_debug", "get_tp_communication_debug_stats",
    "reset_tp_communication_debug_stats", "DeviceMesh", "SNNDistributedRecommendation",
    "build_device_mesh", "build_snn_optimizer", "ensure_distributed_initialized",
    "recommend_pipeline_memopt_stages", "recommend_snn_distributed_strategy",
    "recommended_pipeline_microbatches", "resolve_data_parallel_partition",
    "resolve_tensor_parallel_group_size", "unwrap_parallel_module", "calibrate",
    "user_device_profile_path", "UncalibratedPlanWarning", "CheckpointInfo",
    "TensorShardMemoryModule", "make_tensor_shard_memory_module", "apply_pipeline_stage_memopt",
    "set_event_kernels", "event_kernels", "event_kernel_choices",
]

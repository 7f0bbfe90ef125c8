"""``apply_pipeline_stage_memopt``: recomputation of a pipeline's costliest stages.

A recomputed stage's forward keeps only its inputs and runs again, recording the graph,
right before its backward: the activations of its layers are held for one microbatch at a
time instead of for every microbatch in flight. The results are the same bit for bit.
"""
from __future__ import annotations

import time
from typing import Tuple

from .helpers import recommend_pipeline_memopt_stages
from .runtime import SNNDistributedRuntime


def apply_pipeline_stage_memopt(runtime: SNNDistributedRuntime, *, memopt_level: int,
                                compress_x: bool = False, stage_budget_ratio: float = 0.5,
                                use_plan_cache: bool = True
                                ) -> Tuple[SNNDistributedRuntime, float, bool]:
    """Recomputes the activations of a pipeline's costliest stages from the next
    ``train_step`` on, as the reference's function of this name does.

    The stages are ``recommend_pipeline_memopt_stages(stage_costs, stage_budget_ratio)``
    over the planner's cost of each logical stage (``runtime.stage_costs``); the choice is
    ``runtime.memopt_selected_stage_indices`` on every rank, and each rank recomputes those
    of its own stages. Call it on every rank with the same arguments, once the program is
    compiled (``apply(example_input=...)`` or a first batch); it holds for later input
    shapes too.

    Args:
        runtime: what ``spikemesh.apply`` returned for a pipeline plan (mode ``pp``).
        memopt_level: 0 or less turns recomputation off (the plan's own choice included);
            1 or more recomputes the chosen stages.
        compress_x: a recomputed stage also keeps the inputs it received as one byte per
            value when they are spikes (all 0 or 1), a quarter of their float32 size.
        stage_budget_ratio: the share of the stages to recompute, in (0, 1].
        use_plan_cache: accepted for the reference's scripts; the choice is computed from
            the plan's costs, which need no cache.

    Returns:
        ``(runtime, milliseconds spent, whether this rank recomputes any of its stages)``.

    Raises:
        TypeError: ``runtime`` is not a spikemesh runtime, or an argument of the wrong type.
        ValueError: the plan is not a pipeline, or ``stage_budget_ratio`` is outside (0, 1].
        RuntimeError: the program is not compiled yet.
    """
    if not isinstance(runtime, SNNDistributedRuntime):
        raise TypeError(f"runtime must be what spikemesh.apply returned, got "
                        f"{type(runtime).__name__}")
    if isinstance(memopt_level, bool) or not isinstance(memopt_level, int):
        raise TypeError(f"memopt_level must be an int, got {type(memopt_level).__name__}")
    for name, value in (("compress_x", compress_x), ("use_plan_cache", use_plan_cache)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    if runtime.plan.mode != "pp":
        raise ValueError(f"apply_pipeline_stage_memopt: the plan's mode is "
                         f"{runtime.plan.mode!r}; stage recomputation is for pipelines (pp)")
    program = runtime.model._require_program("apply_pipeline_stage_memopt")
    start = time.perf_counter()
    if memopt_level <= 0:
        selected: Tuple[int, ...] = ()
    else:
        selected = recommend_pipeline_memopt_stages(program.stage_costs, stage_budget_ratio)
    program.recomputed_stages = list(selected)
    program.compressed_inputs = compress_x and bool(selected)
    runtime.memopt_selected_stage_indices = selected
    applied = any(stage in selected for stage in program.local_stages)
    return runtime, (time.perf_counter() - start) * 1000.0, applied

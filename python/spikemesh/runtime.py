"""``spikemesh.apply``: the planned model as SpikeMesh's compiled program in this process.

``apply`` returns an ``SNNDistributedRuntime``: ``runtime.model`` (compiled_module.py), whose
forward runs the rank's program on SpikeMesh's kernels (fused multi-step neurons, BPTT), and
the reference's helpers around it (optimizers, data loaders, checkpoints, clipping).
"""
from __future__ import annotations

import atexit
import contextlib
import copy
import os
from typing import Dict, List, Mapping, Optional, Tuple, Union

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from . import _spikemesh
from . import debug
from ._spikemesh import SpikeMeshError
from .checkpoint import CheckpointInfo, new_run_id, optimizer_rows, restore_optimizer
from .compiled_module import CompiledModule
from .compiler import Workspace, compile_onnx, export_model
from .helpers import DeviceMesh, build_snn_optimizer
from .planning import SNNDistributedPlan, complete_plan

# A process joins a torchrun job once; it leaves at exit, while the interpreter is whole.
atexit.register(_spikemesh.shutdown_world)


class SNNDistributedRuntime:
    """What ``apply`` returns: the compiled model and the reference's helpers around it."""

    def __init__(self, model: CompiledModule, plan: SNNDistributedPlan,
                 workspace: Workspace, rank: int) -> None:
        self.model = model
        self.plan = plan
        self.mode = plan.mode
        self.analysis = plan.analysis
        self._workspace = workspace
        #: This process's rank and the job's size (0 and 1 in one process).
        self.rank, self.world_size = rank, plan.world_size
        #: This rank's place on the data-parallel axis, which splits every global batch.
        self.dp_rank, self.dp_size = model.planned_data_parallel
        #: The pipeline stages apply_pipeline_stage_memopt chose to recompute.
        self.memopt_selected_stage_indices: Tuple[int, ...] = ()
        self._loaded_checkpoint: Optional[CheckpointInfo] = None
        self._run_id = new_run_id()
        debug._register(self)

    @property
    def stage_costs(self) -> List[float]:
        """A pipeline's planner cost of each logical stage (FLOP-equivalents), once the
        program is compiled; empty for the other modes."""
        if not self.model.compiled or self.plan.mode != "pp":
            return []
        return list(self.model._program.stage_costs)

    def compile(self, example_input: torch.Tensor) -> None:
        """Compiles the rank's program for ``example_input``'s shape now, rather than at the
        first forward (every rank calls it); does nothing once compiled. Under tp, fsdp,
        fsdp_tp and pp plans the parameters exist from here on."""
        self.model.compile(example_input)

    def build_optimizer(self, optimizer_cls=torch.optim.Adam, lr: float = 1e-3,
                        weight_decay: float = 0.0, **kwargs) -> torch.optim.Optimizer:
        """An optimizer of ``optimizer_cls`` over this rank's trainable parameters; under a
        plan with ``optimizer_strategy == "zero"`` on several ranks, a
        ``ZeroRedundancyOptimizer`` that keeps each rank's share of its state. A rank that
        holds no parameter (a pipeline stage of neurons and pooling only) gets one over an
        empty placeholder, so the loop's calls work unchanged."""
        sharding = "zero" if self.plan.optimizer_strategy == "zero" and self.dp_size > 1 \
            else "none"
        if not self.model.compiled and self.plan.mode not in _WHOLE_PARAMETER_MODES:
            raise RuntimeError(f"build_optimizer: under a {self.plan.mode} plan the "
                               f"parameters are this rank's parts, known once the program is "
                               f"compiled: pass example_input= to apply, or run runtime.model "
                               f"(or train_step) on a batch first")
        return build_snn_optimizer(self.model, "dp" if sharding == "zero" else self.plan.mode,
                                   lr, weight_decay, optimizer_sharding=sharding,
                                   optimizer_cls=optimizer_cls, **kwargs)

    def train_step(self, images: torch.Tensor, labels: torch.Tensor, criterion) -> torch.Tensor:
        """One training step's forward and backward: ``criterion(runtime.model(images),
        labels).backward()``; the gradients are left in ``.grad`` (averaged over the
        data-parallel ranks) and the optimizer step stays yours. Returns the loss, detached.

        Under a pipeline plan (mode ``pp``) this is how the model trains: the plan's schedule
        runs the stages' forwards and backwards over its microbatches, ``criterion`` is applied
        to each microbatch's output on the last stage, the gradients are those of the mean of
        the microbatches' losses, and the returned loss is that mean (over the data-parallel
        replicas too), on every rank. ``criterion(output, labels)`` takes what
        ``runtime.model`` returns for the microbatch and its labels, and returns a scalar.
        """
        if not callable(criterion):
            raise TypeError(f"criterion must be callable, got {type(criterion).__name__}")
        if self.plan.mode == "pp":
            return self.model.pipeline_step(images, labels, criterion)
        loss = criterion(self.model(images), labels)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise ValueError("criterion must return a scalar torch.Tensor")
        loss.backward()
        return loss.detach()

    @torch.no_grad()
    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0,
                        error_if_nonfinite: bool = False) -> torch.Tensor:
        """``torch.nn.utils.clip_grad_norm_`` over the whole model's gradients, whatever this
        rank holds of them (tp parts, fsdp pieces, a pipeline's stages): the norm is the one
        a single process computes over every parameter, and every rank scales its gradients
        by the same factor. Returns that total norm. Collective on many ranks (call it on
        every rank, after backward or ``train_step``)."""
        if not isinstance(max_norm, (int, float)) or isinstance(max_norm, bool):
            raise TypeError(f"max_norm must be a number, got {type(max_norm).__name__}")
        if not isinstance(norm_type, (int, float)) or not 0 < norm_type < float("inf"):
            raise ValueError(f"norm_type must be a positive finite number, got {norm_type!r}")
        program = self.model._require_program("clip_grad_norm_")
        grads = [(name, p.grad) for name, p in self.model.named_parameters()
                 if p.grad is not None]
        # Each rank's share of sum |g|^p, a value held by k ranks counted 1/k times by each.
        total = torch.zeros(1, dtype=torch.float64)
        for name, grad in grads:
            share = grad.detach().double().abs().pow(norm_type).sum()
            total += share / program.copies_of(name)
        program.sum_over_world(total)
        norm = total.pow(1.0 / norm_type).to(torch.float32)[0]
        if error_if_nonfinite and not torch.isfinite(norm):
            raise RuntimeError(f"the total norm of order {norm_type} of the gradients is "
                               f"non-finite, so it cannot be clipped")
        coefficient = float(max_norm) / (float(norm) + 1e-6)
        if coefficient < 1.0:
            for _, grad in grads:
                grad.mul_(coefficient)
        return norm

    @contextlib.contextmanager
    def no_sync(self):
        """Backwards inside accumulate this rank's gradients without averaging them over the
        data-parallel ranks (as ``DistributedDataParallel.no_sync``); the first backward after
        it averages everything accumulated. Does nothing in one process."""
        if self.plan.mode in ("fsdp", "fsdp_tp") and self.dp_size > 1:
            raise SpikeMeshError("no_sync: an fsdp plan reduces each layer's gradients during "
                                 "backward and keeps only this rank's piece; it cannot "
                                 "accumulate whole gradients locally")
        before = self.model.gradient_sync
        self.model.gradient_sync = False
        try:
            yield
        finally:
            self.model.gradient_sync = before

    def reset_state(self) -> None:
        """Resets the neurons' state. The compiled program starts every forward from the
        neurons' reset state, so there is nothing to clear; kept for the reference's loops."""

    @staticmethod
    def reduce_classification_output(outputs: torch.Tensor, labels: torch.Tensor
                                     ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Outputs ``[T, N, C]`` averaged over T; one-hot labels ``[N, C]`` to class indices."""
        if outputs.ndim >= 3:
            outputs = outputs.mean(dim=0)
        if labels.ndim > 1:
            labels = labels.argmax(dim=1)
        return outputs, labels

    def prepare_classification_output(self, outputs: torch.Tensor, labels: torch.Tensor
                                      ) -> Tuple[torch.Tensor, torch.Tensor]:
        """As ``reduce_classification_output``; outputs are whole on every rank here."""
        return self.reduce_classification_output(outputs, labels)

    def forward_loss(self, criterion, images: torch.Tensor, labels: torch.Tensor):
        """``(outputs, loss)``: the model on ``images``, reduced, then ``criterion``."""
        outputs = self.model(images.float())
        outputs, labels = self.reduce_classification_output(outputs, labels)
        return outputs, criterion(outputs, labels)

    def prepare_dataloader(self, *, dataset: Dataset, batch_size: int, shuffle: bool,
                           num_workers: int = 0, drop_last: bool = False) -> DataLoader:
        """A ``DataLoader`` of ``batch_size`` samples per rank over this rank's share of
        ``dataset``: a ``DistributedSampler`` over the data-parallel axis. Without shuffle
        rank r of D takes samples r, r+D, ..., so the D ranks' batches together are the
        one-process batch of ``D * batch_size``. Call ``loader.sampler.set_epoch(epoch)``
        before each epoch when shuffling."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        sampler = DistributedSampler(dataset, num_replicas=self.dp_size, rank=self.dp_rank,
                                     shuffle=bool(shuffle), drop_last=drop_last)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler,
                          num_workers=num_workers, drop_last=drop_last)

    def comm_stats(self) -> List[Dict[str, object]]:
        """The collectives the compiled program ran on this rank (its tp all-reduces and
        all-gathers, forward and backward) since ``reset_comm_stats()``: one dict per kind and
        mesh axis with ``kind``, ``mesh_axis``, ``calls``, ``bytes`` (of the tensors the
        collectives returned) and ``seconds`` (time this rank spent in them). The dp gradient
        all-reduce, fsdp's gathers and a pipeline's sends are not counted here."""
        if not self.model.compiled:
            return []
        return [{"kind": kind, "mesh_axis": axis, "calls": calls, "bytes": nbytes,
                 "seconds": seconds}
                for kind, axis, calls, nbytes, seconds in self.model._program.comm_stats()]

    def reset_comm_stats(self) -> None:
        """Sets every comm_stats() counter to zero."""
        if self.model.compiled:
            self.model._program.reset_comm_stats()

    def firing_rates(self) -> Dict[str, float]:
        """Each neuron layer's firing rate in the forwards of ``runtime.model`` since
        ``reset_firing_rates()`` (training and eval alike): spikes over neurons x steps x
        samples, counted by the neuron kernels as they fire, keyed by the PyTorch module's name.
        On several ranks (every mode but ``pp``) the counts are summed over the job's ranks
        (collective: every rank calls it); a pipeline rank gives its own stages' layers."""
        if not self.model.compiled:
            return {}
        counts = self.model._program.firing_counts()
        totals = torch.tensor([[spikes, elements] for _, spikes, elements, _ in counts],
                              dtype=torch.float64).reshape(-1, 2)
        if self.world_size > 1 and self.plan.mode != "pp":
            self.model._program.sum_over_world(totals)
        return {layer: float(s / e) if e > 0 else 0.0
                for (layer, _, _, _), (s, e) in zip(counts, totals.tolist())}

    def reset_firing_rates(self) -> None:
        """Starts firing_rates() over: the counts of the forwards so far are dropped."""
        if self.model.compiled:
            self.model._program.reset_firing_counts()

    def state_dict(self) -> Dict[str, torch.Tensor]:
        """Whole tensors under the PyTorch model's keys (collective on many ranks: the
        tensor-parallel parts are gathered)."""
        return self.model.whole_state()

    def save_checkpoint(self, directory: Union[str, os.PathLike], *,
                        optimizer: Optional[torch.optim.Optimizer] = None, step: int,
                        epoch: Optional[int] = None, batch: Optional[int] = None,
                        seed: Optional[int] = None, keep: int = 2) -> Optional[str]:
        """Saves a checkpoint in ``snn-run train --checkpoint``'s format (docs/checkpoints.md):
        the whole model (every mode's parts assembled), ``optimizer``'s state (SGD, Adam or
        AdamW; sharded ZeRO state gathered) and the CPU generator, published atomically as
        ``directory/step-XXXXXXXX`` with the ``keep`` newest kept. ``snn-run train
        --checkpoint directory --resume`` continues from it, in any mode of the same model.

        ``step`` is the optimizer steps done. ``epoch``, ``batch`` (the next step's place in
        snn-run's data order), ``seed`` and the settings a resumed snn-run must repeat default
        to those of the checkpoint ``load_checkpoint`` read, advanced by the steps since
        (else epoch 0, batch ``step``, seed 0, no settings). Collective: call it on every rank;
        returns the path on rank 0, None elsewhere."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be a non-negative integer, got {step!r}")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be a positive integer, got {keep!r}")
        program = self.model._require_program("save_checkpoint")
        names = {id(p): n for n, p in self.model.named_parameters()}
        kind, rows = optimizer_rows(optimizer, names, step)
        loaded = self._loaded_checkpoint
        position = {
            "step": step,
            "epoch": epoch if epoch is not None else (loaded.epoch if loaded else 0),
            "batch": batch if batch is not None else (
                loaded.batch + step - loaded.step if loaded else step),
            "seed": seed if seed is not None else (loaded.seed if loaded else 0),
            "run_id": loaded.run_id if loaded and loaded.run_id else self._run_id,
            "settings": list(loaded.settings.items()) if loaded else []}
        path = program.save_checkpoint(os.fspath(directory), position, kind, rows, keep)
        return path or None

    def load_checkpoint(self, directory: Union[str, os.PathLike], *,
                        optimizer: Optional[torch.optim.Optimizer] = None) -> CheckpointInfo:
        """Loads the latest checkpoint in ``directory`` (written by ``snn-run train
        --checkpoint`` in any mode, or by ``save_checkpoint``): the parameters and buffers
        (this rank's part), ``optimizer``'s state (SGD, Adam or AdamW, as that run's), and
        the CPU generator (Dropout's draws continue). Returns where its run stands; a later
        ``save_checkpoint`` continues that run. Collective: call it on every rank after the
        program is compiled (``apply(example_input=...)`` or a first batch)."""
        program = self.model._require_program("load_checkpoint")
        loaded = program.load_checkpoint(os.fspath(directory))
        params = dict(self.model.named_parameters())
        restore_optimizer(optimizer, loaded["optimizer_kind"], loaded["optimizer"], params)
        if loaded["generator_state"] is not None and loaded["generator_state"].numel():
            torch.set_rng_state(loaded["generator_state"])
        self._loaded_checkpoint = CheckpointInfo(
            path=loaded["path"], step=loaded["step"], epoch=loaded["epoch"],
            batch=loaded["batch"], seed=loaded["seed"], run_id=loaded["run_id"],
            settings=dict(loaded["settings"]))
        return self._loaded_checkpoint

    def load_state_dict(self, state_dict: Dict[str, torch.Tensor], strict: bool = True) -> None:
        """Loads whole tensors under the PyTorch model's keys (what ``state_dict()`` returns,
        or the PyTorch model's own ``state_dict()``) into every rank's parameters and buffers
        (this rank's part of each). Keys the compiled program does not read (BatchNorm's
        ``num_batches_tracked``) are ignored; with ``strict``, a missing key raises KeyError.
        Call it on every rank (collective under fsdp)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping of names to tensors, got "
                            f"{type(state_dict).__name__}")
        names = self.model.model_names()
        missing = [n for n in names if n not in state_dict]
        if missing and strict:
            raise KeyError(f"state_dict has no {', '.join(repr(n) for n in missing[:5])}"
                           f"{' ...' if len(missing) > 5 else ''}")
        current = self.state_dict() if missing else {}
        whole = {}
        for name in names:
            value = state_dict[name] if name in state_dict else current[name]
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"state_dict[{name!r}] must be a torch.Tensor, got "
                                f"{type(value).__name__}")
            whole[name] = value.detach()
        self.model.load_whole_state(whole)


def apply(*, model: nn.Module, plan: SNNDistributedPlan, device_type: str = "cpu",
          device_mesh: Optional[object] = None,
          example_input: Optional[torch.Tensor] = None) -> SNNDistributedRuntime:
    """Returns the planned model's runtime in this process; its program is compiled for the
    first batch it runs (as ``torch.compile`` does), or here for ``example_input``, or for the
    analysis' example when the plan was made with one.

    Args:
        model: the PyTorch model that was analysed; its current weights are the initial ones.
        plan: from ``spikemesh.plan``.
        device_type: ``"cpu"``.
        device_mesh: None, or a ``build_device_mesh`` mesh of the plan's world size (the
            plan's own mesh axes are used either way).
        example_input: a batch as the model takes it: compile now rather than at the first
            forward (every rank passes one).

    Raises:
        TypeError / ValueError: arguments of the wrong kind or value (a plan for another number
            of ranks than this job's); a compile error as ``SpikeMeshError``.
    """
    _check_apply(model, plan, device_type, device_mesh, example_input)
    distributed = _job_world_size(plan) > 1
    if os.environ.get("SPIKEMESH_TUNE_PROCESS", "1") != "0":
        _spikemesh.tune_process()
    workspace = Workspace(model)
    rank = int(os.environ.get("RANK", "0")) if distributed else 0
    compiled = CompiledModule(
        state=model.state_dict(),
        trainable={n: p.requires_grad for n, p in model.named_parameters()},
        distributed=distributed, artifact_for=_artifact_maker(model, plan, workspace),
        whole_parameters=plan.mode in _WHOLE_PARAMETER_MODES,
        data_parallel=_data_parallel_place(plan, rank))
    compiled.train(model.training)
    runtime = SNNDistributedRuntime(compiled, plan, workspace, rank)
    if example_input is None and plan.analysis.example_input is not None:
        example_input = plan.analysis.example_input
    if example_input is not None:
        compiled.compile(example_input)
    return runtime


# Plans whose parameters are whole on every rank, so they exist before the program does.
_WHOLE_PARAMETER_MODES = ("none", "dp")


def _check_apply(model, plan, device_type, device_mesh, example_input) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(plan, SNNDistributedPlan):
        raise TypeError(f"plan must be what spikemesh.plan returned, got {type(plan).__name__}")
    if device_type != "cpu":
        raise ValueError(f"device_type {device_type!r}: this build runs on 'cpu'")
    if example_input is not None and not isinstance(example_input, torch.Tensor):
        raise TypeError(f"example_input must be a torch.Tensor, got "
                        f"{type(example_input).__name__}")
    if device_mesh is not None:
        if not isinstance(device_mesh, DeviceMesh):
            raise TypeError(f"device_mesh must come from spikemesh.build_device_mesh, got "
                            f"{type(device_mesh).__name__}")
        if device_mesh.size() != plan.world_size:
            raise ValueError(f"device_mesh {device_mesh.mesh_shape} has {device_mesh.size()} "
                             f"ranks, but the plan's topology {plan.topology.text()} has "
                             f"{plan.world_size}")


def _artifact_maker(model: nn.Module, plan: SNNDistributedPlan, workspace: Workspace):
    """The compile of the rank's artifact for a batch. The first is of the analysis' ONNX
    when the plan priced one, else of the model exported with that batch (and a plan made
    without shapes takes its pipeline fields and prediction from it). Each later shape's is
    of the model exported with its batch, with the plan's decisions pinned (mode, mesh,
    pipeline schedule, layout and microbatches), so every shape runs the same plan."""
    compiles = []

    def artifact_for(batch: torch.Tensor, pinned: bool) -> str:
        compiles.append(batch.shape)
        artifact = workspace.file(f"artifact-{len(compiles)}")
        onnx_path = None if pinned else plan.analysis.onnx_path
        if onnx_path is None:
            onnx_path = workspace.file(f"model-{len(compiles)}.onnx")
            try:
                export_model(copy.deepcopy(model), batch, onnx_path)
            except Exception as e:
                if not pinned:
                    raise
                raise SpikeMeshError(f"input of shape {list(batch.shape)}: the model does not "
                                     f"export for it ({type(e).__name__}: {e})") from e
        options = plan.compiler_options
        explanation = compile_onnx(onnx_path, artifact, plan=True,
                                   analyze_options=options["analyze"],
                                   plan_options=_pinned_options(plan) if pinned
                                   else options["plan"])
        if plan.decided_by == "rules" and not pinned:
            complete_plan(plan, explanation)
        return artifact
    return artifact_for


def _pinned_options(plan: SNNDistributedPlan) -> Dict[str, object]:
    """The plan's compile options with what it decided fixed, for another input shape."""
    options = dict(plan.compiler_options["plan"])
    options["mode"] = "zero" if plan.optimizer_strategy == "zero" else plan.mode
    options["topology"] = ",".join(f"{axis}={size}" for axis, size
                                   in zip(plan.mesh_axes, plan.mesh_shape)) or None
    if plan.mode == "pp":
        options.update({"pp-schedule": plan.pp_schedule,
                        "pp-microbatches": plan.pp_microbatches,
                        "pp-virtual-stages": plan.pp_virtual_stages,
                        "pp-layout": "|".join(str(n) for n in plan.pp_layout),
                        "pp-delay-wgrad": plan.pp_delay_wgrad or None})
    return options


def _data_parallel_place(plan: SNNDistributedPlan, rank: int) -> Tuple[int, int]:
    """(rank, size) on the plan's dp axis: the rank's coordinate on its (row-major) mesh."""
    if plan.dp_mesh_dim < 0:
        return 0, 1
    mesh = DeviceMesh("cpu", tuple(plan.mesh_shape), tuple(plan.mesh_axes), rank)
    return mesh.get_coordinate()[plan.dp_mesh_dim], plan.mesh_shape[plan.dp_mesh_dim]


def _job_world_size(plan: SNNDistributedPlan) -> int:
    """The torchrun job's size (WORLD_SIZE; 1 without torchrun), which must be the plan's."""
    text = os.environ.get("WORLD_SIZE")
    size = int(text) if text and text.strip().isdigit() else 1
    if size != plan.world_size:
        launched = f"WORLD_SIZE={text}" if text else "one process (no torchrun)"
        raise ValueError(f"the plan's topology {plan.topology.text()} needs {plan.world_size} "
                         f"rank(s), but this job is {launched}; start it with torchrun "
                         f"--nproc_per_node {plan.world_size}")
    return size

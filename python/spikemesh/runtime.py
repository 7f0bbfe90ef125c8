"""``spikemesh.apply``: the planned model as SpikeMesh's compiled program in this process.

``runtime.model`` is an ``nn.Module`` whose forward runs the rank's program on SpikeMesh's
kernels (fused multi-step neurons, BPTT); its parameters are ``nn.Parameter`` tensors that the
program reads directly, so a loss written in Python and ``loss.backward()`` fill their ``.grad``
and any ``torch.optim`` optimizer steps them.
"""
from __future__ import annotations

import atexit
import contextlib
import copy
import os
from typing import Callable, Dict, List, Mapping, Optional, Tuple, Union

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from . import _spikemesh
from . import debug
from ._spikemesh import SpikeMeshError
from .checkpoint import CheckpointInfo, new_run_id, optimizer_rows, restore_optimizer
from .compiler import Workspace, compile_onnx, export_model
from .helpers import DeviceMesh, build_snn_optimizer
from .planning import SNNDistributedPlan, complete_plan

# A process joins a torchrun job once; it leaves at exit, while the interpreter is whole.
atexit.register(_spikemesh.shutdown_world)


class _Holder(nn.Module):
    """A plain submodule on the path of a parameter name (``features.0`` of
    ``features.0.weight``), so ``named_parameters()`` gives the PyTorch model's own keys."""


class CompiledModule(nn.Module):
    """One rank's program of the planned model as an ``nn.Module``.

    Its parameters and buffers carry the PyTorch model's names and start from its values
    (this rank's part of a tensor-parallel one, of world rank 0's model);
    ``forward`` takes what the PyTorch model takes (``[T, N, ...]``, or ``[N, ...]`` for a
    model that repeats its input over T) and returns what it returns. In ``train()`` mode the
    output has an autograd graph through the program; in ``eval()`` mode it has none.

    The program is compiled for the shape of the first batch it sees (``compile``), unless
    ``apply`` had an example input. Under the plans whose parameters are whole on every rank
    (none, dp, zero) the parameters exist from the start, so an optimizer can be built before
    the first forward; under tp, fsdp, fsdp_tp and pp they are this rank's parts, known once
    the program is compiled.
    """

    def __init__(self, *, state: Dict[str, torch.Tensor], trainable: Dict[str, bool],
                 distributed: bool, artifact_for: Callable[[torch.Tensor, bool], str],
                 whole_parameters: bool, data_parallel: Tuple[int, int]) -> None:
        super().__init__()
        self._program = None
        #: (rank, size) on the plan's data-parallel axis; the program's, once compiled.
        self.planned_data_parallel = data_parallel
        self._artifact_for = artifact_for
        self._distributed = distributed
        self._trainable = trainable
        # Only floating-point entries are program inputs (not num_batches_tracked).
        self._initial = {k: v.detach().clone() for k, v in state.items()
                         if v.is_floating_point()}
        self._tensors: Dict[str, torch.Tensor] = {}
        self._shards: Dict[str, nn.Parameter] = {}
        self._gradient_sync = True
        self._static_input = False
        self._compiled_shape: Optional[Tuple[int, ...]] = None
        #: The compiled artifact of each input shape (apart from the batch) run so far.
        self._artifacts: Dict[Tuple[int, ...], str] = {}
        self._bound_names: set = set()
        self._finish_queued = False
        if whole_parameters:
            for name, tensor in self._initial.items():
                held = tensor.clone()
                if trainable.get(name, False):
                    held = nn.Parameter(held)
                self._register(name, held, parameter=isinstance(held, nn.Parameter))
                self._tensors[name] = held

    @property
    def compiled(self) -> bool:
        """Whether the program exists (after ``compile`` or the first forward)."""
        return self._program is not None

    def compile(self, example_input: torch.Tensor) -> None:
        """Compiles and binds the program for ``example_input``'s shape (collective on many
        ranks: every rank calls it with its batch); does nothing when the program runs that
        shape already. A batch of another shape apart from its size (another T, another
        image size) switches to that shape's program, compiled once and kept: the current
        values of every parameter and buffer carry over, and the optimizer keeps stepping
        the same ``nn.Parameter`` objects."""
        if not isinstance(example_input, torch.Tensor):
            raise TypeError(f"input must be a torch.Tensor, got {type(example_input).__name__}")
        if self._program is None:
            self._install(self._artifact_for(example_input, False), example_input)
        if self._shape_key(example_input) != self._compiled_shape:
            self._switch_to(example_input)

    def _install(self, artifact: str, x: torch.Tensor,
                 whole: Optional[Dict[str, torch.Tensor]] = None) -> None:
        """The program of ``artifact`` over this module's tensors (from ``whole`` when
        given: the values another shape's program held)."""
        program = _spikemesh.Program(artifact, self._distributed)
        if not self._artifacts:
            self._static_input = x.dim() < len(program.input_shape)
        self._bind(program, whole)
        program.gradient_sync = self._gradient_sync
        placed = (program.data_parallel_rank, program.data_parallel_size)
        if placed != self.planned_data_parallel:
            raise RuntimeError(f"the program runs as data-parallel rank {placed[0]} of "
                               f"{placed[1]}, the plan said {self.planned_data_parallel[0]} "
                               f"of {self.planned_data_parallel[1]}")
        self._program = program
        shape = list(program.input_shape)
        self._compiled_shape = tuple(shape[2:]) if self._static_input else \
            (shape[0],) + tuple(shape[2:])
        self._artifacts[self._compiled_shape] = artifact

    def _switch_to(self, x: torch.Tensor) -> None:
        """From the current program to the one for ``x``'s shape (compiled on first use)."""
        key = self._shape_key(x)
        artifact = self._artifacts.get(key) or self._artifact_for(x, True)
        old = self._program
        whole = old.whole_state()
        memopt = (old.recomputed_stages, old.compressed_inputs) if old.is_pipeline else None
        # fsdp frees its whole parameters between uses: the next program gathers into new
        # ones (its pieces become the same nn.Parameter objects' data, in _bind).
        if old.fully_sharded:
            for name, kind in old.entries():
                if kind == "parameter":
                    del self._tensors[name]
        # The old program's gradient hooks and process groups go before the new one's.
        self._program = None
        del old
        self._install(artifact, x, whole)
        if memopt is not None:
            self._program.recomputed_stages, self._program.compressed_inputs = memopt
        if self._compiled_shape != key:
            raise SpikeMeshError(f"input of shape {list(x.shape)}: the compiler made a program "
                                 f"for {list(self._compiled_shape)} apart from the batch")

    @property
    def artifact(self) -> Optional[str]:
        """The artifact directory of the program this module runs now (``snn-run`` runs it
        too), or None before the first compile. It lives as long as the runtime."""
        return self._artifacts.get(self._compiled_shape) if self._program is not None else None

    @property
    def compiled_shapes(self) -> List[Tuple[int, ...]]:
        """The input shapes apart from the batch (``[T, ...]``, or ``[...]`` for a static
        input) that have a compiled program, in the order they were first run."""
        return list(self._artifacts)

    @property
    def gradient_sync(self) -> bool:
        """Off: backwards accumulate this rank's gradients without averaging them."""
        return self._gradient_sync

    @gradient_sync.setter
    def gradient_sync(self, enabled: bool) -> None:
        if self._program is not None:
            self._program.gradient_sync = enabled
        self._gradient_sync = bool(enabled)

    def model_names(self) -> List[str]:
        """Every parameter and buffer of the whole model the program reads."""
        if self._program is not None:
            return list(self._program.model_names())
        return list(self._initial)

    def whole_state(self) -> Dict[str, torch.Tensor]:
        """Whole tensors by name (collective on many ranks once compiled)."""
        if self._program is not None:
            return self._program.whole_state()
        return {name: self._tensors.get(name, tensor).detach().clone()
                for name, tensor in self._initial.items()}

    def load_whole_state(self, whole: Dict[str, torch.Tensor]) -> None:
        """Every tensor this rank holds takes its part of ``whole`` (by name), in place."""
        if self._program is not None:
            self._program.load_whole_state(whole)
            return
        with torch.no_grad():
            for name, value in whole.items():
                self._initial[name] = value.detach().to(torch.float32).clone()
                if name in self._tensors:
                    self._tensors[name].copy_(value)

    def _bind(self, program, whole: Optional[Dict[str, torch.Tensor]] = None) -> None:
        """This rank's parts of the whole tensors (rank 0's initial ones, or ``whole``),
        adopted by the program: kept in the tensors already registered, or registered now
        under the model's names."""
        if whole is None:
            whole = {name: self._tensors.get(name, self._initial.get(name))
                     for name in program.model_names()}
        elif {n for n, _ in program.entries()} != self._bound_names:
            raise SpikeMeshError("the program for this input shape holds other parameters "
                                 "than the first one; apply the plan again for this shape")
        parts = program.local_parts({k: v for k, v in whole.items() if v is not None})
        sharded = program.fully_sharded
        for name, kind in program.entries():
            tensor, held = parts[name], self._tensors.get(name)
            if held is not None:
                if held.shape != tensor.shape:
                    raise ValueError(f"{name}: the program holds {list(tensor.shape)}, the "
                                     f"module {list(held.shape)}")
                with torch.no_grad():
                    held.copy_(tensor)
                continue
            trainable = self._trainable.get(name, True)
            if kind == "parameter":
                tensor.requires_grad_(trainable)
                if not sharded:
                    tensor = nn.Parameter(tensor, requires_grad=trainable)
                    self._register(name, tensor, parameter=True)
            else:
                self._register(name, tensor, parameter=False)
            self._tensors[name] = tensor
        program.bind({name: self._tensors[name] for name, _ in program.entries()})
        self._bound_names = {name for name, _ in program.entries()}
        # fsdp: the rank's pieces of the parameters are what the optimizer steps; another
        # shape's program keeps the same nn.Parameter objects over its own pieces.
        for name, values, _ in program.sharded_parameters():
            if name in self._shards:
                self._shards[name].data = values
                continue
            piece = nn.Parameter(values, requires_grad=self._trainable.get(name, True))
            self._register(name, piece, parameter=True)
            self._shards[name] = piece

    def _shape_key(self, x: torch.Tensor) -> Tuple[int, ...]:
        """The input's shape without its batch dimension, which the program takes at any
        size."""
        return tuple(x.shape[1:]) if self._static_input else \
            (x.shape[0],) + tuple(x.shape[2:])

    def _ready_for(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"input must be a torch.Tensor, got {type(x).__name__}")
        self.compile(x)

    # The ZeroRedundancyOptimizer's view of the data-parallel group (the plan's place, which
    # every program is checked against), before and after compile.
    @property
    def data_parallel_size(self) -> int:
        return self.planned_data_parallel[1]

    @property
    def data_parallel_rank(self) -> int:
        return self.planned_data_parallel[0]

    def broadcast(self, tensor: torch.Tensor, root: int) -> None:
        self._require_program("broadcast").broadcast(tensor, root)

    def _require_program(self, what: str):
        if self._program is None:
            raise RuntimeError(f"{what}: the program is compiled at the first forward; run "
                               f"runtime.model on a batch first (or apply with example_input)")
        return self._program

    def _register(self, name: str, tensor: torch.Tensor, *, parameter: bool) -> None:
        owner, leaf = self._owner(name)
        if parameter:
            owner.register_parameter(leaf, tensor)
        else:
            owner.register_buffer(leaf, tensor)

    def _owner(self, name: str) -> Tuple[nn.Module, str]:
        *path, leaf = name.split(".")
        module: nn.Module = self
        for part in path:
            if part not in module._modules:
                module.add_module(part, _Holder())
            module = module._modules[part]
        return module, leaf

    def _repeat_time(self, x: torch.Tensor) -> int:
        return self._program.input_shape[0] if self._static_input else 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._ready_for(x)
        out = self._program.forward(x.detach().to(torch.float32), self.training,
                                    self._repeat_time(x))
        if self._program.gradient_sync and out.requires_grad:
            out.register_hook(self._queue_finish_backward)
        return out

    def pipeline_step(self, x: torch.Tensor, labels: torch.Tensor, criterion) -> torch.Tensor:
        """A pipeline plan's training step (SNNDistributedRuntime.train_step)."""
        self._ready_for(x)
        if not isinstance(labels, torch.Tensor):
            raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
        loss = self._program.train_step(x.detach().to(torch.float32), labels.detach(),
                                        self._repeat_time(x), criterion)
        return torch.tensor(loss, dtype=torch.float32)

    def _queue_finish_backward(self, grad: torch.Tensor) -> torch.Tensor:
        # The gradient all-reduce completes when the whole backward has run, as under
        # DistributedDataParallel: once per backward, however many outputs it goes through.
        if not self._finish_queued:
            self._finish_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._finish_backward)
        return grad

    def _finish_backward(self) -> None:
        self._finish_queued = False
        self._program.finish_backward()
        for name, _, grad in self._program.sharded_parameters():
            piece = self._shards[name]
            if grad is None or not piece.requires_grad:
                continue
            if piece.grad is None:
                piece.grad = grad.clone()
            else:
                piece.grad.add_(grad)


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

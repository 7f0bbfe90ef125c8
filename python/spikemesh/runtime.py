"""``spikemesh.apply``: the planned model as SpikeMesh's compiled program in this process.

``runtime.model`` is an ``nn.Module`` whose forward runs the rank's program on SpikeMesh's
kernels (fused multi-step neurons, BPTT); its parameters are ``nn.Parameter`` tensors that the
program reads directly, so a loss written in Python and ``loss.backward()`` fill their ``.grad``
and any ``torch.optim`` optimizer steps them.
"""
from __future__ import annotations

import atexit
import contextlib
import os
from typing import Dict, List, Mapping, Optional, Tuple

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from . import _spikemesh
from . import debug
from .compiler import Workspace, compile_onnx
from .helpers import DeviceMesh, build_snn_optimizer
from .planning import SNNDistributedPlan

# A process joins a torchrun job once; it leaves at exit, while the interpreter is whole.
atexit.register(_spikemesh.shutdown_world)


class _Holder(nn.Module):
    """A plain submodule on the path of a parameter name (``features.0`` of
    ``features.0.weight``), so ``named_parameters()`` gives the PyTorch model's own keys."""


class CompiledModule(nn.Module):
    """One rank's program of an artifact as an ``nn.Module``.

    Its parameters and buffers carry the PyTorch model's names and start from its values
    (this rank's part of a tensor-parallel one, of world rank 0's model);
    ``forward`` takes what the PyTorch model takes (``[T, N, ...]``, or ``[N, ...]`` for a
    model that repeats its input over T) and returns what it returns. In ``train()`` mode the
    output has an autograd graph through the program; in ``eval()`` mode it has none.
    """

    def __init__(self, artifact_dir: str, state: Dict[str, torch.Tensor],
                 trainable: Dict[str, bool], static_input: bool,
                 distributed: bool = False) -> None:
        super().__init__()
        self._program = _spikemesh.Program(artifact_dir, distributed)
        whole = {k: v.detach() for k, v in state.items()}
        parts = self._program.local_parts(whole)
        sharded = self._program.fully_sharded
        tensors = {}
        for name, kind in self._program.entries():
            tensor = parts[name]
            if kind == "parameter":
                tensor.requires_grad_(trainable.get(name, True))
                if not sharded:
                    tensor = nn.Parameter(tensor, requires_grad=trainable.get(name, True))
                    self._register(name, tensor, parameter=True)
            else:
                self._register(name, tensor, parameter=False)
            tensors[name] = tensor
        self._program.bind(tensors)
        # fsdp: the rank's pieces of the parameters are what the optimizer steps.
        self._shards: Dict[str, nn.Parameter] = {}
        for name, values, _ in self._program.sharded_parameters():
            piece = nn.Parameter(values, requires_grad=trainable.get(name, True))
            self._register(name, piece, parameter=True)
            self._shards[name] = piece
        self._static_input = static_input
        self._finish_queued = False

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
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"input must be a torch.Tensor, got {type(x).__name__}")
        shape = self._program.input_shape
        return shape[0] if self._static_input and x.dim() == len(shape) - 1 else 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        repeat = self._repeat_time(x)
        out = self._program.forward(x.detach().to(torch.float32), self.training, repeat)
        if self._program.gradient_sync and out.requires_grad:
            out.register_hook(self._queue_finish_backward)
        return out

    def pipeline_step(self, x: torch.Tensor, labels: torch.Tensor, criterion) -> torch.Tensor:
        """A pipeline plan's training step (SNNDistributedRuntime.train_step)."""
        repeat = self._repeat_time(x)
        if not isinstance(labels, torch.Tensor):
            raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
        loss = self._program.train_step(x.detach().to(torch.float32), labels.detach(), repeat,
                                        criterion)
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
                 workspace: Workspace) -> None:
        self.model = model
        self.plan = plan
        self.mode = plan.mode
        self.analysis = plan.analysis
        self._workspace = workspace
        program = model._program
        #: This process's rank and the job's size (0 and 1 in one process).
        self.rank = program.rank
        self.world_size = program.world_size
        #: This rank's place on the data-parallel axis, which splits every global batch.
        self.dp_rank = program.data_parallel_rank
        self.dp_size = program.data_parallel_size
        # The whole model's parameter and buffer names (every rank's program together).
        self._entry_names = program.model_names()
        debug._register(self)

    def build_optimizer(self, optimizer_cls=torch.optim.Adam, lr: float = 1e-3,
                        weight_decay: float = 0.0, **kwargs) -> torch.optim.Optimizer:
        """An optimizer of ``optimizer_cls`` over this rank's trainable parameters; under a
        plan with ``optimizer_strategy == "zero"`` on several ranks, a
        ``ZeroRedundancyOptimizer`` that keeps each rank's share of its state. A rank that
        holds no parameter (a pipeline stage of neurons and pooling only) gets one over an
        empty placeholder, so the loop's calls work unchanged."""
        sharding = "zero" if self.plan.optimizer_strategy == "zero" and self.dp_size > 1 \
            else "none"
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
        if self.model._program.is_pipeline:
            return self.model.pipeline_step(images, labels, criterion)
        loss = criterion(self.model(images), labels)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise ValueError("criterion must return a scalar torch.Tensor")
        loss.backward()
        return loss.detach()

    @contextlib.contextmanager
    def no_sync(self):
        """Backwards inside accumulate this rank's gradients without averaging them over the
        data-parallel ranks (as ``DistributedDataParallel.no_sync``); the first backward after
        it averages everything accumulated. Does nothing in one process."""
        program = self.model._program
        before = program.gradient_sync
        program.gradient_sync = False
        try:
            yield
        finally:
            program.gradient_sync = before

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
        return [{"kind": kind, "mesh_axis": axis, "calls": calls, "bytes": nbytes,
                 "seconds": seconds}
                for kind, axis, calls, nbytes, seconds in self.model._program.comm_stats()]

    def reset_comm_stats(self) -> None:
        """Sets every comm_stats() counter to zero."""
        self.model._program.reset_comm_stats()

    def state_dict(self) -> Dict[str, torch.Tensor]:
        """Whole tensors under the PyTorch model's keys (collective on many ranks: the
        tensor-parallel parts are gathered)."""
        return self.model._program.whole_state()

    def load_state_dict(self, state_dict: Dict[str, torch.Tensor], strict: bool = True) -> None:
        """Loads whole tensors under the PyTorch model's keys (what ``state_dict()`` returns,
        or the PyTorch model's own ``state_dict()``) into every rank's parameters and buffers
        (this rank's part of each). Keys the compiled program does not read (BatchNorm's
        ``num_batches_tracked``) are ignored; with ``strict``, a missing key raises KeyError.
        Call it on every rank (collective under fsdp)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping of names to tensors, got "
                            f"{type(state_dict).__name__}")
        names = self._entry_names
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
        self.model._program.load_whole_state(whole)


def apply(*, model: nn.Module, plan: SNNDistributedPlan, device_type: str = "cpu",
          device_mesh: Optional[object] = None) -> SNNDistributedRuntime:
    """Compiles the planned model and returns its runtime in this process.

    Args:
        model: the PyTorch model that was analysed; its current weights are the initial ones.
        plan: from ``spikemesh.plan``.
        device_type: ``"cpu"``.
        device_mesh: None, or a ``build_device_mesh`` mesh of the plan's world size (the
            plan's own mesh axes are used either way).

    Raises:
        TypeError / ValueError: arguments of the wrong kind or value (a plan for another number
            of ranks than this job's); a compile error as ``SpikeMeshError``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(plan, SNNDistributedPlan):
        raise TypeError(f"plan must be what spikemesh.plan returned, got {type(plan).__name__}")
    if device_type != "cpu":
        raise ValueError(f"device_type {device_type!r}: this build runs on 'cpu'")
    if device_mesh is not None:
        if not isinstance(device_mesh, DeviceMesh):
            raise TypeError(f"device_mesh must come from spikemesh.build_device_mesh, got "
                            f"{type(device_mesh).__name__}")
        if device_mesh.size() != plan.world_size:
            raise ValueError(f"device_mesh {device_mesh.mesh_shape} has {device_mesh.size()} "
                             f"ranks, but the plan's topology {plan.topology.text()} has "
                             f"{plan.world_size}")
    distributed = _job_world_size(plan) > 1
    if os.environ.get("SPIKEMESH_TUNE_PROCESS", "1") != "0":
        _spikemesh.tune_process()
    analysis = plan.analysis
    workspace = Workspace(model)
    artifact = workspace.file("artifact")
    compile_onnx(analysis.onnx_path, artifact, plan=True,
                 analyze_options=plan.compiler_options["analyze"],
                 plan_options=plan.compiler_options["plan"])
    state = model.state_dict()
    trainable = {n: p.requires_grad for n, p in model.named_parameters()}
    static = analysis.example_input is not None and \
        analysis.example_input.dim() < len(_spikemesh.artifact_input_shape(artifact))
    compiled = CompiledModule(artifact, state, trainable, static, distributed)
    compiled.train(model.training)
    return SNNDistributedRuntime(compiled, plan, workspace)


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

"""``runtime.model``: one rank's compiled program of the planned model as an ``nn.Module``.

Its parameters are ``nn.Parameter`` tensors that the program reads directly, so a loss
written in Python and ``loss.backward()`` fill their ``.grad`` and any ``torch.optim``
optimizer steps them. It compiles a program per input shape (apart from the batch size) at the
first batch of that shape and keeps it.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import nn

from . import _spikemesh
from ._spikemesh import SpikeMeshError


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

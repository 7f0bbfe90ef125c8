"""The tensor functions and methods a SpikingJelly forward calls between modules: shape
queries, flatten / view / reshape, torch.cat, direct encoding (x.unsqueeze(0).repeat(T, ...) /
.expand(T, ...)), contiguous. `TensorFunctions` is mixed into the fx node translator.

Reshapes are read from the traced shapes (the interpreter ran the forward once), not from
their arguments: `x.view(x.shape[0], x.shape[1], -1)` and `torch.flatten(x, 2)` are the same
per-step flatten, whatever expression computed the sizes."""
from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.fx

from .fold import FoldRegion
from .names import INPUT_NAME

_SHAPE_ATTRS = ("shape", "ndim", "dtype", "device")
_SHAPE_METHODS = ("size", "dim")
FLATTENS = (torch.flatten, "flatten", torch.reshape, "reshape", "view")
UNSQUEEZES = (torch.unsqueeze, "unsqueeze")
REPEATS = ("repeat", "expand")
CATS = (torch.cat, torch.concat)

Value = Tuple[str, bool]  # (ONNX value name, time-major)


def _fx_nodes(args: Any) -> List[torch.fx.Node]:
    out = []
    torch.fx.node.map_arg(args, out.append)
    return out


def is_unsqueeze(n: torch.fx.Node) -> bool:
    """True for torch.unsqueeze(x, ...) or x.unsqueeze(...)."""
    return n.op in ("call_function", "call_method") and n.target in UNSQUEEZES


def direct_encoding_steps(placeholder: torch.fx.Node,
                          env: Dict[torch.fx.Node, Any]) -> Optional[int]:
    """T when the model input [N, ...] is repeated over T by x.unsqueeze(0).repeat(T, ...) or
    .expand(T, ...) (SpikingJelly's direct encoding inside forward); None when the input is
    already time-major. Raises when two encodings disagree on T."""
    steps = {int(env[r].shape[0]) for u in placeholder.users if is_unsqueeze(u)
             for r in u.users if r.op == "call_method" and r.target in REPEATS}
    if len(steps) > 1:
        raise ValueError(f"the input is repeated over different numbers of steps {sorted(steps)}")
    if not steps and any(is_unsqueeze(u) for u in placeholder.users):
        raise ValueError("the input is unsqueezed but never repeated over T "
                         "(direct encoding is x.unsqueeze(0).repeat(T, ...) or .expand(T, ...))")
    return steps.pop() if steps else None


class TensorFunctions:
    """Mixin of the translator: needs self.g, self.env, self.values, self.arg, self.shape_of,
    self.input_node, self.shapes and self.unsqueezed."""

    def tensor_function(self, n: torch.fx.Node, name: str) -> Tuple[Optional[Value], bool]:
        """Returns (value, handled): value None means 'not a tensor' (a shape, an
        intermediate of direct encoding)."""
        if self.is_shape_value(n):
            self.shapes.add(n)
            return None, True
        if n.target in FLATTENS:
            return self.reshape_like(n, name), True
        if n.target in UNSQUEEZES:
            return self.unsqueeze(n), True
        if n.target in REPEATS:
            return self.repeat_over_time(n, name), True
        if n.target in CATS:
            return self.concat(n), True
        if n.target == "contiguous" and len(n.args) == 1:
            return self.arg(n.args[0], n.name), True
        return None, False

    def is_shape_value(self, n: torch.fx.Node) -> bool:
        """True when `n` computes sizes (x.shape, x.size(), arithmetic on those), not a tensor."""
        if n.target is getattr and len(n.args) == 2 and n.args[1] in _SHAPE_ATTRS:
            return True
        if n.op == "call_method" and n.target in _SHAPE_METHODS:
            return True
        nodes = _fx_nodes((n.args, n.kwargs))
        # Arithmetic and indexing on shapes (x.shape[0] * x.shape[1]) is still a shape.
        return n.target in (operator.getitem, operator.mul, operator.floordiv, operator.add,
                            operator.sub) and bool(nodes) and \
            all(a in self.shapes for a in nodes)

    def reshape_like(self, n: torch.fx.Node, name: str) -> Value:
        """A flatten / view / reshape that keeps [T, N, ...]: a fold region's reshape."""
        x, tm = self.arg(n.args[0], n.name)
        src, out = list(self.env[n.args[0]].shape), list(self.env[n].shape)
        if not tm:
            if out == src:
                return x, False
            raise ValueError(f"'{n.name}': {name} of a tensor that is not time-major "
                             f"({src} -> {out}) is unsupported")
        if len(out) < 3 or out[:2] != src[:2]:
            raise ValueError(f"'{n.name}': {name} {src} -> {out} must keep the time and batch "
                             "dims [T, N, ...] (flatten from dim 2: torch.flatten(x, 2))")
        if out == src:
            return x, True
        region = FoldRegion(self.g, n.name, x, self.env[n.args[0]])
        if len(out) == 3 and len(src) > 3:
            region.flatten(n.name)  # the profile's Flatten: no reshape op needed
        else:
            region.reshape(out[2:])
        return region.close(), True

    def concat(self, n: torch.fx.Node) -> Value:
        """torch.cat of time-major tensors along a per-step dim (channels: dim 2)."""
        tensors = n.args[0]
        dim = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)
        if not isinstance(tensors, (list, tuple)) or len(tensors) < 2:
            raise ValueError(f"'{n.name}': torch.cat needs a list of at least two tensors")
        values = [self.arg(t, n.name) for t in tensors]
        rank = len(self.env[n].shape)
        axis = dim % rank if isinstance(dim, int) else None
        if axis is None or axis < 2 or not all(tm for _, tm in values):
            raise ValueError(f"'{n.name}': torch.cat is supported on time-major [T, N, ...] "
                             f"tensors along a dim after T and N (channels: 2), got dim={dim}")
        return self.g.node("Concat", [v for v, _ in values], self.g.unique(n.name),
                           self.shape_of(n, True), axis=axis), True

    def unsqueeze(self, n: torch.fx.Node) -> None:
        """x.unsqueeze(0) of the [N, ...] input, the first half of direct encoding."""
        dim = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim")
        if n.args[0] is self.input_node and not self.values[n.args[0]][1] and dim == 0:
            self.unsqueezed[n] = n.args[0]
            return None
        raise ValueError(f"'{n.name}': unsqueeze is supported only as x.unsqueeze(0) of the "
                         "model's [N, ...] input followed by .repeat(T, ...) or .expand(T, ...) "
                         "(direct encoding)")

    def repeat_over_time(self, n: torch.fx.Node, name: str) -> Value:
        """.repeat(T, ...) / .expand(T, ...) of the unsqueezed input: the graph's input."""
        src = self.unsqueezed.get(n.args[0])
        out = list(self.env[n].shape)
        if src is None:
            raise ValueError(f"'{n.name}': {name} is supported only on x.unsqueeze(0) of the "
                             "model's input (direct encoding)")
        if out[0] != self.g.T or out[1:] != list(self.env[src].shape):
            raise ValueError(f"'{n.name}': {name} must repeat the [N, ...] input over T only, "
                             f"got {out} from {list(self.env[src].shape)}")
        return INPUT_NAME, True

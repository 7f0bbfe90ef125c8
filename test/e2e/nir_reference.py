"""NIR's equations, independently of the compiler: a NIR file read with h5py and evaluated
with NumPy in float64 (NirGraph.run), and the same graph as a PyTorch module for training
(TorchNirModel), both from NIR's primitive definitions (neuromorphs/NIR, nir/ir/*.py) stepped
by forward Euler with a time step dt, as docs/nir.md specifies (the module: IF, Conv2d,
SumPool2d, Flatten and Affine, with the sigmoid surrogate of alpha 4 the importer gives):

  IF        v += dt r x;  z = v > v_threshold;  v = v_reset where z     (v starts at v_reset)
  I         v += dt r x                                                 (output v, from 0)
  LI        v += dt / tau ((v_leak - v) + r x)                         (output v, from v_leak)
  LIF       LI, then z and the reset as IF                              (from v_leak)
  CubaLI(F) i += dt / tau_syn (-i + w_in x), then LI(F) driven by r i   (i from 0)
  Threshold z = x > threshold
  Delay     y[t] = x[t - K], K = delay / dt steps (0 before the first K steps)
  Affine W x + b; Linear W x; Scale s x; Conv2d; SumPool2d the window's sum; AvgPool2d its mean;
  Flatten over start_dim..end_dim of one sample; edges into one node add up.

A cycle (a neuron fed back its own output through an Affine) is broken at the node of the
cycle that is not a neuron: that node reads the neuron's output of the step before (zeros at
step 0), so the neuron's input at step t adds W out[t-1] + b.

The module (TorchNirModel) holds IF and CubaLIF neurons, a CubaLIF with such a feedback
stepped one step at a time.
"""
import h5py
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EPS32 = float(np.finfo(np.float32).eps)

NEURONS = {"IF", "I", "LI", "LIF", "CubaLI", "CubaLIF", "Threshold", "Delay"}
SPIKING = {"IF", "LIF", "CubaLIF", "Threshold"}


def read_nir(path):
    """(nodes, edges): name -> {"type": str, param: ndarray}, [(source, target)]."""
    with h5py.File(path, "r") as f:
        graph = f["node"]
        nodes = {}
        for name, group in graph["nodes"].items():
            fields = {}
            for key, dataset in group.items():
                if isinstance(dataset, h5py.Dataset):
                    value = dataset[()]
                    fields[key] = value.decode() if isinstance(value, bytes) else np.asarray(value)
            nodes[name] = fields
        edges = [(a.decode(), b.decode()) for a, b in graph["edges"][()]]
    return nodes, edges


def on_cycle(name, edges, among):
    """Whether `name` reaches itself through nodes of `among`."""
    seen, todo = set(), [b for a, b in edges if a == name and b in among]
    while todo:
        n = todo.pop()
        if n == name:
            return True
        if n not in seen:
            seen.add(n)
            todo += [b for a, b in edges if a == n and b in among]
    return False


def topological(nodes, edges):
    """Each node after its inputs; a cycle broken at its node that is not a neuron, which then
    comes first and reads the cycle's neuron from the step before (its input not yet
    computed this step)."""
    pending = {name: 0 for name in nodes}
    for _, b in edges:
        pending[b] += 1
    ready = sorted(n for n, k in pending.items() if k == 0)
    order = []
    while len(order) < len(nodes):
        while ready:
            name = ready.pop(0)
            order.append(name)
            for a, b in edges:
                if a == name and b not in order:
                    pending[b] -= 1
                    if pending[b] == 0:
                        ready.append(b)
        rest = {n for n in nodes if n not in order}
        feedback = sorted(n for n in rest if nodes[n]["type"] not in NEURONS
                          and on_cycle(n, edges, rest))
        if rest and not feedback:
            raise ValueError("the graph has a cycle through neurons only")
        if feedback:
            pending[feedback[0]] = 0
            ready.append(feedback[0])
    return order


def one(node, key, default=None):
    """A per-neuron parameter's single value (the node holds one value for all)."""
    values = np.unique(param(node, key, default))
    assert values.size == 1, f"{key} varies across neurons"
    return float(values[0])


def param(node, key, default=None):
    """A per-neuron parameter as float64, one value per neuron (NIR's arrays of the neurons'
    shape broadcast against a step's [N, ...] values) or one for all."""
    if key not in node:
        if default is None:
            raise KeyError(key)
        return np.float64(default)
    return np.asarray(node[key], dtype=np.float64)


def pair(node, key, default):
    value = np.asarray(node.get(key, default)).reshape(-1)
    return (int(value[0]), int(value[-1]))


def padding(node):
    """A Conv2d's padding: numbers, "valid" (none) or "same" (stride 1: half of the dilated
    kernel's extra span on each side, as PyTorch's padding="same")."""
    value = node.get("padding", 0)
    if not isinstance(value, str):
        return pair(node, "padding", 0)
    if value == "valid":
        return (0, 0)
    assert value == "same" and pair(node, "stride", 1) == (1, 1), value
    kernel, dilation = np.asarray(node["weight"]).shape[2:], pair(node, "dilation", 1)
    return tuple(d * (k - 1) // 2 for k, d in zip(kernel, dilation))


def conv2d(x, w, b, stride, padding, dilation, groups):
    """x [N, C, H, W] (float64) correlated with w [O, C/g, kh, kw], as PyTorch's conv2d."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    ho = (x.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (x.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dilation[0], j * dilation[1]
                patch = xs[:, :, r0:r0 + stride[0] * (ho - 1) + 1:stride[0],
                           c0:c0 + stride[1] * (wo - 1) + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


class NirGraph:
    """A NIR file's graph evaluated step by step in float64."""

    def __init__(self, path, dt):
        self.nodes, self.edges = read_nir(path)
        self.order = topological(self.nodes, self.edges)
        self.dt = dt
        self.inputs = sorted(n for n, v in self.nodes.items() if v["type"] == "Input")
        self.outputs = sorted(n for n, v in self.nodes.items() if v["type"] == "Output")

    def layer(self, node, x, mode="value"):
        """A stateless node on one step's [N, ...] input. mode "abs": |W| applied to x (no
        bias), a bound on the terms a sum adds; "count": how many terms of each sum are not
        zero (x an indicator)."""
        kind = node["type"]
        w = node.get("weight")
        if w is not None and mode != "value":
            w = np.abs(w) if mode == "abs" else (w != 0)
        bias = node.get("bias") if mode == "value" else None
        if kind in ("Affine", "Linear"):
            out = x @ np.asarray(w, np.float64).T
            return out + bias if kind == "Affine" and bias is not None else out
        if kind == "Conv2d":
            return conv2d(x, np.asarray(w, np.float64), bias, pair(node, "stride", 1),
                          padding(node), pair(node, "dilation", 1),
                          int(np.asarray(node.get("groups", 1))))
        if kind in ("SumPool2d", "AvgPool2d"):
            k = pair(node, "kernel_size", None)
            ones = np.ones((x.shape[1], 1, *k))
            out = conv2d(x, ones, None, pair(node, "stride", k), pair(node, "padding", 0),
                         (1, 1), x.shape[1])
            return out / (k[0] * k[1]) if kind == "AvgPool2d" and mode != "count" else out
        if kind == "Scale":
            scale = np.asarray(node["scale"], np.float64)
            return x * (np.abs(scale) if mode == "abs" else 1.0 if mode == "count" else scale)
        if kind == "Flatten":
            start, end = int(node.get("start_dim", 0)), int(node.get("end_dim", -1))
            rank = x.ndim - 1
            start, end = start % rank + 1, end % rank + 1
            return x.reshape(*x.shape[:start], -1, *x.shape[end + 1:])
        raise ValueError(f"no NumPy equation for {kind}")

    def rounding(self, node, x, err):
        """The layer's output and a bound on how far float32 arithmetic in any order can
        move it: each sum of k terms rounds by at most k * eps of the sum of its |terms|
        (the classic bound), plus the input's own error carried through |W|."""
        value = self.layer(node, x)
        if node["type"] == "Flatten":
            return value, self.layer(node, err)
        terms = self.layer(node, np.abs(x), "abs")
        count = self.layer(node, (x != 0).astype(np.float64), "count")
        if "bias" in node:
            terms, count = terms + np.abs(self.layer(node, np.zeros_like(x))), count + 1
        return value, self.layer(node, err, "abs") + (count + 1) * EPS32 * terms

    def initial(self, node, shape):
        kind = node["type"]
        if kind == "IF":
            v = param(node, "v_reset", 0.0)
        elif kind in ("I", "Threshold", "Delay"):
            v = 0.0
        else:
            v = param(node, "v_leak")
        zero = np.zeros(shape)
        return {"v": np.broadcast_to(v, shape).copy(), "i": zero, "ev": zero, "ei": zero}

    def neuron(self, node, x, err, state):
        """One Euler step. Returns (output, its error bound, the distance of v to the
        threshold or None, that distance's error bound). Each float32 operation of the step
        rounds by eps of its operands' magnitude; errors carry from step to step until a
        reset sets v exactly."""
        kind, dt = node["type"], self.dt
        if kind == "Delay":  # a queue of the last K inputs and their error bounds
            steps = int(round(one(node, "delay") / dt))
            queue = state.setdefault("queue", [(np.zeros_like(x), np.zeros_like(x))] * steps)
            queue.append((x, err * np.ones_like(x)))
            out, out_err = queue.pop(0)
            return out, out_err, None, None
        if kind == "Threshold":
            thr = param(node, "threshold")
            return (x > thr).astype(np.float64), 0.0, x - thr, err + EPS32 * np.abs(x - thr)
        drive, edrive = x, err
        if kind in ("CubaLI", "CubaLIF"):
            i, a = state["i"], dt / param(node, "tau_syn")
            w_in = param(node, "w_in", 1.0)
            state["i"] = i + a * (-i + w_in * x)
            state["ei"] = state["ei"] + a * np.abs(w_in) * err + 6 * EPS32 * (
                np.abs(i) + np.abs(w_in * x) + np.abs(state["i"]))
            drive, edrive = state["i"], state["ei"]
        v, ev = state["v"], state["ev"]
        if kind in ("IF", "I"):
            gain = dt * param(node, "r")
            h = v + gain * drive
        else:
            tau = param(node, "tau_mem" if kind.startswith("Cuba") else "tau")
            gain = dt / tau * param(node, "r")
            h = v + dt / tau * ((param(node, "v_leak") - v) + param(node, "r") * drive)
        eh = ev + np.abs(gain) * edrive + 6 * EPS32 * (
            np.abs(v) + np.abs(gain * drive) + np.abs(h) + np.abs(param(node, "v_leak", 0.0)))
        if kind not in SPIKING:
            state["v"], state["ev"] = h, eh
            return h, eh, None, None
        thr = param(node, "v_threshold")
        z = h > thr
        state["v"] = np.where(z, param(node, "v_reset", 0.0), h)
        state["ev"] = np.where(z, 0.0, eh)
        return z.astype(np.float64), 0.0, h - thr, eh + EPS32 * np.abs(h - thr)

    def run(self, x):
        """x [T, N, ...] for the one Input. Returns (outputs [T, N, ...] per Output node,
        per spiking node its spike rate, and per sample whether every spike of every step is
        decided beyond float32 roundoff: |v - threshold| above its error bound). Sets
        output_errors: per Output node, the bound on each output's float32 roundoff."""
        assert len(self.inputs) == 1
        T, N = x.shape[:2]
        states, rates, values, errors = {}, {}, {}, {}
        safe = np.ones(N, dtype=bool)
        outputs = {name: [] for name in self.outputs}
        self.output_errors = {name: [] for name in self.outputs}
        for t in range(T):
            before, before_errors = values, errors
            values = {self.inputs[0]: x[t].astype(np.float64)}
            errors = {self.inputs[0]: np.zeros(x[t].shape)}
            for name in self.order:
                node = self.nodes[name]
                if node["type"] == "Input":
                    continue
                src = [a for a, b in self.edges if b == name]
                # A source not yet computed this step: a fed-back neuron, as it was before.
                late = lambda s, known, old: known[s] if s in known else old.get(  # noqa: E731
                    s, np.zeros((N, np.asarray(node["weight"]).shape[1])))
                value = sum(late(s, values, before) for s in src)
                err = sum(late(s, errors, before_errors) for s in src) + \
                    (len(src) - 1) * EPS32 * np.abs(value)
                if node["type"] == "Output":
                    outputs[name].append(value)
                    self.output_errors[name].append(err)
                    continue
                if node["type"] not in NEURONS:
                    values[name], errors[name] = self.rounding(node, value, err)
                    continue
                if name not in states:
                    states[name] = self.initial(node, value.shape)
                values[name], errors[name], distance, bound = self.neuron(
                    node, value, err, states[name])
                if distance is not None:
                    rates[name] = rates.get(name, 0.0) + values[name].mean() / T
                    decided = (np.abs(distance) > bound).reshape(N, -1).all(axis=1)
                    safe &= decided
        outs = {name: np.stack(v) for name, v in outputs.items()}
        self.output_errors = {k: np.stack(v) * np.ones_like(outs[k])
                              for k, v in self.output_errors.items()}
        return outs, rates, safe


class SigmoidSpike(torch.autograd.Function):
    """Heaviside forward (1 at 0), the sigmoid surrogate with alpha 4 backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        sg = torch.sigmoid(4.0 * x)
        return grad * 4.0 * sg * (1 - sg)


class IFNeurons(nn.Module):
    """NIR's IF stepped by dt, multi-step on [T, N, ...]."""

    def __init__(self, node, dt):
        super().__init__()
        self.gain = dt * one(node, "r")
        self.threshold = one(node, "v_threshold")
        self.reset = one(node, "v_reset", 0.0)

    def forward(self, x):
        v = torch.full_like(x[0], self.reset)
        out = []
        for t in range(x.shape[0]):
            h = v + self.gain * x[t] if self.gain != 1.0 else v + x[t]
            s = SigmoidSpike.apply(h - self.threshold)
            v = s * self.reset + (1 - s) * h
            out.append(s)
        return torch.stack(out)


class CubaLIFNeurons(nn.Module):
    """NIR's CubaLIF stepped by dt, multi-step on [T, N, F], its constants Python floats (as
    the compiler's description holds them); with `feedback` (an nn.Linear that is not a
    submodule: its weights live under the feedback node's own name) step t's input adds
    feedback(s[t-1]), s[-1] = 0."""

    def __init__(self, node, dt, feedback=None):
        super().__init__()
        self.tau_syn, self.w_in = one(node, "tau_syn") / dt, one(node, "w_in", 1.0)
        self.tau, self.r, self.v_leak = one(node, "tau_mem") / dt, one(node, "r"), one(
            node, "v_leak")
        self.threshold, self.reset = one(node, "v_threshold"), one(node, "v_reset", 0.0)
        self.feedback = [feedback]

    def forward(self, x):
        v, i = torch.full_like(x[0], self.v_leak), torch.zeros_like(x[0])
        s, out = torch.zeros_like(x[0]), []
        (rec,) = self.feedback
        for t in range(x.shape[0]):
            drive = x[t] + rec(s) if rec is not None else x[t]
            i = i + (self.w_in * drive - i) / self.tau_syn
            h = v + (self.r * i - (v - self.v_leak)) / self.tau
            s = SigmoidSpike.apply(h - self.threshold)
            v = s * self.reset + (1 - s) * h
            out.append(s)
        return torch.stack(out)


def feedback_nodes(nodes, edges):
    """neuron -> the Affine/Linear that reads only it and feeds only it back."""
    found = {}
    for name, node in nodes.items():
        src = [a for a, b in edges if b == name]
        dst = [b for a, b in edges if a == name]
        if (node["type"] in ("Affine", "Linear") and len(src) == 1 and dst == src and
                nodes[src[0]]["type"] in NEURONS):
            found[src[0]] = name
    return found


def attach(root, dotted, module):
    """root's submodule at the dotted path (NIR node names hold dots)."""
    *path, leaf = dotted.split(".")
    for part in path:
        if not hasattr(root, part):
            root.add_module(part, nn.Module())
        root = getattr(root, part)
    root.add_module(leaf, module)


def linear_of(node):
    w = np.asarray(node["weight"], np.float32)
    m = nn.Linear(w.shape[1], w.shape[0], bias=node["type"] == "Affine")
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(w))
        if m.bias is not None:
            m.bias.copy_(torch.from_numpy(np.asarray(node["bias"], np.float32)))
    return m


class SumPool(nn.Module):
    def __init__(self, node, channels):
        super().__init__()
        self.kernel = pair(node, "kernel_size", None)
        self.stride = pair(node, "stride", self.kernel)
        self.padding = pair(node, "padding", 0)
        self.register_buffer("sum_kernel", torch.ones(channels, 1, *self.kernel))

    def forward(self, x):
        return F.conv2d(x, self.sum_kernel, None, self.stride, self.padding, 1, x.shape[1])


class TorchNirModel(nn.Module):
    """A NIR graph of Conv2d, SumPool2d, Flatten, Affine, IF and CubaLIF nodes (a CubaLIF
    may be fed back through an Affine) in a chain as a PyTorch module on [T, N, ...], its
    state_dict keyed NODE.weight / NODE.bias."""

    def __init__(self, path, dt):
        super().__init__()
        nodes, edges = read_nir(path)
        feedback = feedback_nodes(nodes, edges)
        self.chain = [n for n in topological(nodes, edges)
                      if nodes[n]["type"] not in ("Input", "Output")
                      and n not in feedback.values()]
        self.kinds = {n: nodes[n]["type"] for n in self.chain}
        channels = int(nodes[[n for n in nodes if nodes[n]["type"] == "Input"][0]]["shape"][0])
        for name in self.chain:
            node = nodes[name]
            kind = node["type"]
            if kind == "Conv2d":
                w = node["weight"]
                m = nn.Conv2d(w.shape[1], w.shape[0], w.shape[2:], pair(node, "stride", 1),
                              padding(node), pair(node, "dilation", 1))
                channels = w.shape[0]
                with torch.no_grad():
                    m.weight.copy_(torch.from_numpy(np.asarray(node["weight"], np.float32)))
                    m.bias.copy_(torch.from_numpy(np.asarray(node["bias"], np.float32)))
            elif kind in ("Affine", "Linear"):
                m = linear_of(node)
            elif kind == "IF":
                m = IFNeurons(node, dt)
            elif kind == "CubaLIF":
                rec = None
                if name in feedback:
                    rec = linear_of(nodes[feedback[name]])
                    attach(self, feedback[name], rec)
                m = CubaLIFNeurons(node, dt, rec)
            elif kind == "SumPool2d":
                m = SumPool(node, channels)
            elif kind == "Flatten":
                m = nn.Flatten(2)
            else:
                raise ValueError(f"TorchNirModel has no {kind}")
            attach(self, name, m)

    def forward(self, x):
        T, N = x.shape[:2]
        for name in self.chain:
            m = self.get_submodule(name)
            if self.kinds[name] in ("IF", "CubaLIF", "Flatten"):
                x = m(x)
            else:
                y = m(x.reshape(T * N, *x.shape[2:]))
                x = y.reshape(T, N, *y.shape[1:])
        return x

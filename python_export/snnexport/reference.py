"""Reference cases for the C++ side: model.onnx + input.npy + expected.npy + meta.json."""
from __future__ import annotations

import inspect
import json
import os
import random
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import torch
from torch import nn

from . import models
from .export import export_onnx
from .functional import reset_net
from .weights import save_state_npz

MARGIN = 1e-4  # |H - v_threshold| below this counts as "near threshold" (docs/semantics.md)
LINEAR_STD = 1.5  # output std of calibrated Linear layers: enough to make the next layer spike

PathLike = Union[str, "os.PathLike[str]"]
NeuronStats = Dict[str, Dict[str, Any]]  # neuron path -> type, firing_rate, margins, counts


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _uniform(shape: Union[int, List[int]], lo: float, hi: float,
             gen: torch.Generator) -> torch.Tensor:
    return torch.empty(shape).uniform_(lo, hi, generator=gen)


def _forward_capture(model: nn.Module, x: torch.Tensor, module: nn.Module,
                     want_output: bool) -> Optional[torch.Tensor]:
    """Eval forward from a reset state; returns what `module` received (or returned)."""
    seen = []
    hook = module.register_forward_hook(
        lambda m, i, o: seen.append(o if want_output else i[0]))
    try:
        model.eval()
        reset_net(model)
        with torch.no_grad():
            model(x)
    finally:
        hook.remove()
        reset_net(model)
    return seen[0] if seen else None


def _channel_dim(m: nn.Module) -> int:
    # Multi-step layers see [T, N, C, ...]; per-step ones [T*N, C, ...].
    return 2 if getattr(m, "step_mode", "s") == "m" else 1


# BatchNorm calibration of one layer, by module path: (variance floor, gamma range, beta range).
BNInit = Callable[[str], Tuple[float, Tuple[float, float], Tuple[float, float]]]


def default_bn_init(path: str) -> Tuple[float, Tuple[float, float], Tuple[float, float]]:
    return 1e-2, (0.8, 1.6), (0.0, 0.3)


def spikformer_bn_init(path: str) -> Tuple[float, Tuple[float, float], Tuple[float, float]]:
    """Spikformer's 0.02-std init gives conv outputs of variance far below the default floor
    (which would silence every layer), and its attention neuron fires only on dense q, k, v:
    ((v k^T) q) / 8 of 30 % spikes over 4 tokens is mostly below the 0.5 threshold. So: a
    tiny floor, beta in [1.0, 1.4) for the qkv BatchNorm (q, k, v fire about 30 %), below 0
    in the stem's pooled stages (the 3x3 max raises their rates), in [0, 0.3) elsewhere (the
    projection and the MLP's first layer fire about 5 % at beta around 0)."""
    if ".qkv_conv_bn." in f".{path}.":
        beta = (1.0, 1.4)
    elif ".stages." in f".{path}.":
        beta = (-0.5, -0.1)
    else:
        beta = (0.0, 0.3)
    return 1e-6, (0.8, 1.6), beta


# Models whose BatchNorm layers need another calibration than default_bn_init.
BN_INIT: Dict[str, BNInit] = {"spikformer": spikformer_bn_init}


def calibrate(model: nn.Module, x: torch.Tensor, gen: torch.Generator,
              bn_init: Optional[BNInit] = None,
              scaled: Tuple[type, ...] = (nn.Linear,)) -> None:
    """Seeded, data-driven init so that every neuron layer spikes: BatchNorm gets random
    gamma and beta and running statistics taken from the data with +-20 % jitter (non-trivial
    eval-mode BN), the variance plus a floor; `bn_init(path)` gives the floor and the ranges
    (default_bn_init: 1e-2, gamma in [0.8, 1.6), beta in [0, 0.3)). Layers of the `scaled`
    types (default Linear) are scaled to LINEAR_STD output std."""
    bn_init = bn_init or default_bn_init
    for path, m in list(model.named_modules()):
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            t = _forward_capture(model, x, m, want_output=False)
            if t is None:
                continue
            c = m.num_features
            dims = [d for d in range(t.dim()) if d != _channel_dim(m)]
            floor, gamma, beta = bn_init(path)
            with torch.no_grad():
                m.running_mean.copy_(t.mean(dims) * _uniform(c, 0.8, 1.2, gen))
                m.running_var.copy_(t.var(dims) * _uniform(c, 0.8, 1.2, gen) + floor)
                if m.affine:
                    m.weight.copy_(_uniform(c, *gamma, gen))
                    m.bias.copy_(_uniform(c, *beta, gen))
        elif isinstance(m, scaled):
            t = _forward_capture(model, x, m, want_output=True)
            if t is None:
                continue
            with torch.no_grad():
                scale = LINEAR_STD / max(float(t.std()), 1e-6)
                m.weight.mul_(scale)
                if m.bias is not None:
                    m.bias.mul_(scale)


# model name -> (input shape per step [C, H, W] or [F] from kwargs, encoding)
def _input_spec(name: str, kw: Dict[str, Any]) -> Tuple[List[int], str]:
    if name == "spiking_mlp":
        return [kw.get("in_features", 784)], "random"
    if name == "deep_mlp":
        return [kw.get("in_features", 64)], "random"
    if name == "csnn":
        return [1, 28, 28], "direct"
    if name == "vgg_dvs":
        s = kw.get("image", 48)
        return [kw.get("in_channels", 2), s, s], "events"
    if name == "sew_resnet":
        return [kw.get("in_channels", 1), 28, 28], "direct"
    if name == "spikformer":
        s = kw.get("img_size", 32)
        return [kw.get("in_channels", 3), s, s], "direct"
    raise ValueError(f"unknown model {name!r} (known: {', '.join(models.MODELS)})")


def make_input(encoding: str, T: int, N: int, step_shape: List[int],
               gen: torch.Generator) -> torch.Tensor:
    """float32 [T, N, *step_shape]. direct: one uniform image repeated over T (SpikingJelly's
    direct encoding); random: fresh uniform values every step; events: binary DVS-like frames."""
    if encoding == "direct":
        img = torch.rand([N] + step_shape, generator=gen)
        return img.unsqueeze(0).repeat(T, *([1] * (len(step_shape) + 1)))
    x = torch.rand([T, N] + step_shape, generator=gen)
    return (x < 0.3).float() if encoding == "events" else x


def neuron_paths(model: nn.Module) -> List[Tuple[str, nn.Module]]:
    """The spiking neurons of `model`: the modules that log their charges (`h_log`) and say
    where they fire (`firing_statistics`)."""
    return [(p, m) for p, m in model.named_modules()
            if hasattr(m, "h_log") and hasattr(m, "firing_statistics")]


def run_reference(model: nn.Module, x: torch.Tensor) -> Tuple[torch.Tensor, NeuronStats]:
    """Eval-mode forward from a reset state. Returns (output, per-neuron statistics)."""
    nodes = neuron_paths(model)
    for _, m in nodes:
        m.h_log = []
    try:
        model.eval()
        reset_net(model)
        with torch.no_grad():
            out = model(x)
        stats = {}
        for p, m in nodes:
            # From H, not the output: LIAF outputs act(H - v_threshold), not its spikes.
            fired, margin = m.firing_statistics(torch.stack(m.h_log))
            stats[p] = {"type": type(m).__name__,
                        "firing_rate": float(fired.float().mean()),
                        "min_margin": float(margin.min()),
                        "near_count": int((margin < MARGIN).sum()),
                        "count": margin.numel()}
    finally:
        for _, m in nodes:
            m.h_log = None
        reset_net(model)
    return out, stats


def _summary(stats: NeuronStats) -> Dict[str, Any]:
    return {"min": min(s["min_margin"] for s in stats.values()),
            "near_count": sum(s["near_count"] for s in stats.values()),
            "count": sum(s["count"] for s in stats.values()),
            "tolerance": MARGIN}


def seeded_case(model: nn.Module, step_shape: List[int], encoding: str, T: int = 4, N: int = 8,
                seed: int = 0, attempts: int = 8, bn_init: Optional[BNInit] = None,
                scaled: Tuple[type, ...] = (nn.Linear,)
                ) -> Tuple[torch.Tensor, torch.Tensor, NeuronStats, int]:
    """Calibrates `model` (calibrate with `bn_init` and `scaled`) and draws its input: the best of `attempts` draws,
    fewest H values within MARGIN of the threshold, then the largest minimum margin.
    Returns (x, out, stats, attempt)."""
    gen = torch.Generator().manual_seed(seed)
    calibrate(model, make_input(encoding, T, N, step_shape, gen), gen, bn_init, scaled)
    best = None
    for attempt in range(max(1, attempts)):
        x = make_input(encoding, T, N, step_shape, gen)
        out, stats = run_reference(model, x)
        s = _summary(stats)
        key = (s["near_count"], -s["min"])
        if best is None or key < best[0]:
            best = (key, x, out, stats, attempt)
        if s["near_count"] == 0:
            break
    return best[1:]


def build_case(model_name: str, T: int = 4, N: int = 8, seed: int = 0, attempts: int = 8,
               **kw: Any) -> Tuple[nn.Module, torch.Tensor, torch.Tensor, NeuronStats, int, str]:
    """Seeded model MODELS[model_name](**kw) and its input (seeded_case).
    Returns (model, x, out, stats, attempt, encoding)."""
    step_shape, encoding = _input_spec(model_name, kw)
    set_seed(seed)
    model = models.MODELS[model_name](**kw)
    x, out, stats, attempt = seeded_case(model, step_shape, encoding, T, N, seed, attempts,
                                         BN_INIT.get(model_name))
    return model, x, out, stats, attempt, encoding


def readout_bound(model: nn.Module, x: torch.Tensor) -> Optional[torch.Tensor]:
    """The elementwise float32 bound K * eps * (|s| |W|^T + |b|) of the GEMM of the Linear
    whose output the model returns (a Spikformer's head over K features s), or None when the
    output is not a Linear's. Two GEMMs of the same K-term sums that differ only in their
    summation order (another batch size, another BLAS blocking) stay within it."""
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        return None
    seen = []
    hook = linears[-1].register_forward_hook(lambda m, i, o: seen.append((i[0], o)))
    try:
        model.eval()
        reset_net(model)
        with torch.no_grad():
            out = model(x)
    finally:
        hook.remove()
        reset_net(model)
    s, y = seen[-1]
    if y.shape != out.shape or not torch.equal(y, out):
        return None
    fc = linears[-1]
    bias = fc.bias.detach().abs() if fc.bias is not None else 0.0
    eps = float(np.finfo(np.float32).eps)
    return fc.in_features * eps * (s.abs() @ fc.weight.detach().abs().t() + bias)


def make_case(model_name: str, out_dir: PathLike, T: int = 4, N: int = 8, seed: int = 0,
              attempts: int = 8, **kw: Any) -> Dict[str, Any]:
    """Writes the case of MODELS[model_name](**kw) into `out_dir` (write_case); returns meta.
    A model that takes `steps` (a neuron with per-step parameters) is given T."""
    model_fn = models.MODELS.get(model_name)
    if model_fn is not None and "steps" in inspect.signature(model_fn).parameters:
        kw.setdefault("steps", T)
    model, x, out, stats, attempt, encoding = build_case(model_name, T, N, seed, attempts, **kw)
    kind = "rate" if out.dim() == 2 else models.TIME_MAJOR_OUTPUT.get(model_name, "spikes")
    return write_case(model, x, out, stats, out_dir, kind=kind,
                      meta={"model": model_name, "kwargs": kw, "T": T, "N": N, "seed": seed,
                            "encoding": encoding, "input_attempt": attempt})


def write_case(model: nn.Module, x: torch.Tensor, out: torch.Tensor, stats: NeuronStats,
               out_dir: PathLike, kind: str, meta: Dict[str, Any]) -> Dict[str, Any]:
    """Writes model.onnx, weights.npz (the exported state_dict, float32, no
    num_batches_tracked), input.npy, expected.npy, for real-valued logits ("logits" `kind`)
    their bound.npy (readout_bound), and meta.json (`meta` and what this adds) into
    `out_dir`; returns meta. A failure leaves no partial case behind."""
    os.makedirs(out_dir, exist_ok=True)
    files = {"model": "model.onnx", "weights": "weights.npz", "input": "input.npy",
             "expected": "expected.npy"}
    bound = readout_bound(model, x) if kind == "logits" else None
    if bound is not None:
        files["bound"] = "bound.npy"  # what infer checks real-valued logits against
    meta = dict(meta, files=files, input_shape=list(x.shape), output_shape=list(out.shape),
                output=kind, threshold_margin=_summary(stats), neurons=stats,
                torch_version=torch.__version__)
    written = []
    try:
        export_onnx(model, x, os.path.join(out_dir, files["model"]))
        written.append(files["model"])
        save_state_npz(model, os.path.join(out_dir, files["weights"]))
        written.append(files["weights"])
        arrays = [("input", x), ("expected", out)] + ([("bound", bound)] if bound is not None
                                                      else [])
        for key, arr in arrays:
            np.save(os.path.join(out_dir, files[key]), arr.numpy().astype(np.float32))
            written.append(files[key])
        with open(os.path.join(out_dir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=2)
    except BaseException:
        for name in written:
            os.unlink(os.path.join(out_dir, name))
        raise
    return meta

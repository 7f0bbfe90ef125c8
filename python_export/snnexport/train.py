"""PyTorch eager reference trainer: the procedure of docs/training.md, step for step.

`snn-run train` and this module implement the same specification (data order, direct encoding,
losses on the firing rate, optimizers, learning-rate schedules, seeding), so that the same
weights and the same data give the same trajectory. Tests compare the two; benchmarks time them.

Python API:
    order = splitmix64_order(seed, epoch, S)
    data = load_fashion_mnist(split="train") / load_npy(x_path, y_path)
    cfg = TrainConfig(steps=5, batch_size=8, lr=0.1, optimizer="sgd", momentum=0.9, ...)
    result = train(model, data, cfg, eval_data=None, log_path=None)
    result.losses, result.accuracies, result.lrs        # per optimizer step
    loss, accuracy = evaluate(model, data, cfg)
    save_params(model, out_dir)                          # NAME.npy per parameter and buffer
    load_onnx_weights(model, "trained.onnx")             # initializers -> state_dict

CLI (flags as `snn-run train` where they apply):
    python3 -m snnexport.train (--model NAME [--width W] [--onnx-weights F] | --init-from-case D)
        (--data fashion-mnist[:DIR] | --data-npy X.npy,Y.npy) [--repeat-time T]
        (--epochs E | --steps S) --batch-size B --lr LR [...]
"""
import argparse
import dataclasses
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from . import functional, models
from .weights import (load_onnx_weights, load_params, load_state_npz, save_params,
                      state_arrays)

__all__ = ["SplitMix64", "splitmix64_order", "Dataset", "load_fashion_mnist", "load_npy",
           "TrainConfig", "TrainResult", "TrainingError", "lr_at", "make_optimizer",
           "firing_rate", "loss_of", "train", "evaluate", "model_from_case",
           "load_onnx_weights", "load_params", "load_state_npz", "save_params",
           "state_arrays", "main"]

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("constant", "step", "cosine")
LOSSES = ("mse", "ce")
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
ADAMW_DEFAULT_WD = 0.01


class TrainingError(RuntimeError):
    """A training run that cannot continue (non-finite loss, bad data, bad configuration)."""


# ------------------------------------------------------------------ sample order (SplitMix64)
class SplitMix64:
    """SplitMix64 with exact 64-bit wrap-around arithmetic on Python ints."""

    def __init__(self, state):
        self.state = state & MASK64

    def next(self):
        self.state = (self.state + GOLDEN) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def splitmix64_order(seed, epoch, count):
    """The permutation of range(count) used in epoch `epoch` (0-based) for `seed`
    (docs/training.md, "Sample order"): Fisher-Yates from the back, j = next() mod (i + 1)."""
    rng = SplitMix64((seed & MASK64) * GOLDEN + epoch + 1)
    order = list(range(count))
    for i in range(count - 1, 0, -1):
        j = rng.next() % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


# ------------------------------------------------------------------ data
@dataclasses.dataclass
class Dataset:
    """x: float32 [S, ...] static samples (`static`) or [S, T, ...] sequences; y: int64 [S]."""
    x: np.ndarray
    y: np.ndarray
    static: bool
    name: str = "data"

    def __len__(self):
        return int(self.x.shape[0])

    def batch(self, indices, T=None):
        """Time-major input [T, B, ...] (direct encoding for static data) and labels [B]."""
        idx = np.asarray(indices, dtype=np.int64)
        xb = torch.from_numpy(np.ascontiguousarray(self.x[idx]))
        yb = torch.from_numpy(np.ascontiguousarray(self.y[idx]))
        if self.static:
            if T is None:
                raise TrainingError(f"{self.name}: static samples need a time length "
                                    "(--repeat-time T)")
            xb = xb.unsqueeze(0).repeat(T, *([1] * xb.dim()))
        else:
            xb = xb.transpose(0, 1).contiguous()
        return xb, yb


def _read_idx(path, magic, ndim):
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise TrainingError(f"{path}: no such file") from None
    except (OSError, EOFError) as e:
        raise TrainingError(f"{path}: not a readable gzip file ({e})") from None
    header = 4 + 4 * ndim
    if len(raw) < header or struct.unpack(">I", raw[:4])[0] != magic:
        raise TrainingError(f"{path}: not an IDX file with magic 0x{magic:08x}")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    count = int(np.prod(dims))
    if len(raw) != header + count:
        raise TrainingError(f"{path}: {len(raw) - header} data bytes, expected {count} "
                            f"for shape {list(dims)}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_fashion_mnist(directory=FASHION_MNIST_DIR, split="train"):
    """Fashion-MNIST from the IDX gzip files: x float32 [S, 1, 28, 28] = byte / 255 (in
    float32, as torchvision's ToTensor), y int64 [S]. split: 'train' or 't10k' ('test')."""
    prefix = {"train": "train", "t10k": "t10k", "test": "t10k"}[split]
    images = _read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), 0x803, 3)
    labels = _read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), 0x801, 1)
    if images.shape[0] != labels.shape[0]:
        raise TrainingError(f"{directory}: {images.shape[0]} {prefix} images but "
                            f"{labels.shape[0]} labels")
    x = (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]
    return Dataset(np.ascontiguousarray(x), labels.astype(np.int64), static=True,
                   name=f"fashion-mnist:{prefix}")


def load_npy(x_path, y_path, static):
    """A NumPy dataset: X float32 [S, ...] (static=True, direct encoding) or [S, T, ...]
    sequences; Y int64 or int32 class indices [S]."""
    try:
        x = np.load(x_path, allow_pickle=False)
        y = np.load(y_path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise TrainingError(f"cannot read dataset: {e}") from None
    if x.dtype != np.float32:
        raise TrainingError(f"{x_path}: dtype {x.dtype} is not float32")
    if y.dtype not in (np.int64, np.int32):
        raise TrainingError(f"{y_path}: dtype {y.dtype} is not int64 or int32")
    if y.ndim != 1 or x.ndim < 2 or x.shape[0] != y.shape[0]:
        raise TrainingError(f"{x_path}, {y_path}: shapes {list(x.shape)} and {list(y.shape)} "
                            "do not hold the same number of samples [S, ...] and [S]")
    if not static and x.ndim < 3:
        raise TrainingError(f"{x_path}: a sequence dataset must be [S, T, ...], got "
                            f"{list(x.shape)}")
    return Dataset(x, y.astype(np.int64), static=static, name=os.fspath(x_path))


# ------------------------------------------------------------------ configuration
@dataclasses.dataclass
class TrainConfig:
    batch_size: int
    lr: float
    epochs: int = None
    steps: int = None
    optimizer: str = "sgd"
    momentum: float = 0.0
    weight_decay: float = None       # None: 0 for sgd/adam, 0.01 for adamw
    schedule: str = "constant"
    step_size: int = 1
    gamma: float = 0.1
    eta_min: float = 0.0
    loss: str = "mse"
    seed: int = 0
    shuffle: bool = True
    drop_last: bool = True
    repeat_time: int = None          # T for static data (direct encoding)

    def check(self):
        if (self.epochs is None) == (self.steps is None):
            raise TrainingError("give exactly one of epochs and steps")
        if self.epochs is not None and self.epochs < 1:
            raise TrainingError(f"epochs must be >= 1, got {self.epochs}")
        if self.steps is not None and self.steps < 1:
            raise TrainingError(f"steps must be >= 1, got {self.steps}")
        if self.batch_size < 1:
            raise TrainingError(f"batch size must be >= 1, got {self.batch_size}")
        if not (math.isfinite(self.lr) and self.lr >= 0):
            raise TrainingError(f"learning rate must be finite and >= 0, got {self.lr}")
        if self.optimizer not in OPTIMIZERS:
            raise TrainingError(f"unknown optimizer {self.optimizer!r} "
                                f"(known: {', '.join(OPTIMIZERS)})")
        if self.schedule not in SCHEDULES:
            raise TrainingError(f"unknown schedule {self.schedule!r} "
                                f"(known: {', '.join(SCHEDULES)})")
        if self.loss not in LOSSES:
            raise TrainingError(f"unknown loss {self.loss!r} (known: {', '.join(LOSSES)})")
        if self.step_size < 1:
            raise TrainingError(f"step size must be >= 1, got {self.step_size}")
        if self.repeat_time is not None and self.repeat_time < 1:
            raise TrainingError(f"repeat time must be >= 1, got {self.repeat_time}")

    @property
    def wd(self):
        if self.weight_decay is not None:
            return float(self.weight_decay)
        return ADAMW_DEFAULT_WD if self.optimizer == "adamw" else 0.0


def steps_per_epoch(count, batch_size, drop_last):
    n = count // batch_size if drop_last else -(-count // batch_size)
    return n


def total_steps(cfg, count):
    if cfg.steps is not None:
        return cfg.steps
    return cfg.epochs * steps_per_epoch(count, cfg.batch_size, cfg.drop_last)


def lr_at(cfg, step, total):
    """Learning rate of optimizer step `step` (0-based), closed forms of docs/training.md."""
    if cfg.schedule == "constant":
        return float(cfg.lr)
    if cfg.schedule == "step":
        return float(cfg.lr) * float(cfg.gamma) ** (step // cfg.step_size)
    return float(cfg.eta_min) + (float(cfg.lr) - float(cfg.eta_min)) * \
        (1.0 + math.cos(math.pi * step / total)) / 2.0


def make_optimizer(params, cfg):
    """torch.optim with the spec's hyperparameters (single-tensor implementations)."""
    params = list(params)
    wd = cfg.wd
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, dampening=0.0,
                               weight_decay=wd, nesterov=False, foreach=False)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS,
                                weight_decay=wd, amsgrad=False, foreach=False)
    return torch.optim.AdamW(params, lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS,
                             weight_decay=wd, amsgrad=False, foreach=False)


# ------------------------------------------------------------------ forward, loss, metrics
def firing_rate(output):
    """The output's mean over T when it is time-major [T, N, classes], else the output."""
    return output.mean(0) if output.dim() == 3 else output


def loss_of(rate, y, kind):
    if kind == "mse":
        return F.mse_loss(rate, F.one_hot(y, rate.shape[-1]).to(rate.dtype))
    return F.cross_entropy(rate, y)


def correct_of(rate, y):
    return int((rate.argmax(dim=1) == y).sum())


def _check_labels(data, classes):
    if len(data) and (data.y.min() < 0 or data.y.max() >= classes):
        raise TrainingError(f"{data.name}: labels must lie in [0, {classes}), found "
                            f"{int(data.y.min())}..{int(data.y.max())}")


def evaluate(model, data, cfg, batch_size=None):
    """Eval-mode loss and accuracy over the whole split (file order, last batch kept), both
    averaged over samples. Leaves the model in train mode."""
    bs = batch_size or cfg.batch_size
    model.eval()
    loss_sum, correct = 0.0, 0
    try:
        with torch.no_grad():
            for start in range(0, len(data), bs):
                idx = range(start, min(start + bs, len(data)))
                x, y = data.batch(idx, cfg.repeat_time)
                functional.reset_net(model)
                rate = firing_rate(model(x))
                loss_sum += float(loss_of(rate, y, cfg.loss)) * len(idx)
                correct += correct_of(rate, y)
    finally:
        functional.reset_net(model)
        model.train()
    n = max(len(data), 1)
    return loss_sum / n, correct / n


# ------------------------------------------------------------------ training loop
@dataclasses.dataclass
class TrainResult:
    losses: list
    accuracies: list
    lrs: list
    epochs: list          # per-epoch summaries (the "epoch" log events)
    seconds: float
    samples: int

    @property
    def samples_per_s(self):
        return self.samples / self.seconds if self.seconds > 0 else float("inf")


class _Log:
    def __init__(self, path):
        self.f = open(path, "w") if path else None

    def write(self, obj):
        if self.f:
            self.f.write(json.dumps(obj) + "\n")
            self.f.flush()

    def close(self):
        if self.f:
            self.f.close()


def train(model, data, cfg, eval_data=None, log_path=None, progress=None):
    """Trains `model` in place on `data` following docs/training.md; returns a TrainResult.
    `progress`: a file (e.g. sys.stderr) for one plain line per epoch, or None."""
    cfg.check()
    S = len(data)
    per_epoch = steps_per_epoch(S, cfg.batch_size, cfg.drop_last)
    if per_epoch == 0:
        raise TrainingError(f"{data.name}: {S} samples give no batch of {cfg.batch_size} "
                            "(use a smaller batch size or --keep-last)")
    total = total_steps(cfg, S)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, cfg)
    log = _Log(log_path)
    result = TrainResult([], [], [], [], 0.0, 0)
    classes = None
    model.train()
    torch.manual_seed(cfg.seed)  # immediately before the first step (Dropout masks)
    step, epoch = 0, 0
    try:
        while step < total:
            order = (splitmix64_order(cfg.seed, epoch, S) if cfg.shuffle else list(range(S)))
            ep_t0, ep_loss, ep_acc, ep_steps = time.perf_counter(), 0.0, 0.0, 0
            for b in range(per_epoch):
                if step >= total:
                    break
                t0 = time.perf_counter()  # a step's time includes assembling its batch
                idx = order[b * cfg.batch_size:(b + 1) * cfg.batch_size]
                x, y = data.batch(idx, cfg.repeat_time)
                lr = lr_at(cfg, step, total)
                for g in opt.param_groups:
                    g["lr"] = lr
                opt.zero_grad(set_to_none=True)
                functional.reset_net(model)
                rate = firing_rate(model(x))
                if classes is None:
                    classes = rate.shape[-1]
                    _check_labels(data, classes)
                loss = loss_of(rate, y, cfg.loss)
                loss_v = float(loss.detach())
                if not math.isfinite(loss_v):
                    raise TrainingError(f"loss is {loss_v} at step {step} (epoch {epoch}, "
                                        f"batch {b}); stopping")
                loss.backward()
                opt.step()
                functional.reset_net(model)
                dt = time.perf_counter() - t0
                acc = correct_of(rate.detach(), y) / len(idx)
                result.seconds += dt
                result.samples += len(idx)
                result.losses.append(loss_v)
                result.accuracies.append(acc)
                result.lrs.append(lr)
                log.write({"event": "step", "epoch": epoch, "step": step, "loss": loss_v,
                           "accuracy": acc, "lr": lr,
                           "samples_per_s": len(idx) / dt if dt > 0 else None})
                ep_loss += loss_v
                ep_acc += acc
                ep_steps += 1
                step += 1
            summary = {"event": "epoch", "epoch": epoch, "steps": ep_steps,
                       "loss": ep_loss / ep_steps, "accuracy": ep_acc / ep_steps}
            if eval_data is not None:
                summary["eval_loss"], summary["eval_accuracy"] = evaluate(model, eval_data, cfg)
            summary["seconds"] = time.perf_counter() - ep_t0
            result.epochs.append(summary)
            log.write(summary)
            if progress is not None:
                line = f"epoch {epoch}: loss {summary['loss']:.4f} accuracy " \
                       f"{summary['accuracy']:.4f}"
                if eval_data is not None:
                    line += f" eval_loss {summary['eval_loss']:.4f} eval_accuracy " \
                            f"{summary['eval_accuracy']:.4f}"
                print(f"{line} ({summary['seconds']:.1f} s)", file=progress, flush=True)
            epoch += 1
    finally:
        log.close()
    return result


# ------------------------------------------------------------------ CLI
_WIDTH_ARG = {"spiking_mlp": "hidden", "csnn": "channels", "vgg_dvs": "channels",
              "sew_resnet": "channels"}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"error: {message}", file=sys.stderr)
        sys.exit(1)


def _parser():
    p = _Parser(prog="python3 -m snnexport.train",
                description="PyTorch eager reference trainer (docs/training.md).")
    m = p.add_argument_group("model")
    m.add_argument("--model", choices=sorted(models.MODELS), help="a model of snnexport.models")
    m.add_argument("--width", type=int, help="hidden size / channels of --model")
    m.add_argument("--classes", type=int)
    m.add_argument("--blocks", type=int)
    m.add_argument("--image", type=int)
    m.add_argument("--onnx-weights", metavar="FILE",
                   help="start from the initializers of this ONNX file")
    m.add_argument("--init-from-case", metavar="DIR",
                   help="model and weights of a make_case directory (meta.json + weights.npz)")
    m.add_argument("--init-seed", type=int, default=0,
                   help="torch seed for PyTorch's default init when no weights are given")
    d = p.add_argument_group("data")
    d.add_argument("--data", metavar="fashion-mnist[:DIR]")
    d.add_argument("--data-npy", metavar="X.npy,Y.npy")
    d.add_argument("--eval-data-npy", metavar="X.npy,Y.npy")
    d.add_argument("--repeat-time", type=int, metavar="T",
                   help="direct encoding of static samples over T steps")
    t = p.add_argument_group("training")
    t.add_argument("--epochs", type=int)
    t.add_argument("--steps", type=int)
    t.add_argument("--batch-size", type=int, required=True)
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd")
    t.add_argument("--momentum", type=float, default=0.0)
    t.add_argument("--weight-decay", type=float)
    t.add_argument("--schedule", choices=SCHEDULES, default="constant")
    t.add_argument("--step-size", type=int, help="step schedule: steps between decays")
    t.add_argument("--gamma", type=float, default=0.1)
    t.add_argument("--eta-min", type=float, default=0.0)
    t.add_argument("--loss", choices=LOSSES, default="mse")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--no-shuffle", action="store_true")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--drop-last", dest="drop_last", action="store_true", default=True)
    g.add_argument("--keep-last", dest="drop_last", action="store_false")
    e = t.add_mutually_exclusive_group()
    e.add_argument("--eval-every-epoch", dest="eval", action="store_true", default=True,
                   help="evaluate on the eval split after every epoch (default)")
    e.add_argument("--no-eval", dest="eval", action="store_false")
    t.add_argument("--threads", type=int, help="torch intra-op threads")
    o = p.add_argument_group("output")
    o.add_argument("--log", metavar="FILE", help="JSON lines: one per step and per epoch")
    o.add_argument("--save-params", metavar="DIR", help="NAME.npy per parameter and buffer")
    o.add_argument("--export-onnx", metavar="FILE", help="the trained model as ONNX")
    o.add_argument("--quiet", action="store_true", help="no per-epoch lines on stderr")
    return p


def build_model(args):
    """(model, T or None) from --init-from-case or --model [--onnx-weights]."""
    if args.init_from_case:
        model, meta = model_from_case(args.init_from_case)
        return model, meta.get("T")
    if not args.model:
        raise TrainingError("give --model NAME or --init-from-case DIR")
    kw = {}
    if args.width is not None:
        kw[_WIDTH_ARG[args.model]] = args.width
    for k in ("classes", "blocks", "image"):
        if getattr(args, k) is not None:
            kw[k] = getattr(args, k)
    torch.manual_seed(args.init_seed)
    model = models.MODELS[args.model](**kw)
    if args.onnx_weights:
        load_onnx_weights(model, args.onnx_weights)
    return model, None


def model_from_case(case_dir):
    """The model of a make_case directory with exactly the weights it exported."""
    with open(os.path.join(case_dir, "meta.json")) as f:
        meta = json.load(f)
    if meta["model"] not in models.MODELS:
        raise TrainingError(f"{case_dir}: unknown model {meta['model']!r}")
    model = models.MODELS[meta["model"]](**meta.get("kwargs", {}))
    weights = os.path.join(case_dir, meta.get("files", {}).get("weights", "weights.npz"))
    if os.path.exists(weights):
        load_state_npz(model, weights)
    else:
        load_onnx_weights(model, os.path.join(case_dir, meta["files"]["model"]))
    return model, meta


def _split_pair(flag, value):
    parts = value.split(",")
    if len(parts) != 2 or not all(parts):
        raise TrainingError(f"{flag} takes X.npy,Y.npy, got {value!r}")
    return parts


def load_data(args, case_T):
    static = args.repeat_time is not None
    if args.data and args.data_npy:
        raise TrainingError("give only one of --data and --data-npy")
    if args.data:
        name, _, directory = args.data.partition(":")
        if name != "fashion-mnist":
            raise TrainingError(f"--data: unknown dataset {name!r} (known: fashion-mnist)")
        directory = directory or FASHION_MNIST_DIR
        return (load_fashion_mnist(directory, "train"), load_fashion_mnist(directory, "t10k"),
                True)
    if not args.data_npy:
        raise TrainingError("give --data fashion-mnist[:DIR] or --data-npy X.npy,Y.npy")
    train_data = load_npy(*_split_pair("--data-npy", args.data_npy), static=static)
    eval_data = None
    if args.eval_data_npy:
        eval_data = load_npy(*_split_pair("--eval-data-npy", args.eval_data_npy), static=static)
    return train_data, eval_data, static


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        if args.threads is not None:
            if args.threads < 1:
                raise TrainingError(f"--threads must be >= 1, got {args.threads}")
            torch.set_num_threads(args.threads)
        model, case_T = build_model(args)
        train_data, eval_data, static = load_data(args, case_T)
        if args.schedule == "step" and args.step_size is None:
            raise TrainingError("--schedule step needs --step-size")
        if not args.eval:
            eval_data = None
        T = args.repeat_time
        if static and T is None:
            T = case_T
        if static and T is None:
            raise TrainingError("static samples need --repeat-time T")
        cfg = TrainConfig(batch_size=args.batch_size, lr=args.lr, epochs=args.epochs,
                          steps=args.steps, optimizer=args.optimizer, momentum=args.momentum,
                          weight_decay=args.weight_decay, schedule=args.schedule,
                          step_size=args.step_size or 1, gamma=args.gamma,
                          eta_min=args.eta_min,
                          loss=args.loss, seed=args.seed, shuffle=not args.no_shuffle,
                          drop_last=args.drop_last, repeat_time=T if static else None)
        res = train(model, train_data, cfg, eval_data=eval_data, log_path=args.log,
                    progress=None if args.quiet else sys.stderr)
        if args.save_params:
            save_params(model, args.save_params)
        if args.export_onnx:
            from .export import export_onnx
            x, _ = train_data.batch([0], cfg.repeat_time)
            export_onnx(model, x, args.export_onnx)
    except (TrainingError, ValueError, OSError) as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"trained {len(res.losses)} steps, {res.samples} samples in {res.seconds:.2f} s "
              f"({res.samples_per_s:.1f} samples/s); final loss {res.losses[-1]:.6f}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

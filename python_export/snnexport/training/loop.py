"""The training loop of docs/training.md: forward, loss and metrics on the firing rate,
`evaluate` and `train`."""
import dataclasses
import json
import math
import time

import torch
import torch.nn.functional as F

from .. import functional
from .config import TrainingError, steps_per_epoch, total_steps
from .data import splitmix64_order
from .optim import lr_at, make_optimizer

__all__ = ["firing_rate", "loss_of", "correct_of", "evaluate", "TrainResult", "train"]


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


def _forward_backward(model, x, y, cfg, check_classes):
    """One step's forward and backward: the whole batch, or (cfg.microbatches = M > 1) M equal
    contiguous chunks of N, each with fresh neuron state and its own BatchNorm statistics,
    whose gradients accumulate as the mean of the chunks' (what a pipeline computes).
    Returns (loss, correct count): the loss is the mean of the chunks' losses."""
    M = cfg.microbatches
    if x.shape[1] % M:
        raise TrainingError(f"a batch of {x.shape[1]} samples does not divide into {M} "
                            "microbatches")
    losses, correct = [], 0
    for xm, ym in zip(x.chunk(M, dim=1), y.chunk(M, dim=0)):
        functional.reset_net(model)
        rate = firing_rate(model(xm))
        check_classes(rate)
        loss = loss_of(rate, ym, cfg.loss)
        loss_v = float(loss.detach())
        if not math.isfinite(loss_v):
            return loss_v, 0
        (loss / M if M > 1 else loss).backward()
        losses.append(loss_v)
        correct += correct_of(rate.detach(), ym)
    return sum(losses) / M, correct


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

    def check_classes(rate):
        nonlocal classes
        if classes is None:
            classes = rate.shape[-1]
            _check_labels(data, classes)

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
                loss_v, correct = _forward_backward(model, x, y, cfg, check_classes)
                if not math.isfinite(loss_v):
                    raise TrainingError(f"loss is {loss_v} at step {step} (epoch {epoch}, "
                                        f"batch {b}); stopping")
                opt.step()
                functional.reset_net(model)
                dt = time.perf_counter() - t0
                acc = correct / len(idx)
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

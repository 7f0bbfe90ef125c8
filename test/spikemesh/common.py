"""What the spikemesh tests share: the model, the Python criterion and the training loop."""
from typing import Callable, Iterable, List, Optional, Tuple

import torch
import torch.nn.functional as F

from spikemesh.export import reference

STEPS = 5
# Losses and weights of the compiled program against eager PyTorch: float32 sums in another
# order (docs/semantics.md), over 5 steps.
RTOL = 1e-4


def criterion(rate: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy on the scaled firing rate plus a firing-rate penalty (snn-run has
    neither)."""
    return F.cross_entropy(rate * 4.0, labels) + 0.05 * rate.pow(2).mean()


def csnn_case(N: int = 8, seed: int = 0):
    """The seeded CSNN, an input [T, N, ...] and its layers' firing statistics."""
    model, x, _, stats, _, _ = reference.build_case("csnn", T=4, N=N, seed=seed, channels=8)
    return model, x, stats


def check_firing(stats) -> None:
    for name, s in stats.items():
        if not 0.05 <= s["firing_rate"] <= 0.5:
            raise AssertionError(f"{name} fires {s['firing_rate']:.3f}, outside 5-50 %")


def train(model, optimizer, scheduler, batches: Iterable[Tuple[torch.Tensor, torch.Tensor]],
          reset: Optional[Callable] = None) -> List[float]:
    """The user's loop: one optimizer step per batch; the losses."""
    losses = []
    for images, labels in batches:
        optimizer.zero_grad()
        if reset is not None:
            reset(model)
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(float(loss))
    return losses


def check_close(ours: List[float], theirs: List[float], what: str = "loss") -> None:
    for step, (a, b) in enumerate(zip(ours, theirs)):
        if abs(a - b) > RTOL * abs(b):
            raise AssertionError(f"step {step}: {what} {a} vs eager {b}")
    if abs(theirs[0] - theirs[-1]) <= 1e-3:
        raise AssertionError(f"the {what} did not move: {theirs}")


def check_same_parameters(ours: dict, model: torch.nn.Module) -> None:
    for name, p in model.named_parameters():
        scale = p.detach().abs().max().clamp_min(1e-6)
        diff = (ours[name].detach() - p.detach()).abs().max()
        if float(diff) > RTOL * float(scale):
            raise AssertionError(f"{name}: differs by {float(diff):.3g} (scale {float(scale):.3g})")

"""Optimizers and learning-rate schedules of docs/training.md, on torch.optim."""
import math

import torch

__all__ = ["ADAM_BETAS", "ADAM_EPS", "lr_at", "make_optimizer"]

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


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

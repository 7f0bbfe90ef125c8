"""Training configuration and its checks (docs/training.md): `TrainConfig`, the error type
shared by the trainer, and the step counts of a run."""
import dataclasses
import math

__all__ = ["TrainingError", "TrainConfig", "OPTIMIZERS", "SCHEDULES", "LOSSES",
           "ADAMW_DEFAULT_WD", "steps_per_epoch", "total_steps"]

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("constant", "step", "cosine")
LOSSES = ("mse", "ce")
ADAMW_DEFAULT_WD = 0.01


class TrainingError(RuntimeError):
    """A training run that cannot continue (non-finite loss, bad data, bad configuration)."""


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
    microbatches: int = 1            # gradient accumulation over equal chunks of N

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
        if self.microbatches < 1:
            raise TrainingError(f"microbatches must be >= 1, got {self.microbatches}")
        if self.batch_size % self.microbatches:
            raise TrainingError(f"batch size {self.batch_size} does not divide into "
                                f"{self.microbatches} microbatches")
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

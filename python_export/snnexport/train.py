"""PyTorch eager reference trainer: the procedure of docs/training.md, step for step.

`snn-run train` and this module implement the same specification (data order, direct encoding,
losses on the firing rate, optimizers, learning-rate schedules, seeding), so that the same
weights and the same data give the same trajectory. Tests compare the two; benchmarks time them.

The code lives in snnexport/training/ (config, data, optim, loop, cli); this module re-exports
all of it, so `from snnexport import train as tr` and `python3 -m snnexport.train` stay as they were.

Python API:
    order = splitmix64_order(seed, epoch, S)
    data = load_fashion_mnist(split="train") / load_npy(x_path, y_path)
    cfg = TrainConfig(steps=5, batch_size=8, lr=0.1, optimizer="sgd", momentum=0.9, ...)
    result = train(model, data, cfg, eval_data=None, log_path=None)
    result.losses, result.accuracies, result.lrs        # per optimizer step
    loss, accuracy = evaluate(model, data, cfg)
    save_params(model, out_dir)                          # NAME.npy per parameter and buffer
    load_onnx_weights(model, "trained.onnx")             # initializers -> state_dict

CLI (flags as `snn-run train` where they apply; snnexport/training/cli.py):
    python3 -m snnexport.train (--model NAME [--width W] [--onnx-weights F] | --init-from-case D)
        (--data fashion-mnist[:DIR] | --data-npy X.npy,Y.npy) [--repeat-time T]
        (--epochs E | --steps S) --batch-size B --lr LR [...]
"""
import sys

# Re-exports (the names this module has always had).
from .training.cli import build_model, load_data, main, model_from_case  # noqa: F401
from .training.config import (ADAMW_DEFAULT_WD, LOSSES, OPTIMIZERS, SCHEDULES,  # noqa: F401
                              TrainConfig, TrainingError, steps_per_epoch, total_steps)
from .training.data import (FASHION_MNIST_DIR, GOLDEN, MASK64, Dataset,  # noqa: F401
                            SplitMix64, load_fashion_mnist, load_npy, splitmix64_order)
from .training.loop import (TrainResult, correct_of, evaluate, firing_rate,  # noqa: F401
                            loss_of, train)
from .training.optim import ADAM_BETAS, ADAM_EPS, lr_at, make_optimizer  # noqa: F401
from .weights import (load_onnx_weights, load_params, load_state_npz,  # noqa: F401
                      save_params, state_arrays)

__all__ = ["SplitMix64", "splitmix64_order", "Dataset", "load_fashion_mnist", "load_npy",
           "TrainConfig", "TrainResult", "TrainingError", "lr_at", "make_optimizer",
           "firing_rate", "loss_of", "train", "evaluate", "model_from_case",
           "load_onnx_weights", "load_params", "load_state_npz", "save_params",
           "state_arrays", "main"]


if __name__ == "__main__":
    sys.exit(main())

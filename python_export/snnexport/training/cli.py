"""Command line of the reference trainer (`python3 -m snnexport.train`): flags as
`snn-run train` where they apply, plus the model (`--model` or `--init-from-case`)."""
import argparse
import json
import os
import sys

import torch

from .. import models
from ..weights import load_onnx_weights, load_state_npz, save_params
from .config import LOSSES, OPTIMIZERS, SCHEDULES, TrainConfig, TrainingError
from .data import FASHION_MNIST_DIR, load_fashion_mnist, load_npy
from .loop import train

__all__ = ["build_model", "model_from_case", "load_data", "freeze", "main"]


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
    m.add_argument("--layers", type=int, help="deep_mlp: number of linear layers")
    m.add_argument("--neuron", choices=models.DeepMLP.NEURONS, help="deep_mlp: neuron kind")
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
    t.add_argument("--microbatches", type=int, default=1, metavar="M",
                   help="accumulate gradients over M equal chunks of every batch, neurons "
                        "reset per chunk (the reference of a pipeline run)")
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
    t.add_argument("--freeze", nargs="+", default=[], metavar="NAME",
                   help="parameters to leave untrained (requires_grad=False), as snn-run's")
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
    try:
        kw = models.model_kwargs(args.model, width=args.width, classes=args.classes,
                                 blocks=args.blocks, image=args.image, layers=args.layers,
                                 neuron=args.neuron)
    except ValueError as e:
        raise TrainingError(str(e)) from None
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


def freeze(model, names):
    """requires_grad=False on each named parameter: train() leaves those out of the
    optimizer, as snn-run train --freeze does."""
    params = dict(model.named_parameters())
    for name in names:
        if name not in params:
            raise TrainingError(f"--freeze: the model has no parameter {name!r}")
        params[name].requires_grad_(False)


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        if args.threads is not None:
            if args.threads < 1:
                raise TrainingError(f"--threads must be >= 1, got {args.threads}")
            torch.set_num_threads(args.threads)
        model, case_T = build_model(args)
        freeze(model, args.freeze)
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
                          drop_last=args.drop_last, repeat_time=T if static else None,
                          microbatches=args.microbatches)
        res = train(model, train_data, cfg, eval_data=eval_data, log_path=args.log,
                    progress=None if args.quiet else sys.stderr)
        if args.save_params:
            save_params(model, args.save_params)
        if args.export_onnx:
            from ..export import export_onnx
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

"""python3 -m snnexport.make_case --model csnn --out DIR: write one reference case."""
import argparse
import json
import sys
from typing import Any, Dict, Optional, Sequence

from . import models
from .reference import make_case


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 1, like every SpikeMesh tool
        print(f"error: {message}", file=sys.stderr)
        sys.exit(1)


def _parser():
    p = _Parser(
        prog="python3 -m snnexport.make_case",
        description="Build a seeded reference SNN, export model.onnx and write input.npy, "
                    "expected.npy (PyTorch eval forward) and meta.json into --out.")
    p.add_argument("--model", required=True, choices=sorted(models.MODELS))
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--T", type=int, default=4, help="time steps (default 4)")
    p.add_argument("--N", type=int, default=8, help="batch size (default 8)")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and input (default 0)")
    p.add_argument("--width", type=int, help="hidden size / channels of the model")
    p.add_argument("--classes", type=int, help="number of classes (default 10)")
    p.add_argument("--blocks", type=int,
                   help="vgg_dvs / sew_resnet: number of blocks; spikformer: depths")
    p.add_argument("--image", type=int,
                   help="vgg_dvs / spikformer: input height and width (default 48 / 32)")
    p.add_argument("--layers", type=int, help="deep_mlp: number of linear layers (default 3)")
    p.add_argument("--neuron", choices=models.DeepMLP.NEURONS,
                   help="deep_mlp: neuron after every layer (default lif)")
    p.add_argument("--surrogate",
                   help="deep_mlp: the neurons' surrogate, NAME[:P1[,P2]] (e.g. erf, s2nn:3,0.8)")
    p.add_argument("--preset", choices=sorted(models.SPIKFORMER_PRESETS),
                   help="spikformer: the published ti / s embed_dims, num_heads and depths")
    p.add_argument("--attempts", type=int, default=8,
                   help="input draws to try for the largest threshold margin (default 8)")
    p.add_argument("--quiet", action="store_true", help="do not print meta.json")
    return p


def _kwargs(args: argparse.Namespace) -> Dict[str, Any]:
    if args.attempts is not None and args.attempts < 1:
        raise ValueError(f"--attempts must be >= 1, got {args.attempts}")
    # A parallel spiking neuron's weights are [T, T]: the model is built for --T.
    steps = args.T if args.neuron in models.DeepMLP.PARALLEL else None
    return models.model_kwargs(args.model, width=args.width, classes=args.classes,
                               blocks=args.blocks, image=args.image, layers=args.layers,
                               neuron=args.neuron, preset=args.preset,
                               surrogate=args.surrogate, steps=steps)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.T < 1 or args.N < 1:
            raise ValueError("--T and --N must be >= 1")
        meta = make_case(args.model, args.out, T=args.T, N=args.N, seed=args.seed,
                         attempts=args.attempts, **_kwargs(args))
    except Exception as e:  # noqa: BLE001 - tools report one line, never a traceback
        msg = " ".join(str(e).split())
        print(f"error: {msg}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(json.dumps({k: meta[k] for k in meta if k != "neurons"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

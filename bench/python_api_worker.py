#!/usr/bin/python3
"""One rank of python_api_throughput.py: the user's Python loop on spikemesh.apply's model.

The make_case model with its exported weights, planned as --mode over WORLD_SIZE ranks
(torchrun) or in one process, trained --steps Adam steps (lr 1e-4, MSE of the firing rate
against one-hot labels: snn-run's --loss mse) on the rank's share of each global batch of the
.npy data; prints one JSON object (rank 0): the steady-state samples/s (global batch / the
median step time after --warmup steps) and the first loss.

  bench/python_api_worker.py --case DIR --data X.npy,Y.npy --T 4 --batch 32 --steps 20 \\
      [--static] [--mode dp] [--threads N]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import time_major  # noqa: E402

import spikemesh  # noqa: E402
from snnexport.training.cli import model_from_case  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--T", type=int, required=True)
    p.add_argument("--batch", type=int, required=True, help="global batch")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--static", action="store_true")
    p.add_argument("--mode", default="none")
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    model, _ = model_from_case(args.case)
    x_path, y_path = args.data.split(",")
    x, y = torch.from_numpy(np.load(x_path)), torch.from_numpy(np.load(y_path))
    share = args.batch // world
    example = time_major(x[:share], args.T, args.static)
    analysis = spikemesh.analyze(model, example_input=example)
    plan = spikemesh.plan(analysis=analysis, objective="speed", topology={"dp": world},
                          backend="gloo", batch_size=args.batch, mode=args.mode)
    runtime = spikemesh.apply(model=model.train(), plan=plan)
    optimizer = runtime.build_optimizer(torch.optim.Adam, lr=1e-4)
    times, first = [], None
    for step in range(args.steps):
        start = time.perf_counter()
        rows = slice(step * args.batch + rank * share, step * args.batch + (rank + 1) * share)
        images = time_major(x[rows], args.T, args.static)
        labels = F.one_hot(y[rows], 10).float()
        optimizer.zero_grad()
        rate = runtime.model(images).mean(0)
        loss = F.mse_loss(rate, labels)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
        first = float(loss) if first is None else first
    if rank == 0:
        print(json.dumps({"samples_per_s": args.batch / float(np.median(times[args.warmup:])),
                          "first_loss": first, "mode": plan.mode}))


if __name__ == "__main__":
    main()

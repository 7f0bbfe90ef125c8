"""A training loop of one's own on spikemesh: a per-time-step loss, a firing-rate regulariser,
an LR schedule and gradient clipping, none of which snn-run has.

    PYTHONPATH=build/python torchrun --redirects 1 --tee 1 --nproc_per_node 2 \\
        examples/custom_loop.py --steps 20

The model is the CSNN of fashion_mnist_tutorial.py on Fashion-MNIST; the plan is data parallel
over the job's ranks. runtime.clip_grad_norm_ clips by the whole model's gradient norm under
any plan (torch.nn.utils.clip_grad_norm_ would see only a rank's part under tp, fsdp or pp).
"""
import argparse
import os

import torch
import torch.nn.functional as F

import spikemesh
from spikemesh.datasets import FashionMNIST

from fashion_mnist_tutorial import CSNN

TARGET_RATE = 0.1   # the regulariser pulls the output layer's firing rate towards this


def per_step_cross_entropy(out_seq: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of every time step's spikes (scaled to logits), averaged over T."""
    return torch.stack([F.cross_entropy(4.0 * out, labels) for out in out_seq]).mean()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--clip", type=float, default=1.0, help="gradient norm bound")
    parser.add_argument("--rate-weight", type=float, default=0.5)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    model = CSNN(T=4, channels=16)
    analysis = spikemesh.analyze(model, example_input=torch.rand(args.batch_size, 1, 28, 28))
    plan = spikemesh.plan(analysis=analysis, objective="speed", topology={"dp": world},
                          backend="gloo", batch_size=args.batch_size,
                          mode="dp" if world > 1 else None)
    runtime = spikemesh.apply(model=model, plan=plan)

    loader = runtime.prepare_dataloader(dataset=FashionMNIST(root=args.data_dir),
                                        batch_size=args.batch_size // runtime.dp_size,
                                        shuffle=True, drop_last=True)
    optimizer = torch.optim.SGD(runtime.model.parameters(), lr=args.lr, momentum=0.9)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    runtime.model.train()
    step = 0
    while step < args.steps:
        loader.sampler.set_epoch(step)
        for images, labels in loader:
            optimizer.zero_grad()
            out_seq = runtime.model(images)                       # [T, N, 10] spikes
            rate = out_seq.mean()
            loss = per_step_cross_entropy(out_seq, labels) + \
                args.rate_weight * (rate - TARGET_RATE).pow(2)
            loss.backward()
            norm = runtime.clip_grad_norm_(args.clip)
            optimizer.step()
            schedule.step()
            step += 1
            if runtime.rank == 0 and (step % 10 == 0 or step == 1):
                print(f"step {step}: loss {loss.item():.4f} output rate {rate.item():.3f} "
                      f"grad norm {norm.item():.3f} lr {schedule.get_last_lr()[0]:.4f}")
            if step >= args.steps:
                break
    if runtime.rank == 0:
        print(f"trained {step} steps")


if __name__ == "__main__":
    main()

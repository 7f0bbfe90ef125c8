"""The SpingJelly-style Fashion-MNIST CSNN tutorial loop, scaled with spikemesh.

A script written for SpikingJelly's ``activation_based.distributed`` package changes its
imports and its ``apply`` line (an example batch, so that the program is compiled before the
optimizer is built, whatever the mode): the model, the data, the loss, the optimizer and the
loop are the reference tutorial's. One process:

    PYTHONPATH=build/python /usr/bin/python3 examples/fashion_mnist_tutorial.py --steps 20

Data parallel on 2 ranks (any plan mode with --mode, see examples/README.md):

    PYTHONPATH=build/python torchrun --redirects 1 --tee 1 --nproc_per_node 2 \\
        examples/fashion_mnist_tutorial.py --mode dp --steps 20
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# The reference:  from spikingjelly.activation_based import functional, layer, neuron, surrogate
#                 from spikingjelly.activation_based.distributed import analyze, apply, plan
#                 from torchvision.datasets import FashionMNIST
from spikemesh.export import functional, layer, neuron, surrogate
from spikemesh import analyze, apply, plan
from spikemesh.datasets import FashionMNIST


class CSNN(nn.Module):
    """Two conv-BN-IF-pool blocks and two Linear-IF layers; a static image repeated T times."""

    def __init__(self, T: int, channels: int):
        super().__init__()
        self.T = T
        self.conv_fc = nn.Sequential(
            layer.Conv2d(1, channels, kernel_size=3, padding=1, bias=False),
            layer.BatchNorm2d(channels),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
            layer.MaxPool2d(2, 2),
            layer.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False),
            layer.BatchNorm2d(channels),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
            layer.MaxPool2d(2, 2),
            layer.Flatten(),
            layer.Linear(channels * 7 * 7, channels * 4 * 4, bias=False),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
            layer.Linear(channels * 4 * 4, 10, bias=False),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
        )
        functional.set_step_mode(self, step_mode="m")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_seq = x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1)   # [N, C, H, W] -> [T, N, C, H, W]
        return self.conv_fc(x_seq)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default=None, help="force a plan mode (default: planner)")
    parser.add_argument("--objective", default="speed")
    parser.add_argument("-T", type=int, default=4)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    net = CSNN(args.T, args.channels)
    analysis = analyze(net)
    axis = args.mode if args.mode in ("tp", "pp") else "dp"   # the mesh axis of the ranks
    topology = {axis: world}
    strategy = plan(analysis=analysis, objective=args.objective, topology=topology,
                    backend="gloo", batch_size=args.batch_size, mode=args.mode)
    # The reference:  runtime = apply(model=net, plan=strategy, device_type="cpu")
    runtime = apply(model=net, plan=strategy, device_type="cpu",
                    example_input=torch.rand(args.batch_size, 1, 28, 28))
    if runtime.rank == 0:
        print(f"plan: {strategy.mode} on {world} rank(s)")

    train_set = FashionMNIST(root=args.data_dir, train=True)
    loader = runtime.prepare_dataloader(dataset=train_set,
                                        batch_size=args.batch_size // runtime.dp_size,
                                        shuffle=True, drop_last=True)
    optimizer = runtime.build_optimizer(torch.optim.Adam, lr=args.lr)

    def criterion(out_seq, label):
        return F.mse_loss(out_seq.mean(0), F.one_hot(label, 10).float())

    step = 0
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        runtime.model.train()
        for img, label in loader:
            optimizer.zero_grad()
            loss = runtime.train_step(img, label, criterion)
            optimizer.step()
            runtime.reset_state()
            step += 1
            if runtime.rank == 0 and (step % 10 == 0 or step == 1):
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")
            if args.steps and step >= args.steps:
                break
    if runtime.rank == 0:
        print(f"trained {step} steps; last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

"""One rank of a torchrun job training NIR files loaded with ``snnexport.nir.load``.

Sinabs' CNN (test/import/nir/cnn_sinabs.nir, dt 1, binary events) and snnTorch's Braille
network (braille_noDelay_bias_zero.nir, dt 1e-4, normal currents: a CubaLIF fed back its
spikes through an Affine, a RecurrentNeuron module) are each analyzed, planned data-parallel on
the world (dp=W) and applied; 5 SGD steps of the user's loop on each rank's share of the global
batch equal the eager module trained on the whole batch in one process (torchrun_worker's
``compare``: losses within common.RTOL, every parameter alike). Every spiking layer fires at a
non-trivial rate on the data (the NumPy reference, test/e2e/nir_reference.py).

Usage: run_torchrun.py --nproc W torchrun_nir.py
"""
import os
import sys

import numpy as np
import torch
import torch.distributed as torch_dist
from torch.utils.data import TensorDataset

import common
import spikemesh
import torchrun_worker as worker
from spikemesh.export import nir

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "..", "import", "nir")
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import nir_reference  # noqa: E402


class RateReadout(torch.nn.Module):
    """The NIR model's spikes averaged over T: the [N, 10] the user's criterion takes."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x).mean(0)


def events(g, steps, count):
    return (torch.rand(steps, count, 2, 34, 34, generator=g) < 0.3).float()


def currents(g, steps, count):
    return torch.randn(steps, count, 12, generator=g) * 3.0


# file, dt, T, the inputs, classes, learning rate
CASES = [("cnn_sinabs.nir", 1.0, 4, events, 10, 0.05),
         ("braille_noDelay_bias_zero.nir", 1e-4, 16, currents, 7, 0.02)]


def train_case(world, name, dt, steps, draw, classes, lr):
    path = os.path.join(FILES, name)
    model = RateReadout(nir.load(path, dt=dt))
    g = torch.Generator().manual_seed(0)
    x = draw(g, steps, worker.GLOBAL_BATCH * common.STEPS)
    _, rates, _ = nir_reference.NirGraph(path, dt).run(x.numpy().astype(np.float32))
    quiet = {k: r for k, r in rates.items() if not 0.02 <= r <= 0.6}
    if quiet:
        raise AssertionError(f"{name}: spiking layers outside 2-60 % firing: {quiet}")
    labels = torch.randint(0, classes, (x.shape[1],), generator=g)
    dataset = TensorDataset(x.transpose(0, 1).contiguous(), labels)
    analysis = spikemesh.analyze(model, example_input=x[:, :worker.GLOBAL_BATCH])
    plan = spikemesh.plan(analysis=analysis, objective="speed", topology={"dp": world},
                          backend="gloo", batch_size=worker.GLOBAL_BATCH, mode="dp")
    losses = worker.compare("sgd", model, x, dataset, plan,
                            (torch.optim.SGD, dict(lr=lr, momentum=0.9)), lambda o: None)
    if torch_dist.get_rank() == 0:
        print(f"{name} dp on {world} ranks: 5 steps equal to eager; losses "
              f"{losses[0]:.5f} -> {losses[-1]:.5f}; firing "
              + ", ".join(f"{k} {r:.1%}" for k, r in sorted(rates.items())))


def main():
    torch_dist.init_process_group("gloo")
    world = torch_dist.get_world_size()
    for case in CASES:
        train_case(world, *case)
    torch_dist.destroy_process_group()


if __name__ == "__main__":
    main()

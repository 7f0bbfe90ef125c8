"""One rank of a torchrun job training a NIR file loaded with ``snnexport.nir.load``.

Sinabs' CNN (test/import/nir/cnn_sinabs.nir, dt 1) is analyzed, planned data-parallel on the
world (dp=W) and applied; 5 SGD steps of the user's loop on each rank's share of the global
batch equal the eager module trained on the whole batch in one process (torchrun_worker's
``compare``: losses within common.RTOL, every parameter alike). Every IF layer fires at a
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
FILE = os.path.join(HERE, "..", "import", "nir", "cnn_sinabs.nir")
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import nir_reference  # noqa: E402


class RateReadout(torch.nn.Module):
    """The NIR model's spikes averaged over T: the [N, 10] the user's criterion takes."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x).mean(0)


def main():
    torch_dist.init_process_group("gloo")
    world = torch_dist.get_world_size()
    model = RateReadout(nir.load(FILE, dt=1.0))
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(4, worker.GLOBAL_BATCH * common.STEPS, 2, 34, 34, generator=g) < 0.3).float()
    _, rates, _ = nir_reference.NirGraph(FILE, 1.0).run(x.numpy().astype(np.float32))
    quiet = {k: r for k, r in rates.items() if not 0.02 <= r <= 0.6}
    if quiet:
        raise AssertionError(f"IF layers outside 2-60 % firing: {quiet}")
    labels = torch.randint(0, 10, (x.shape[1],), generator=g)
    dataset = TensorDataset(x.transpose(0, 1).contiguous(), labels)
    analysis = spikemesh.analyze(model, example_input=x[:, :worker.GLOBAL_BATCH])
    plan = spikemesh.plan(analysis=analysis, objective="speed", topology={"dp": world},
                          backend="gloo", batch_size=worker.GLOBAL_BATCH, mode="dp")
    losses = worker.compare("sgd", model, x, dataset, plan,
                            (torch.optim.SGD, dict(lr=0.05, momentum=0.9)), lambda o: None)
    if torch_dist.get_rank() == 0:
        print(f"cnn_sinabs.nir dp on {world} ranks: 5 steps equal to eager; losses "
              f"{losses[0]:.5f} -> {losses[-1]:.5f}; IF firing "
              + ", ".join(f"{k} {r:.1%}" for k, r in sorted(rates.items())))
    torch_dist.destroy_process_group()


if __name__ == "__main__":
    main()

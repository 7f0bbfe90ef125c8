"""A NIR file trained data-parallel equals one PyTorch process.

cnn_sinabs.nir (Sinabs' N-MNIST CNN: Conv2d, IF, SumPool2d, Flatten, Affine) compiled with
`snn-compile FILE --nir-dt 1 --nir-steps 4 --mode dp --topology dp=2`, trained with
`snn-run --nproc 2 train` for 5 SGD steps of a global batch of 8 event sequences, against
the same graph as an independent PyTorch module (nir_reference.TorchNirModel: NIR's IF
stepped by dt, the sigmoid surrogate) trained by the reference trainer (snnexport.train) in
one process on the same batches. Required: per-step losses within 1e-4 relative, the same
accuracies, every weight of both ranks within 1e-4 relative and the ranks bit-identical;
every IF node fires at a non-trivial rate and the loss moves.

Usage: train_nir.py --bin BUILD/bin --work DIR
"""
import os

import numpy as np
import torch

import nir_reference as ref
import train_common as tc
import train_dp as td
import train_trajectory as tt
from snnexport import train as tr

T, B, STEPS, RANKS = 4, 8, 5, 2
FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "import", "nir",
                    "cnn_sinabs.nir")


def main():
    bin_dir, work = tc.bin_and_work(__doc__)
    torch.set_num_threads(2)
    art = os.path.join(work, "artifact")
    tc.run([os.path.join(bin_dir, "snn-compile"), FILE, "--nir-dt", "1", "--nir-steps", T,
            "--mode", "dp", "--topology", f"dp={RANKS}", "--batch-size", B, "-o", art])
    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    data_arg = tc.event_sequences(x, y, 2 * B, T, (2, 34, 34), seed=3, p=0.3)
    _, rates, _ = ref.NirGraph(FILE, 1.0).run(np.load(x).transpose(1, 0, 2, 3, 4))
    quiet = {k: r for k, r in rates.items() if not 0.02 <= r <= 0.6}
    if quiet:
        raise tc.Failure(f"IF nodes outside 2-60 % firing on the data: {quiet}")
    print("firing rates: " + ", ".join(f"{k} {r:.1%}" for k, r in sorted(rates.items())))

    c = tr.TrainConfig(batch_size=B, steps=STEPS, optimizer="sgd", lr=0.05, momentum=0.9,
                       schedule="constant", loss="ce", seed=5)
    log, params = os.path.join(work, "log.jsonl"), os.path.join(work, "params")
    tc.run([os.path.join(bin_dir, "snn-run"), "--nproc", RANKS, "train", art, "--data-npy",
            data_arg, *tt.cli_flags(c), "--log", log, "--save-params", params, "--threads", 1,
            "--progress", "none", "--dist-timeout", 120])
    model = ref.TorchNirModel(FILE, 1.0)
    res = tr.train(model, tr.load_npy(x, y, static=False), c)
    steps, epochs = tc.read_log(log)
    tt.check_steps("cnn_sinabs/dp2", steps, res, c, 2 * B)
    tt.check_epochs("cnn_sinabs/dp2", epochs, res)
    losses = [s["loss"] for s in steps]
    if max(losses) - min(losses) < 1e-3 * abs(losses[0]):
        raise tc.Failure(f"the loss did not move: {losses}")
    got = td.check_replicas(params, RANKS, "cnn_sinabs/dp2")
    # The SumPool2d kernels are frozen weights of the artifact, buffers of the module.
    worst = tc.compare_params(got, tr.state_arrays(model), "cnn_sinabs/dp2 final weights")
    print(f"PASS: cnn_sinabs.nir dp={RANKS}, {STEPS} steps = one PyTorch process "
          f"(worst weight rel err {worst:.3g}, losses {losses[0]:.4f} -> {losses[-1]:.4f})")


if __name__ == "__main__":
    tc.main_wrapper(main)

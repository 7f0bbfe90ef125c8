"""NIR files trained data-parallel equal one PyTorch process.

Two files of test/import/nir, each compiled with `snn-compile FILE --nir-dt DT --nir-steps T
--mode dp --topology dp=2` and trained with `snn-run --nproc 2 train` for 5 SGD steps of a
global batch of 8 sequences, against the same graph as an independent PyTorch module
(nir_reference.TorchNirModel: NIR's neurons stepped by dt, the sigmoid surrogate) trained by
the reference trainer (snnexport.train) in one process on the same batches:
- cnn_sinabs.nir (Sinabs' N-MNIST CNN: Conv2d, IF, SumPool2d, Flatten, Affine) on binary
  event frames;
- braille_noDelay_bias_zero.nir (snnTorch's Braille network: a CubaLIF fed back its spikes
  through an Affine, a second CubaLIF) on normal currents; the feedback's weight and bias train
  by backpropagation through time.
Required: per-step losses within 1e-4 relative, the same accuracies, every weight of both
ranks within 1e-4 relative and the ranks bit-identical; every spiking node fires at a
non-trivial rate and the loss moves.

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

B, STEPS, RANKS = 8, 5, 2
FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "import", "nir")


def sinabs_data(x, y):
    return tc.event_sequences(x, y, 2 * B, 4, (2, 34, 34), seed=3, p=0.3)


def braille_data(x, y):
    g = np.random.default_rng(4)
    np.save(x, (g.standard_normal((2 * B, 16, 12)) * 3.0).astype(np.float32))
    np.save(y, g.integers(0, 7, 2 * B).astype(np.int32))
    return f"{x},{y}"


# file, dt, T, the data writer, learning rate
CASES = [("cnn_sinabs.nir", 1.0, 4, sinabs_data, 0.05),
         ("braille_noDelay_bias_zero.nir", 1e-4, 16, braille_data, 0.02)]


def check_case(bin_dir, work, name, dt, T, data, lr):
    path, label = os.path.join(FILES, name), f"{name[:-4]}/dp{RANKS}"
    d = tc.fresh_dir(os.path.join(work, name[:-4]))
    art = os.path.join(d, "artifact")
    tc.run([os.path.join(bin_dir, "snn-compile"), path, "--nir-dt", repr(dt), "--nir-steps", T,
            "--mode", "dp", "--topology", f"dp={RANKS}", "--batch-size", B, "-o", art])
    x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    data_arg = data(x, y)
    _, rates, _ = ref.NirGraph(path, dt).run(np.swapaxes(np.load(x), 0, 1))
    quiet = {k: r for k, r in rates.items() if not 0.02 <= r <= 0.6}
    if quiet:
        raise tc.Failure(f"{label}: spiking nodes outside 2-60 % firing on the data: {quiet}")
    print(f"{label} firing rates: " + ", ".join(f"{k} {r:.1%}" for k, r in sorted(rates.items())))

    c = tr.TrainConfig(batch_size=B, steps=STEPS, optimizer="sgd", lr=lr, momentum=0.9,
                       schedule="constant", loss="ce", seed=5)
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    tc.run([os.path.join(bin_dir, "snn-run"), "--nproc", RANKS, "train", art, "--data-npy",
            data_arg, *tt.cli_flags(c), "--log", log, "--save-params", params, "--threads", 1,
            "--progress", "none", "--dist-timeout", 120])
    model = ref.TorchNirModel(path, dt)
    res = tr.train(model, tr.load_npy(x, y, static=False), c)
    steps, epochs = tc.read_log(log)
    tt.check_steps(label, steps, res, c, 2 * B)
    tt.check_epochs(label, epochs, res)
    losses = [s["loss"] for s in steps]
    if max(losses) - min(losses) < 1e-3 * abs(losses[0]):
        raise tc.Failure(f"{label}: the loss did not move: {losses}")
    got = td.check_replicas(params, RANKS, label)
    # Frozen weights (the SumPool2d kernels) are the artifact's, buffers of the module.
    worst = tc.compare_params(got, tr.state_arrays(model), f"{label} final weights")
    print(f"{label}: {STEPS} steps = one PyTorch process (worst weight rel err {worst:.3g}, "
          f"losses {losses[0]:.4f} -> {losses[-1]:.4f})")


def main():
    bin_dir, work = tc.bin_and_work(__doc__)
    torch.set_num_threads(2)
    for case in CASES:
        check_case(bin_dir, work, *case)
    print("PASS: " + ", ".join(c[0] for c in CASES) + f" trained dp={RANKS} = one process")


if __name__ == "__main__":
    tc.main_wrapper(main)

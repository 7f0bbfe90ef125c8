"""Every described neuron class infers and trains as the PyTorch reference does: deep_mlp (2
Linear layers, each followed by the neuron) with SpikingJelly's other neuron classes
(snnexport.described_neurons: QIF, EIF, Izhikevich, CUBALIF, KLIF with its learnable k, LIAF's
analog output, SimpleIF, SimpleLIF, HalfThresholdIF, ILIF's multi-level spike counts, GatedLIF's
per-channel gates and per-step conductance), exported as `Neuron` nodes described by
their parts and run by the runtime's neuron program evaluator.

Per class: `snn-run infer` on the case's input equals the reference's output (firing rates
within 1e-6 relative); then 3 SGD steps against the reference trainer with the checks of
deep_mlp_variants.py (every layer firing 5-50 %, losses and final weights within 1e-4). With
--tp / --pp, the same model compiled for tp=2 / pp=2 trains on 2 ranks to the same weights.

Usage: train_neurons.py --bin BUILD/bin --work DIR [--only NAME,...] [--tp NAME,...]
                        [--pp NAME,...]
"""
import os

import numpy as np

import deep_mlp_variants as dv
import train_common as tc

NEURONS = ("qif", "eif", "izhikevich", "cubalif", "klif", "liaf", "simple_if", "simple_lif",
           "half_threshold_if", "ilif", "gated_lif")


def check_infer(args, name, case, art, d):
    """snn-run infer of the case's input against the reference's output."""
    output = os.path.join(d, "output.npy")
    tc.run([os.path.join(args.bin, "snn-run"), "infer", art, "--input",
            os.path.join(case, "input.npy"), "--output", output])
    got, want = np.load(output), np.load(os.path.join(case, "expected.npy"))
    err = tc.rel_err(got, want)
    if got.shape != want.shape or err > 1e-6:
        raise tc.Failure(f"{name}: snn-run infer output {got.shape} differs from the "
                         f"reference {want.shape} (max rel err {err:.3g})")


def check_one(args, name, work, data):
    d, case, art = dv.make_case(args, name, work, neuron=name)
    check_infer(args, name, case, art, d)
    print(f"{name}: inference equal; " + dv.check_training(args, name, d, case, art, data))


if __name__ == "__main__":
    dv.main(__doc__, list(NEURONS), "neuron classes", check_one)

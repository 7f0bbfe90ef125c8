"""Every surrogate trains as the PyTorch reference does: `snn-run train` against the reference
trainer (snnexport.train) on deep_mlp (2 Linear + LIF layers) firing with each of
SpikingJelly's surrogate functions, with parameters other than their defaults.

Per surrogate: the case exported (`surrogate` with `alpha` and `beta` in the ONNX file),
compiled, trained 3 SGD steps by snn-run and by the reference from the same weights on the same
batches, with the checks of deep_mlp_variants.py. With --tp / --pp, the same model compiled
for tp=2 / pp=2 trains on 2 ranks to the same weights (every rank's equal).

Usage: train_surrogates.py --bin BUILD/bin --work DIR [--only NAME,...] [--tp NAME,...]
                           [--pp NAME,...]
"""
import deep_mlp_variants as dv

# The `surrogate` value -> make_case's --surrogate spec (SpikingJelly's parameters in order).
SURROGATES = {
    "sigmoid": "sigmoid:3",
    "atan": "atan:1.5",
    "piecewise_quadratic": "piecewise_quadratic:0.9",
    "piecewise_exp": "piecewise_exp:1.5",
    "soft_sign": "soft_sign:1.5",
    "super_spike": "super_spike:1.5",
    "nonzero_sign_log_abs": "nonzero_sign_log_abs:1.5",
    "erf": "erf:1.5",
    "piecewise_leaky_relu": "piecewise_leaky_relu:0.8,0.05",
    "squarewave_fourier_series": "squarewave_fourier_series:3,7",
    "s2nn": "s2nn:3,0.8",
    "q_pseudo_spike": "q_pseudo_spike:2.5",
    "leaky_k_relu": "leaky_k_relu:0.1,0.9",
    "fake_numerical_gradient": "fake_numerical_gradient:0.5",
    "log_tailed_relu": "log_tailed_relu:0.1",
    "rect": "rect:0.8",
}


def check_one(args, name, work, data):
    d, case, art = dv.make_case(args, name, work, surrogate=SURROGATES[name])
    print(f"{name}: " + dv.check_training(args, name, d, case, art, data))


if __name__ == "__main__":
    dv.main(__doc__, list(SURROGATES), "surrogates", check_one)

"""SpikingJelly's parallel spiking neurons infer and train as the PyTorch reference does:
deep_mlp (2 Linear layers of 32, each followed by the neuron, T=4) with PSN, MaskedPSN of k=2
ramping in its mask (lambda 0.5) or with it whole (lambda 1), and SlidingPSN of k=2, exported as
`ParallelSpikingNeuron` nodes and run by the runtime's parallel_neuron op.

Per variant: `snn-run infer` on the case's input equals the reference's output (firing rates
within 1e-6 relative); then 3 SGD steps against the reference trainer with the checks of
deep_mlp_variants.py (every layer firing 5-50 %, losses and final weights within 1e-4). With
--tp, the same model compiled for tp=2 trains on 2 ranks to the same weights: the activations
split over the features, each neuron's [T, T] weight and bias whole on both ranks with their
gradients summed over them.

Usage: train_parallel_neurons.py --bin BUILD/bin --work DIR [--only NAME,...] [--tp NAME,...]
"""
import deep_mlp_variants as dv
from train_neurons import check_one

VARIANTS = ("psn", "masked_psn", "masked_psn_full", "sliding_psn")

if __name__ == "__main__":
    dv.main(__doc__, list(VARIANTS), "parallel neuron variants", check_one)

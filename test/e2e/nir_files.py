"""NIR files written by other libraries, compiled and run, against NIR's equations in NumPy.

Each file of test/import/nir is compiled with `snn-compile FILE --nir-dt DT --nir-steps T`
and run with `snn-run infer` on 100 random inputs; the output spikes must equal, bit for bit,
those of an independent float64 NumPy implementation of NIR's equations (nir_reference.py).
An input is used only where no membrane of the reference comes within float32 roundoff of
its threshold (a bound from each sum's count of terms, their magnitudes and float32's
epsilon, carried through the steps), so the comparison is exact. Every spiking node must fire at a non-trivial rate.

Usage: nir_files.py --bin BUILD/bin --work DIR
"""
import os
import sys

import numpy as np

import nir_reference as ref
import train_common as tc

EPS32 = ref.EPS32

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "..", "import", "nir")
sys.path.insert(0, os.path.join(HERE, "..", "lit", "helpers"))
import nir_from_json  # noqa: E402


def spikes(shape, p):
    return lambda g, n: (g.random((n, *shape)) < p).astype(np.float32)


def currents(shape, low, high):
    return lambda g, n: g.uniform(low, high, (n, *shape)).astype(np.float32)


def normal(shape, scale):
    return lambda g, n: (g.standard_normal((n, *shape)) * scale).astype(np.float32)


def fill(value, shape):
    return {"fill": value, "shape": shape}


def chain(nodes):
    """A graph of `nodes` (name, fields) in a line from an Input to an Output."""
    names = [name for name, _ in nodes]
    return {"nodes": dict(nodes), "edges": [[a, b] for a, b in zip(names, names[1:])]}


# The primitives no file of test/import/nir has: Scale per feature and CubaLIF into an LI read
# out as potentials; a Conv2d (padding "same") into a LIF whose leak and reset differ,
# AvgPool2d, Scale per channel, Flatten, Linear, an Integrator and a Threshold; two Affines
# summed into a CubaLI.
SYNTHETIC = {
    "cuba_li.nir": chain([
        ("input", {"type": "Input", "shape": [12]}),
        ("fc1", {"type": "Affine", "weight": {"seed": 1, "shape": [16, 12], "scale": 0.6},
                 "bias": fill(0.05, [16])}),
        ("scale", {"type": "Scale", "scale": np.linspace(0.5, 1.5, 16).tolist()}),
        ("cuba", {"type": "CubaLIF", "tau_syn": fill(2e-4, [16]), "tau_mem": fill(1e-3, [16]),
                  "r": fill(10.0, [16]), "v_leak": fill(0.0, [16]), "w_in": fill(2.0, [16]),
                  "v_threshold": fill(1.0, [16])}),
        ("fc2", {"type": "Affine", "weight": {"seed": 2, "shape": [6, 16], "scale": 0.5},
                 "bias": fill(0.0, [6])}),
        ("li", {"type": "LI", "tau": fill(5e-4, [6]), "r": fill(1.0, [6]),
                "v_leak": fill(0.1, [6])}),
        ("output", {"type": "Output", "shape": [6]})]),
    "conv_lif_threshold.nir": chain([
        ("input", {"type": "Input", "shape": [2, 8, 8]}),
        ("conv", {"type": "Conv2d", "weight": {"seed": 3, "shape": [4, 2, 3, 3], "scale": 0.4},
                  "bias": fill(0.1, [4]), "stride": [1, 1], "padding": "same",
                  "dilation": [1, 1], "groups": 1}),
        ("lif", {"type": "LIF", "tau": fill(3e-3, [4, 8, 8]), "r": fill(2.0, [4, 8, 8]),
                 "v_leak": fill(0.2, [4, 8, 8]), "v_reset": fill(-0.1, [4, 8, 8]),
                 "v_threshold": fill(1.0, [4, 8, 8])}),
        ("avg", {"type": "AvgPool2d", "kernel_size": [2, 2], "stride": [2, 2],
                 "padding": [0, 0]}),
        ("scale", {"type": "Scale",
                   "scale": np.repeat([0.8, 1.2, 1.0, 1.5], 16).reshape(4, 4, 4).tolist()}),
        ("flat", {"type": "Flatten", "start_dim": 0, "end_dim": -1}),
        ("lin", {"type": "Linear", "weight": {"seed": 4, "shape": [8, 64], "scale": 0.5}}),
        ("int", {"type": "I", "r": fill(50.0, [8])}),
        ("thr", {"type": "Threshold", "threshold": fill(0.3, [8])}),
        ("output", {"type": "Output", "shape": [8]})]),
    "sum_cubali.nir": {
        "nodes": {"input": {"type": "Input", "shape": [5]},
                  "a": {"type": "Affine", "weight": {"seed": 5, "shape": [4, 5]},
                        "bias": fill(0.0, [4])},
                  "b": {"type": "Affine", "weight": {"seed": 6, "shape": [4, 5]},
                        "bias": fill(0.2, [4])},
                  "cubali": {"type": "CubaLI", "tau_syn": fill(2e-3, [4]),
                             "tau_mem": fill(4e-3, [4]), "r": fill(1.5, [4]),
                             "v_leak": fill(0.0, [4]), "w_in": fill(1.0, [4])},
                  "output": {"type": "Output", "shape": [4]}},
        "edges": [["input", "a"], ["input", "b"], ["a", "cubali"], ["b", "cubali"],
                  ["cubali", "output"]]},
}

def per_channel(values, plane):
    """One value per channel, repeated over each channel's plane."""
    return np.repeat(np.asarray(values, float), int(np.prod(plane))).reshape(
        len(values), *plane).tolist()


# Parameters with one value per channel: a conv LIF's, a CubaLIF's and an IF's per feature.
SYNTHETIC["per_channel.nir"] = chain([
    ("input", {"type": "Input", "shape": [3, 6, 6]}),
    ("conv", {"type": "Conv2d", "weight": {"seed": 7, "shape": [4, 3, 3, 3], "scale": 0.8},
              "bias": fill(0.1, [4]), "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
              "groups": 1}),
    ("lif", {"type": "LIF", "tau": per_channel([2e-3, 3e-3, 4e-3, 6e-3], (6, 6)),
             "r": per_channel([1.0, 2.0, 1.5, 3.0], (6, 6)), "v_leak": fill(0.0, [4, 6, 6]),
             "v_threshold": per_channel([1.0, 0.8, 1.2, 1.0], (6, 6)),
             "v_reset": per_channel([0.0, -0.2, 0.1, 0.0], (6, 6))}),
    ("flat", {"type": "Flatten", "start_dim": 0, "end_dim": -1}),
    ("fc1", {"type": "Affine", "weight": {"seed": 8, "shape": [10, 144], "scale": 0.5},
             "bias": fill(0.1, [10])}),
    ("cuba", {"type": "CubaLIF", "tau_syn": np.linspace(1.5e-3, 3e-3, 10).tolist(),
              "tau_mem": fill(4e-3, [10]), "r": fill(2.0, [10]), "v_leak": fill(0.0, [10]),
              "w_in": np.linspace(0.5, 1.5, 10).tolist(),
              "v_threshold": np.linspace(0.6, 1.2, 10).tolist()}),
    ("fc2", {"type": "Affine", "weight": {"seed": 9, "shape": [5, 10], "scale": 0.8},
             "bias": fill(0.3, [5])}),
    ("if", {"type": "IF", "r": [300.0, 400.0, 500.0, 600.0, 700.0],
            "v_threshold": fill(1.0, [5])}),
    ("output", {"type": "Output", "shape": [5]})])

# A LIF fed back its spikes through a Linear (no bias), per-feature thresholds, read out by a
# Threshold.
SYNTHETIC["recurrent_lif.nir"] = {
    "nodes": {"input": {"type": "Input", "shape": [8]},
              "fc": {"type": "Affine", "weight": {"seed": 10, "shape": [10, 8], "scale": 0.8},
                     "bias": fill(0.1, [10])},
              "lif": {"type": "LIF", "tau": fill(2e-3, [10]), "r": fill(1.5, [10]),
                      "v_leak": fill(0.0, [10]), "v_reset": fill(0.0, [10]),
                      "v_threshold": np.linspace(0.5, 1.0, 10).tolist()},
              "lif_rec": {"type": "Linear", "weight": {"seed": 11, "shape": [10, 10],
                                                       "scale": 0.6}},
              "fc2": {"type": "Affine", "weight": {"seed": 12, "shape": [4, 10], "scale": 1.0},
                      "bias": fill(0.0, [4])},
              "thr": {"type": "Threshold", "threshold": fill(0.3, [4])},
              "output": {"type": "Output", "shape": [4]}},
    "edges": [["input", "fc"], ["fc", "lif"], ["lif", "lif_rec"], ["lif_rec", "lif"],
              ["lif", "fc2"], ["fc2", "thr"], ["thr", "output"]]}

# Delays of 2 steps (currents into a LIF) and of 1 step (the LIF's spikes).
SYNTHETIC["delay.nir"] = chain([
    ("input", {"type": "Input", "shape": [6]}),
    ("fc", {"type": "Affine", "weight": {"seed": 13, "shape": [8, 6], "scale": 0.8},
            "bias": fill(0.1, [8])}),
    ("wait", {"type": "Delay", "delay": fill(2e-3, [8])}),
    ("lif", {"type": "LIF", "tau": fill(2e-3, [8]), "r": fill(1.5, [8]),
             "v_leak": fill(0.0, [8]), "v_reset": fill(0.0, [8]),
             "v_threshold": fill(0.6, [8])}),
    ("late", {"type": "Delay", "delay": fill(1e-3, [8])}),
    ("fc2", {"type": "Affine", "weight": {"seed": 14, "shape": [4, 8], "scale": 1.0},
             "bias": fill(0.0, [4])}),
    ("thr", {"type": "Threshold", "threshold": fill(0.3, [4])}),
    ("output", {"type": "Output", "shape": [4]})])

# file, dt (the writer's convention), T, the input of one step, the rate range per node.
CASES = [
    ("cnn_sinabs.nir", 1.0, 8, spikes((2, 34, 34), 0.3), (0.01, 0.6)),
    ("lif_norse.nir", 1e-3, 20, currents((1,), 0.0, 0.25), (0.05, 0.6)),
    ("cuba_li.nir", 1e-4, 12, spikes((12,), 0.3), (0.05, 0.6)),
    ("conv_lif_threshold.nir", 1e-3, 10, currents((2, 8, 8), 0.0, 1.0), (0.05, 0.6)),
    ("sum_cubali.nir", 1e-3, 10, currents((5,), -1.0, 1.0), (0.05, 0.6)),
    ("per_channel.nir", 1e-3, 10, spikes((3, 6, 6), 0.4), (0.05, 0.6)),
    ("braille_noDelay_bias_zero.nir", 1e-4, 16, normal((12,), 3.0), (0.05, 0.6)),
    ("recurrent_lif.nir", 1e-3, 12, normal((8,), 1.0), (0.05, 0.6)),
    ("delay.nir", 1e-3, 10, normal((6,), 1.0), (0.05, 0.6)),
]


def safe_inputs(graph, T, draw, count, seed):
    """`count` inputs [T, count, ...] on which every spike of the reference is decided beyond
    float32 roundoff (nir_reference.NirGraph.run), and the reference's outputs and rates."""
    g = np.random.default_rng(seed)
    kept = []
    for _ in range(40):
        x = np.stack([draw(g, 64) for _ in range(T)])
        _, _, safe = graph.run(x)
        kept.extend(x[:, i] for i in np.flatnonzero(safe))
        if len(kept) >= count:
            break
    if len(kept) < count:
        raise tc.Failure(f"only {len(kept)} drawn inputs decide every spike beyond roundoff")
    x = np.stack(kept[:count], axis=1)
    outputs, rates, _ = graph.run(x)
    return x, outputs, rates


def check_file(bin_dir, work, name, dt, T, draw, rate_range):
    d = tc.fresh_dir(os.path.join(work, name[:-4]))
    path = os.path.join(FILES, name)
    if name in SYNTHETIC:
        path = os.path.join(d, name)
        nir_from_json.write(SYNTHETIC[name], path)
    art = os.path.join(d, "artifact")
    tc.run([os.path.join(bin_dir, "snn-compile"), path, "--nir-dt", repr(dt), "--nir-steps",
            T, "-o", art])
    graph = ref.NirGraph(path, dt)
    x, outputs, rates = safe_inputs(graph, T, draw, 100, seed=len(name))
    low, high = rate_range
    for node, rate in sorted(rates.items()):
        print(f"{name}: node {node} ({graph.nodes[node]['type']}) fires {rate:.1%}")
        if not low <= rate <= high:
            raise tc.Failure(f"{name}: node {node} fires at {rate:.2%}, outside "
                             f"[{low:.0%}, {high:.0%}]: the comparison would prove little")
    check_feedback_matters(graph, x, outputs)
    np.save(os.path.join(d, "x.npy"), x)
    out = os.path.join(d, "out.npy")
    tc.run([os.path.join(bin_dir, "snn-run"), "infer", art, "--input",
            os.path.join(d, "x.npy"), "--output", out])
    got = np.load(out)
    ((last, want),) = outputs.items()
    if got.shape != want.shape:
        raise tc.Failure(f"{name}: snn-run gives {got.shape}, NIR's equations {want.shape}")
    spiking = graph.nodes[graph_source(graph, last)]["type"] in ref.SPIKING
    if spiking:
        differ = int(np.count_nonzero(got != want.astype(np.float32)))
        what = "identical"
    else:  # potentials: within the float32 roundoff bound, plus the cast of the result
        bound = graph.output_errors[last] + EPS32 * np.abs(want)
        differ = int(np.count_nonzero(np.abs(got - want) > bound))
        what = f"within roundoff (largest difference {np.abs(got - want).max():.2g})"
    if differ:
        raise tc.Failure(f"{name}: {differ} of {want.size} outputs differ from NIR's equations")
    print(f"{name}: {x.shape[1]} inputs x {T} steps, {want.size} outputs {what}")


def check_feedback_matters(graph, x, outputs):
    """For a graph with a cycle: its outputs without the fed-back edges must differ, so equal
    outputs prove the feedback computed."""
    # An edge against the order reaches a node that reads the step before; its edges out
    # carry the feedback.
    late = {b for a, b in graph.edges if graph.order.index(a) > graph.order.index(b)}
    back = [(a, b) for a, b in graph.edges if a in late]
    if not back:
        return
    cut = ref.NirGraph.__new__(ref.NirGraph)
    cut.__dict__.update(graph.__dict__, edges=[e for e in graph.edges if e not in back])
    plain, _, _ = cut.run(x)
    ((name, want),) = outputs.items()
    changed = int(np.count_nonzero(plain[name] != want))
    if changed < want.size // 100:
        raise tc.Failure(f"the feedback {back} changes only {changed} outputs")
    print(f"feedback {back}: changes {changed} of {want.size} outputs")


def graph_source(graph, output):
    (source,) = [a for a, b in graph.edges if b == output]
    return source


def main():
    bin_dir, work = tc.bin_and_work(__doc__)
    for case in CASES:
        check_file(bin_dir, work, *case)
    print("PASS: " + ", ".join(c[0] for c in CASES) + " equal NIR's equations")


if __name__ == "__main__":
    tc.main_wrapper(main)

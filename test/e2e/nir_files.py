"""NIR files written by other libraries, compiled and run, against NIR's equations in NumPy.

Each file of test/import/nir is compiled with `snn-compile FILE --nir-dt DT --nir-steps T`
and run with `snn-run infer` on 100 random inputs; the output spikes must equal, bit for bit,
those of an independent float64 NumPy implementation of NIR's equations (nir_reference.py).
An input is used only where no membrane of the reference comes within float32 roundoff of
its threshold (a bound from each sum's count of terms, their magnitudes and float32's
epsilon, carried through the steps), so the comparison is exact. Every spiking node must fire at a non-trivial rate.

Usage: nir_files.py --bin BUILD/bin --work DIR
"""
import argparse
import os

import numpy as np

import nir_reference as ref
import train_common as tc

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "..", "import", "nir")


def spikes(shape, p):
    return lambda g, n: (g.random((n, *shape)) < p).astype(np.float32)


def currents(shape, low, high):
    return lambda g, n: g.uniform(low, high, (n, *shape)).astype(np.float32)


# file, dt (the writer's convention), T, the input of one step, the rate range per node.
CASES = [
    ("cnn_sinabs.nir", 1.0, 8, spikes((2, 34, 34), 0.3), (0.01, 0.6)),
    ("lif_norse.nir", 1e-3, 20, currents((1,), 0.0, 0.25), (0.05, 0.6)),
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
    path = os.path.join(FILES, name)
    d = tc.fresh_dir(os.path.join(work, name[:-4]))
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
    np.save(os.path.join(d, "x.npy"), x)
    out = os.path.join(d, "out.npy")
    tc.run([os.path.join(bin_dir, "snn-run"), "infer", art, "--input",
            os.path.join(d, "x.npy"), "--output", out])
    got = np.load(out)
    (want,) = outputs.values()
    if got.shape != want.shape:
        raise tc.Failure(f"{name}: snn-run gives {got.shape}, NIR's equations {want.shape}")
    differ = int(np.count_nonzero(got != want.astype(np.float32)))
    if differ:
        raise tc.Failure(f"{name}: {differ} of {want.size} outputs differ from NIR's equations")
    print(f"{name}: {x.shape[1]} inputs x {T} steps, {want.size} outputs identical "
          f"({want.mean():.1%} spikes)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    work = tc.fresh_dir(args.work)
    for case in CASES:
        check_file(args.bin, work, *case)
    print("PASS: " + ", ".join(c[0] for c in CASES) + " equal NIR's equations")


if __name__ == "__main__":
    tc.main_wrapper(main)

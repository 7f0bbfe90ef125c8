"""snnexport.nir.load: a NIR file as a PyTorch module equals the compiled NIR file.

For Sinabs' CNN, Norse's LIF and the graphs of nir_files.py (every neuron primitive):
`snnexport.nir.load(FILE, dt=DT)` gives a multi-step module; on 100 inputs whose every spike is
decided beyond float32 roundoff (nir_files.safe_inputs) its eager output equals `snn-run infer`
of `snn-compile FILE --nir-dt DT` (spikes bit for bit, potentials within their roundoff bound);
the module exported to ONNX compiles to the same ops as the NIR file and runs to identical
outputs (snnTorch's Braille network and a LIF fed back through a Linear among them: their
feedback loops are RecurrentNeuron modules and RecurrentNeuron ONNX nodes). Bad input is a
ValueError naming the node: no dt, a cycle other than a feedback loop.

Usage: nir_python.py --bin BUILD/bin --work DIR
"""
import os
import re

import numpy as np
import torch

import nir_files as nf
import train_common as tc
from snnexport import export_onnx, nir

EPS32 = nf.EPS32


def ops(bin_dir, model, art, *flags):
    tc.run([os.path.join(bin_dir, "snn-compile"), model, *flags, "--emit-mlir", art + ".mlir",
            "-o", art])
    with open(art + ".mlir") as f:
        return [o for o in re.findall(r"= (snn\.[a-z_0-9]+)", f.read()) if o != "snn.parameter"]


def infer(bin_dir, art, x_path, out):
    tc.run([os.path.join(bin_dir, "snn-run"), "infer", art, "--input", x_path, "--output", out])
    return np.load(out)


def check(bin_dir, work, name, dt, T, draw, rate_range):
    d = tc.fresh_dir(os.path.join(work, name[:-4]))
    path = os.path.join(nf.FILES, name)
    if name in nf.SYNTHETIC:
        path = os.path.join(d, name)
        nf.nir_from_json.write(nf.SYNTHETIC[name], path)
    graph = nf.ref.NirGraph(path, dt)
    x, outputs, _ = nf.safe_inputs(graph, T, draw, 100, seed=len(name) + 1)
    ((last, want),) = outputs.items()
    x_path = os.path.join(d, "x.npy")
    np.save(x_path, x)
    model = nir.load(path, dt=dt)
    with torch.no_grad():
        eager = model(torch.from_numpy(x)).numpy()
    onnx_path = os.path.join(d, "model.onnx")
    export_onnx(model, torch.from_numpy(x[:, :2]), onnx_path)
    flags = ["--nir-dt", repr(dt), "--nir-steps", T]
    from_nir = ops(bin_dir, path, os.path.join(d, "nir"), *flags)
    from_onnx = ops(bin_dir, onnx_path, os.path.join(d, "onnx"))
    if from_nir != from_onnx:
        raise tc.Failure(f"{name}: the module's ONNX and the NIR file compile to other ops:\n"
                         f"{from_onnx}\n{from_nir}")
    a = infer(bin_dir, os.path.join(d, "nir"), x_path, os.path.join(d, "a.npy"))
    b = infer(bin_dir, os.path.join(d, "onnx"), x_path, os.path.join(d, "b.npy"))
    if not np.array_equal(a, b):
        raise tc.Failure(f"{name}: ONNX and NIR outputs differ in {np.count_nonzero(a != b)}")
    spiking = graph.nodes[nf.graph_source(graph, last)]["type"] in nf.ref.SPIKING
    bound = 0.0 if spiking else 2 * graph.output_errors[last] + EPS32 * np.abs(want)
    differ = int(np.count_nonzero(np.abs(eager - a) > bound))
    if differ:
        raise tc.Failure(f"{name}: the eager module differs from snn-run in {differ} outputs")
    print(f"{name}: module eager = compiled on {a.size} outputs; its ONNX compiles to the "
          f"NIR file's ops ({', '.join(from_nir)}) with identical outputs")


# A feedback Affine that the Output also reads: a cycle the compiler refuses.
CYCLE = {"nodes": {"input": {"type": "Input", "shape": [3]},
                   "lif": {"type": "LIF", "tau": 2.0, "r": 1.0, "v_leak": 0.0,
                           "v_threshold": 1.0},
                   "rec": {"type": "Affine", "weight": {"seed": 1, "shape": [3, 3]},
                           "bias": [0.0, 0.0, 0.0]},
                   "output": {"type": "Output", "shape": [3]}},
         "edges": [["input", "lif"], ["lif", "rec"], ["rec", "lif"], ["rec", "output"]]}


def errors(work):
    lif = os.path.join(nf.FILES, "lif_norse.nir")
    cycle = os.path.join(work, "cycle.nir")
    nf.nir_from_json.write(CYCLE, cycle)
    for what, call, expected in [
            ("no dt", lambda: nir.load(lif), "NIR node '1' (LIF): needs the time step"),
            ("cycle", lambda: nir.load(cycle, dt=1.0), "cycle of edges"),
            ("dt", lambda: nir.load(lif, dt=-1.0), "dt must be a number > 0")]:
        try:
            call()
        except ValueError as e:
            if expected not in str(e):
                raise tc.Failure(f"{what}: ValueError {e!r} does not say {expected!r}")
            print(f"{what}: ValueError: {e}")
            continue
        raise tc.Failure(f"{what}: no ValueError")


def main():
    bin_dir, work = tc.bin_and_work(__doc__)
    torch.set_num_threads(2)
    for case in nf.CASES:
        check(bin_dir, work, *case)
    errors(work)
    print("PASS: snnexport.nir.load equals the compiled NIR files")


if __name__ == "__main__":
    tc.main_wrapper(main)

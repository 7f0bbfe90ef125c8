"""NIR round trips: a model's ONNX and its NIR compile to the same program; a trained model
written as NIR re-imports with identical outputs; what NIR cannot express is refused.

1. A SpikingJelly-style model (snnexport: Conv2d, LIF, AvgPool2d, Flatten, Linear, IF) is
   exported to ONNX and compiled; `snn-run export --format nir` writes it as NIR with its
   weights; the NIR compiles back to the same program (the same op kinds in the same order) and
   `snn-run infer` gives identical outputs from both artifacts on the same input.
2. Sinabs' CNN (test/import/nir/cnn_sinabs.nir) and snnTorch's Braille network (a CubaLIF fed
   back through an Affine) trained here for 5 SGD steps and written as NIR re-import with the
   trained weights (bit-equal, the feedback's among them) and identical outputs.
3. The graphs of nir_files.py (every neuron primitive as a description, a LIF fed back through
   a Linear) written back and re-imported: the same program, identical outputs.
4. A soft-reset IF and a max pool are refused with one line naming the node, leaving no file.
Every spiking layer compared fires at a non-trivial rate on the input (the NumPy reference).

Usage: nir_round_trip.py --bin BUILD/bin --work DIR
"""
import json
import os
import re
import shutil

import numpy as np
import torch
from torch import nn

import nir_files as nf
import nir_reference as ref
import train_common as tc
import train_trajectory as tt
from snnexport import export_onnx, functional, layer, neuron
from snnexport import train as tr

T, N = 4, 16
HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "..", "import", "nir")


def compile_(bin_dir, model, art, *nir_flags):
    """The compiled program's ops in order and its parameters' names (sorted)."""
    tc.run([os.path.join(bin_dir, "snn-compile"), model, *nir_flags, "--emit-mlir",
            art + ".mlir", "-o", art])
    with open(art + ".mlir") as f:
        text = f.read()
    ops = [o for o in re.findall(r"= (snn\.[a-z_0-9]+)", text) if o != "snn.parameter"]
    return ops, sorted(re.findall(r'snn\.parameter "([^"]+)"', text))


def infer(bin_dir, art, x_path, out):
    tc.run([os.path.join(bin_dir, "snn-run"), "infer", art, "--input", x_path, "--output", out])
    return np.load(out)


def export_nir(bin_dir, art, params, out, expect_ok=True, dt=1.0):
    return tc.run([os.path.join(bin_dir, "snn-run"), "export", art, "--params", params,
                   "--format", "nir", "--nir-dt", repr(dt), "-o", out], expect_ok=expect_ok)


def check_rates(path, x, what, dt=1.0):
    _, rates, _ = ref.NirGraph(path, dt).run(x)
    quiet = {k: r for k, r in rates.items() if not 0.02 <= r <= 0.6}
    if quiet:
        raise tc.Failure(f"{what}: spiking nodes outside 2-60 % firing: {quiet}")
    print(f"{what}: firing " + ", ".join(f"{k} {r:.1%}" for k, r in sorted(rates.items())))


def onnx_and_nir(bin_dir, work):
    torch.manual_seed(0)
    model = nn.Sequential(layer.Conv2d(2, 4, 3, padding=1), neuron.LIFNode(tau=2.0),
                          layer.AvgPool2d(2), layer.Flatten(), layer.Linear(64, 10),
                          neuron.IFNode())
    functional.set_step_mode(model, "m")
    with torch.no_grad():  # weights that make both layers fire
        model[0].weight.mul_(4.0)
        model[0].bias.fill_(0.3)
        model[4].weight.mul_(6.0)
    x = (np.random.default_rng(1).random((T, N, 2, 8, 8)) < 0.4).astype(np.float32)
    x_path = os.path.join(work, "x.npy")
    np.save(x_path, x)
    export_onnx(model, torch.from_numpy(x), os.path.join(work, "model.onnx"))
    params = os.path.join(work, "params")
    tr.save_params(model, params)
    from_onnx = compile_(bin_dir, os.path.join(work, "model.onnx"), os.path.join(work, "onnx"))
    nir_path = os.path.join(work, "model.nir")
    export_nir(bin_dir, os.path.join(work, "onnx"), params, nir_path)
    check_rates(nir_path, x, "snnexport model")
    from_nir = compile_(bin_dir, nir_path, os.path.join(work, "nir"), "--nir-dt", "1",
                        "--nir-steps", T)
    if from_onnx != from_nir:
        raise tc.Failure(f"ONNX and NIR compile to different programs:\n{from_onnx}\n{from_nir}")
    a = infer(bin_dir, os.path.join(work, "onnx"), x_path, os.path.join(work, "a.npy"))
    b = infer(bin_dir, os.path.join(work, "nir"), x_path, os.path.join(work, "b.npy"))
    if not np.array_equal(a, b):
        raise tc.Failure(f"ONNX and NIR outputs differ in {np.count_nonzero(a != b)} places")
    print(f"snnexport model: ONNX and NIR compile to the same ops ({', '.join(from_nir[0])}) "
          f"and parameters; {a.size} outputs identical ({a.mean():.1%} spikes)")


def sinabs_data(x, y):
    tc.event_sequences(x, y, 2 * N, T, (2, 34, 34), seed=4, p=0.3)


def braille_data(x, y):
    g = np.random.default_rng(6)
    np.save(x, (g.standard_normal((2 * N, 16, 12)) * 3.0).astype(np.float32))
    np.save(y, g.integers(0, 7, 2 * N).astype(np.int32))


# file, dt, T, the data writer, learning rate
TRAINED = [("cnn_sinabs.nir", 1.0, T, sinabs_data, 0.05),
           ("braille_noDelay_bias_zero.nir", 1e-4, 16, braille_data, 0.02)]


def trained(bin_dir, work, name, dt, steps, data, lr):
    source, label = os.path.join(FILES, name), name[:-4]
    flags = ["--nir-dt", repr(dt), "--nir-steps", steps]
    art = os.path.join(work, label)
    compile_(bin_dir, source, art, *flags)
    x, y = os.path.join(work, label + ".x.npy"), os.path.join(work, label + ".y.npy")
    data(x, y)
    c = tr.TrainConfig(batch_size=8, steps=5, optimizer="sgd", lr=lr, momentum=0.9,
                       schedule="constant", loss="ce", seed=2)
    params = os.path.join(work, label + ".trained")
    tc.run([os.path.join(bin_dir, "snn-run"), "train", art, "--data-npy", f"{x},{y}",
            *tt.cli_flags(c), "--save-params", params, "--threads", 1, "--progress", "none"])
    nir_path = os.path.join(work, label + ".trained.nir")
    export_nir(bin_dir, art, params, nir_path, dt=dt)
    inputs = np.swapaxes(np.load(x)[:N], 0, 1)
    check_rates(nir_path, inputs, f"trained {label}", dt)
    again = os.path.join(work, label + ".again")
    compile_(bin_dir, nir_path, again, *flags)
    x_path = os.path.join(work, label + ".inputs.npy")
    np.save(x_path, np.ascontiguousarray(inputs))
    want = tc.load_params(params)
    original, _ = ref.read_nir(source)
    fields = {k: k.rsplit(".", 1) for k in want}
    moved = [k for k, (node, field) in fields.items()
             if not np.array_equal(want[k], original[node].get(field, want[k]))]
    if not moved:
        raise tc.Failure(f"{label}: training changed no weight")
    nodes, _ = ref.read_nir(nir_path)
    for name_, (node, field) in fields.items():
        if field != "sum_kernel" and not np.array_equal(nodes[node][field], want[name_]):
            raise tc.Failure(f"{nir_path}: {name_} is not the trained value")
    # The trained artifact: the program with its trained weights (snn-run export, ONNX).
    trained_art = os.path.join(work, label + ".trained_art")
    shutil.copytree(art, trained_art)
    with open(os.path.join(art, "manifest.json")) as f:
        (program,) = [p["file"] for p in json.load(f)["programs"]]
    tc.run([os.path.join(bin_dir, "snn-run"), "export", art, "--params", params, "-o",
            os.path.join(trained_art, program)])
    a = infer(bin_dir, trained_art, x_path, os.path.join(work, label + ".a.npy"))
    b = infer(bin_dir, again, x_path, os.path.join(work, label + ".b.npy"))
    if not np.array_equal(a, b):
        raise tc.Failure(f"{label}: trained vs re-imported: {np.count_nonzero(a != b)} outputs "
                         "differ")
    print(f"trained {label}: {len(moved)} trained weights written bit-equal ({', '.join(moved)}); "
          f"re-imported, {a.size} outputs identical")


def described(bin_dir, work):
    """The graphs of nir_files.py with every neuron primitive: imported, written back (the
    descriptions matched to their primitives) and imported again, the same program and
    outputs."""
    for name, (dt, steps, draw) in {"cuba_li.nir": (1e-4, 12, nf.spikes((12,), 0.3)),
                                    "conv_lif_threshold.nir": (
                                        1e-3, 10, nf.currents((2, 8, 8), 0.0, 1.0)),
                                    "sum_cubali.nir": (
                                        1e-3, 10, nf.currents((5,), -1.0, 1.0)),
                                    "per_channel.nir": (
                                        1e-3, 10, nf.spikes((3, 6, 6), 0.4)),
                                    "recurrent_lif.nir": (
                                        1e-3, 12, nf.normal((8,), 1.0)),
                                    "delay.nir": (
                                        1e-3, 10, nf.normal((6,), 1.0))}.items():
        path = os.path.join(work, name)
        nf.nir_from_json.write(nf.SYNTHETIC[name], path)
        flags = ["--nir-dt", repr(dt), "--nir-steps", steps]
        first = compile_(bin_dir, path, os.path.join(work, name + ".1"), *flags)
        x = np.stack([draw(np.random.default_rng(5), N) for _ in range(steps)])
        x_path = os.path.join(work, name + ".x.npy")
        np.save(x_path, x)
        # Every parameter and frozen weight as the artifact holds it: one step at rate 0.
        data = os.path.join(work, name + ".data.npy")
        np.save(data, np.ascontiguousarray(x.transpose(1, 0, *range(2, x.ndim))))
        np.save(data + ".y.npy", np.zeros(N, np.int64))
        params = os.path.join(work, name + ".params")
        tc.run([os.path.join(bin_dir, "snn-run"), "train", os.path.join(work, name + ".1"),
                "--data-npy", f"{data},{data}.y.npy", "--steps", 1, "--batch-size", N,
                "--lr", 0, "--save-params", params, "--progress", "none"])
        back = os.path.join(work, "back_" + name)
        tc.run([os.path.join(bin_dir, "snn-run"), "export", os.path.join(work, name + ".1"),
                "--params", params, "--format", "nir", "--nir-dt", repr(dt), "-o", back])
        second = compile_(bin_dir, back, os.path.join(work, name + ".2"), *flags)
        if first != second:
            raise tc.Failure(f"{name}: written back and re-imported, another program:\n"
                             f"{first}\n{second}")
        a = infer(bin_dir, os.path.join(work, name + ".1"), x_path, x_path + ".a.npy")
        b = infer(bin_dir, os.path.join(work, name + ".2"), x_path, x_path + ".b.npy")
        if not np.array_equal(a, b):
            raise tc.Failure(f"{name}: re-imported outputs differ in {np.count_nonzero(a != b)}")
        kinds = sorted({f["type"] for f in ref.read_nir(back)[0].values()})
        source = sorted({f["type"] for f in ref.read_nir(path)[0].values()})
        if kinds != source:
            raise tc.Failure(f"{name}: written back as {kinds}, the file holds {source}")
        print(f"{name}: written back as {', '.join(kinds)}; re-imported, the same program and "
              f"{a.size} outputs identical")


def refused(bin_dir, work):
    for name, model, culprit in [
            ("soft_reset", nn.Sequential(layer.Linear(4, 3), neuron.IFNode(v_reset=None)),
             "soft reset"),
            ("max_pool", nn.Sequential(layer.Conv2d(1, 2, 3), layer.MaxPool2d(2), neuron.IFNode()),
             "(max_pool2d): has no NIR primitive")]:
        functional.set_step_mode(model, "m")
        shape = (T, 2, 4) if name == "soft_reset" else (T, 2, 1, 6, 6)
        onnx_path = os.path.join(work, name + ".onnx")
        export_onnx(model, torch.rand(shape), onnx_path)
        art = os.path.join(work, name)
        compile_(bin_dir, onnx_path, art)
        params = os.path.join(work, name + "_params")
        tr.save_params(model, params)
        out = os.path.join(work, name + ".nir")
        proc = export_nir(bin_dir, art, params, out, expect_ok=False)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        if proc.returncode == 0 or len(lines) != 1 or culprit not in lines[0] \
                or os.path.exists(out):
            raise tc.Failure(f"{name}: expected one error line naming {culprit!r} and no "
                             f"file, got rc {proc.returncode}: {proc.stderr!r}")
        print(f"{name}: refused: {lines[0]}")


def main():
    bin_dir, work = tc.bin_and_work(__doc__)
    torch.set_num_threads(2)
    onnx_and_nir(bin_dir, work)
    for case in TRAINED:
        trained(bin_dir, work, *case)
    described(bin_dir, work)
    refused(bin_dir, work)
    print("PASS: ONNX and NIR compile alike; a trained model round-trips through NIR")


if __name__ == "__main__":
    tc.main_wrapper(main)

"""End-to-end inference check: PyTorch reference vs snn-compile + snn-run.

Builds a reference model with seeded random weights (snnexport.reference.make_case), exports
it to ONNX, compiles it with snn-compile, runs `snn-run infer`, and compares the output with
the PyTorch forward of the same nn.Module. Spike outputs must be identical; firing rates must
match within 1e-5 relative; a Linear readout's logits (Spikformer) within the float32 bound of
its GEMM that the case holds (bound.npy).

With `--batch-size B` the same input is also streamed B samples at a time (`snn-run infer
--batch-size B`): the output must compare the same way, and snn-run must report the samples, the
batches and samples/s.

With `--spike-linear-density D` snn-run infers with the event-driven Linear kernels: the
output must compare the same way, and `-v` must report Linear calls on them. With
`--measured-densities` it infers twice under the default automatic kernel choice with a
fresh crossover file: `-v` must report a crossover in [0, 1] for every Linear and conv2d shape
of the model, timed by the first run and kept for the second, which must take the same
kernels and give the same output bit for bit; the output must compare the same way
(whichever kernels the timings chose).

Usage: infer_case.py --bin BUILD/bin --work DIR --model NAME [--width W] [--T 4] [--N 8]
                     [--repeat-time] [--batch-size B] [--spike-linear-density D]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np


def run(cmd, env=None):
    print("+ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"FAIL: {cmd[0]} exited with {proc.returncode}")
    return proc


def compare(got, expected, spikes, bound=None):
    if got.shape != expected.shape:
        raise SystemExit(f"FAIL: output shape {got.shape} != reference {expected.shape}")
    if got.dtype != np.float32:
        raise SystemExit(f"FAIL: output dtype {got.dtype} is not float32")
    if spikes:
        mismatches = int(np.count_nonzero(got != expected))
        if mismatches:
            raise SystemExit(f"FAIL: {mismatches} of {got.size} spikes differ")
        return 0.0
    if bound is not None:  # logits: the float32 bound of the readout's GEMM
        excess = np.abs(got - expected) - bound
        if (excess > 0).any():
            raise SystemExit(f"FAIL: {int((excess > 0).sum())} outputs beyond the float32 "
                             f"bound of the readout's GEMM (worst excess {excess.max():.3g})")
        return float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-6)))
    scale = np.maximum(np.abs(expected), 1e-6)
    worst = float(np.max(np.abs(got - expected) / scale))
    if worst > 1e-5:
        raise SystemExit(f"FAIL: max relative error {worst:.3g} > 1e-5")
    return worst


def check_measured(infer, output, work):
    """The default automatic choice: -v reports one crossover in [0, 1] per Linear and conv2d
    layer shape of the model, with the calls it decided; the first run times them into a
    fresh crossover file, the second reads them from it and takes the same kernels, so the
    two outputs are equal bit for bit."""
    env = dict(os.environ, SPIKEMESH_KERNEL_CROSSOVERS=os.path.join(work, "crossovers.json"))
    pattern = (r"snn-run: (linear|conv2d) (.*?): (\d+) calls event-driven, (\d+) dense, mean "
               r"density ([0-9.e-]+); event-driven up to density ([0-9.e-]+) \((measured|kept "
               r"for this machine)")
    runs = []
    for attempt, origin in enumerate(("measured", "kept for this machine")):
        path = os.path.join(work, f"auto{attempt}.npy")
        proc = run(infer + ["--output", path, "-v"], env=env)
        found = re.findall(pattern, proc.stderr)
        kinds = {layer[0] for layer in found}
        if kinds != {"linear", "conv2d"} or any(
                not 0 <= float(layer[5]) <= 1 or int(layer[2]) + int(layer[3]) == 0 or
                layer[6] != origin for layer in found):
            raise SystemExit(f"FAIL: automatic kernel choice: expected Linear and conv2d "
                             f"crossovers in [0, 1] {origin}, with calls, -v printed "
                             f"{proc.stderr!r}")
        runs.append((path, [(layer[1], layer[2], layer[3], layer[5]) for layer in found]))
        print("\n".join(line for line in proc.stderr.splitlines()
                        if line.startswith("snn-run: linear") or
                        line.startswith("snn-run: conv2d")))
    if runs[0][1] != runs[1][1]:
        raise SystemExit(f"FAIL: the second run's kernel choices differ: {runs}")
    if not np.array_equal(np.load(runs[0][0]), np.load(runs[1][0])):
        raise SystemExit("FAIL: the run with the kept crossovers gives another output")
    shutil.copyfile(runs[0][0], output)


def check_blocks(infer, output, repeat_time, work):
    """The -v report shows fused spiking blocks (and one-step layers for a direct-encoded
    input) and channels-last convolutions, and running every node alone, or the
    convolutions on NCHW tensors, gives the same output bit for bit."""
    proc = run(infer + ["--output", output, "-v"])
    m = re.search(r"spiking blocks (\d+) fused, (\d+) node by node, (\d+) one-step layers",
                  proc.stderr)
    if not m or int(m.group(1)) == 0 or (repeat_time and int(m.group(3)) == 0):
        raise SystemExit(f"FAIL: -v reports no fused spiking block"
                         f"{' or one-step layer' if repeat_time else ''}: {proc.stderr!r}")
    convs = re.search(r"(\d+) conv2d calls channels-last", proc.stderr)
    if not convs or int(convs.group(1)) == 0:
        raise SystemExit(f"FAIL: -v reports no channels-last conv2d: {proc.stderr!r}")
    alone = os.path.join(work, "no_fusion.npy")
    run(infer + ["--output", alone, "--no-fusion"])
    if not np.array_equal(np.load(alone), np.load(output)):
        raise SystemExit("FAIL: --no-fusion gives another output than the spiking blocks")
    # The case's potentials keep a margin from the threshold, so NCHW convolutions (another
    # summation order) must give the same spikes too.
    planar = os.path.join(work, "no_channels_last.npy")
    run(infer + ["--output", planar, "--no-channels-last"])
    if not np.array_equal(np.load(planar), np.load(output)):
        raise SystemExit("FAIL: --no-channels-last gives another output")
    print(proc.stderr.strip())
    print("--no-fusion, --no-channels-last: the same output bit for bit")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="directory with snn-compile and snn-run")
    parser.add_argument("--work", required=True, help="scratch directory (recreated)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--width", type=int, default=None, help="channel/hidden width")
    parser.add_argument("--T", type=int, default=4)
    parser.add_argument("--N", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat-time", action="store_true",
                        help="feed the static [N, ...] image and let snn-run repeat it over T")
    parser.add_argument("--batch-size", type=int, default=0,
                        help="also stream the input this many samples at a time")
    parser.add_argument("--spike-linear-density", type=float, default=0.0,
                        help="run with the event-driven Linear kernels; -v must show calls")
    parser.add_argument("--spike-conv-density", type=float, default=0.0,
                        help="run with the event-driven conv2d kernel; -v must show calls")
    parser.add_argument("--measured-densities", action="store_true",
                        help="run twice with a fresh crossover file: -v must show each "
                             "layer shape's crossover, timed then kept, the same kernel "
                             "choices and the same output")
    parser.add_argument("--expect-blocks", action="store_true",
                        help="-v must report spiking blocks run fused (and, with "
                             "--repeat-time, one-step layers) and channels-last conv2d, and "
                             "--no-fusion and --no-channels-last must give the same output "
                             "bit for bit")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    make = [sys.executable, "-m", "snnexport.make_case", "--model", args.model,
            "--out", args.work, "--T", str(args.T), "--N", str(args.N), "--seed", str(args.seed)]
    if args.width is not None:
        make += ["--width", str(args.width)]
    run(make)
    with open(os.path.join(args.work, "meta.json")) as f:
        meta = json.load(f)

    model = os.path.join(args.work, "model.onnx")
    artifact = os.path.join(args.work, "artifact")
    run([os.path.join(args.bin, "snn-compile"), model, "-o", artifact])

    x = np.load(os.path.join(args.work, "input.npy"))
    expected = np.load(os.path.join(args.work, "expected.npy"))
    infer = [os.path.join(args.bin, "snn-run"), "infer", artifact]
    if args.repeat_time:
        if not np.array_equal(x, np.broadcast_to(x[0], x.shape)):
            raise SystemExit("FAIL: --repeat-time needs a direct-encoded case")
        static = os.path.join(args.work, "static.npy")
        np.save(static, np.ascontiguousarray(x[0]))
        infer += ["--input", static, "--repeat-time", str(x.shape[0])]
    else:
        infer += ["--input", os.path.join(args.work, "input.npy")]
    output = os.path.join(args.work, "output.npy")
    if args.spike_linear_density:
        infer += ["--spike-linear-density", str(args.spike_linear_density)]
        proc = run(infer + ["--output", output, "-v"])
        if "Linear calls on spike kernels" not in proc.stderr or \
                " 0 Linear calls on spike kernels" in proc.stderr:
            raise SystemExit("FAIL: --spike-linear-density: -v reports no Linear call on the "
                             f"spike kernels: {proc.stderr!r}")
        print(proc.stderr.strip())
    else:
        run(infer + ["--output", output])

    if args.spike_conv_density:
        infer += ["--spike-conv-density", str(args.spike_conv_density)]
        proc = run(infer + ["--output", output, "-v"])
        m = re.search(r"(\d+) conv2d calls on the spike kernel", proc.stderr)
        if not m or int(m.group(1)) == 0:
            raise SystemExit("FAIL: --spike-conv-density: -v reports no conv2d call on the "
                             f"spike kernel: {proc.stderr!r}")
        print(proc.stderr.strip())
    if args.measured_densities:
        check_measured(infer, output, args.work)
    if args.expect_blocks:
        check_blocks(infer, output, args.repeat_time, args.work)

    got = np.load(output)
    spikes = meta.get("output") == "spikes"
    bound_file = meta["files"].get("bound")
    bound = np.load(os.path.join(args.work, bound_file)) if bound_file else None
    worst = compare(got, expected, spikes, bound)
    if args.batch_size:
        streamed = os.path.join(args.work, "streamed.npy")
        proc = run(infer + ["--output", streamed, "--batch-size", str(args.batch_size)])
        worst = max(worst, compare(np.load(streamed), expected, spikes, bound))
        batches = -(-args.N // args.batch_size)
        want = f"{args.N} samples in "
        if want not in proc.stderr or f"{batches} batches of up to {args.batch_size}" not in \
                proc.stderr or "samples/s" not in proc.stderr:
            raise SystemExit(f"FAIL: --batch-size {args.batch_size}: expected a report of "
                             f"'{want}...' in {batches} batches with samples/s, got "
                             f"{proc.stderr!r}")
        print(f"streamed in {batches} batches of up to {args.batch_size}: equal as well")
    print(f"PASS: {args.model} T={args.T} N={args.N} output {list(got.shape)} "
          f"({'spikes identical' if spikes else f'max rel err {worst:.3g}'})")


if __name__ == "__main__":
    main()

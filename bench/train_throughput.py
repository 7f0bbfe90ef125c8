#!/usr/bin/python3
"""Training throughput: `snn-run train` against the PyTorch eager reference trainer
(`python3 -m snnexport.train`) on the same model, weights, data, batch, T and thread count,
measured in one run. Also the peak memory (RSS high-water mark) of each process.

For every model and T: make_case exports the model (seeded weights), snn-compile builds the
artifact, a synthetic .npy dataset of STEPS batches is written (csnn: static images with direct
encoding; vgg_dvs: binary event sequences [S, T, 2, H, W]), then both trainers run STEPS Adam
steps with --log, REPEAT times each, interleaved (the order alternates). Throughput is
steady-state: B / the median per-step time in the log after WARMUP steps (both trainers time a
step from assembling its batch to the end of the optimizer update), best of the repeats.
Wall-clock samples/s over the whole process (startup and data loading included) is printed too.
Peak RSS comes from wait4() on each child (the largest over the repeats). The reference runs as
shipped ("pytorch") and with snn-run's own process tuning given as environment
("pytorch-tuned": one OpenBLAS thread, activations kept on the heap); --reference picks.

--baseline-flags "F" also runs snn-run with flags F ("snn-run-base", e.g. "--no-fusion
--no-spike-bits") and reports snn-run's speedup and memory against it.

Not a test: run it on an otherwise idle machine.
  bench/train_throughput.py --bin build/bin [--threads N] [--batch 32] [--steps 20] [--json F]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import TUNED_ENV, model_named, stats_command, synthetic_input  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"


def sh(cmd, env=None):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} failed:\n{proc.stderr.strip()}")
    return proc


def measured(cmd, env, out_path):
    """Runs cmd with stdout+stderr to out_path; returns (wall seconds, peak RSS in MiB)."""
    t0 = time.perf_counter()
    with open(out_path, "wb") as out:
        p = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                             env=env)
        # wait4: this child's own rusage (RUSAGE_CHILDREN would be the max over all children)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    p.returncode = code
    if code != 0:
        with open(out_path, errors="replace") as f:
            tail = f.read()[-2000:]
        sys.exit(f"error: {' '.join(str(c) for c in cmd)} exited {code}:\n{tail.strip()}")
    return wall, usage.ru_maxrss / 1024.0


def steady_rate(log, warmup):
    steps = []
    with open(log) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event") == "step":
                steps.append(ev)
    if len(steps) <= warmup:
        sys.exit(f"error: {log}: {len(steps)} steps logged, need more than --warmup {warmup}")
    timed = steps[warmup:]
    # a step of B samples took B / samples_per_s seconds (B is constant: drop-last); the
    # median step time is robust against the odd step slowed down by other processes
    return float(np.median([s["samples_per_s"] for s in timed])), steps


def prepare_case(model, T, args, env):
    """Exports the model, compiles it, writes the dataset; returns (dir, case, artifact, data)."""
    m = model_named(model)
    flags = list(m.flags)
    overrides = {"csnn": {"--width": args.csnn_width},
                 "vgg_dvs": {"--width": args.vgg_width, "--image": args.vgg_image,
                             "--blocks": args.vgg_blocks},
                 "sew_resnet": {"--blocks": args.sew_blocks}}.get(model, {})
    for flag, value in overrides.items():
        if value is not None:
            flags[flags.index(flag) + 1] = str(value)
    d = os.path.join(args.work, f"{model}_T{T}")
    case, art = os.path.join(d, "case"), os.path.join(d, "artifact")
    sh([PYTHON, "-m", "snnexport.make_case", "--model", model, "--out", case, "--T", T,
        "--N", args.batch, "--attempts", 1, "--quiet", *flags], env)
    sh([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art], env)
    S = args.batch * args.steps
    g = np.random.default_rng(0)
    x = synthetic_input(m, T, S, g)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), g.integers(0, 10, S).astype(np.int64))
    size = " ".join(f"{flags[i][2:]} {flags[i + 1]}" for i in range(0, len(flags), 2))
    return d, case, art, f"{os.path.join(d, 'x.npy')},{os.path.join(d, 'y.npy')}", size


def run_trainers(d, trainers, args, S):
    """Runs each trainer --repeat times, interleaved; returns {name: best rates and runs}."""
    runs = {}
    os.sync()  # the dataset's writeback must not land in a timed run
    for rep in range(args.repeat):
        # alternate the order, so that no trainer always runs first
        for name, cmd, cmd_env in (trainers if rep % 2 == 0 else trainers[::-1]):
            log = os.path.join(d, f"{name}.{rep}.jsonl")
            wall, rss = measured(cmd + ["--log", log], cmd_env,
                                 os.path.join(d, f"{name}.{rep}.out"))
            rate, steps = steady_rate(log, args.warmup)
            print(f"   {name:13s} {rate:9.1f} samples/s steady, {S / wall:8.1f} "
                  f"samples/s wall ({wall:.1f} s), peak RSS {rss:7.0f} MiB", flush=True)
            best = runs.setdefault(name, {"samples_per_s": 0.0, "wall_samples_per_s": 0.0,
                                          "peak_rss_mib": 0.0, "runs": []})
            best["samples_per_s"] = max(best["samples_per_s"], rate)
            best["wall_samples_per_s"] = max(best["wall_samples_per_s"], S / wall)
            best["peak_rss_mib"] = max(best["peak_rss_mib"], rss)
            best["runs"].append({"samples_per_s": rate, "wall_s": wall, "peak_rss_mib": rss})
            best["first_loss"] = steps[0]["loss"]
            if name == "snn-run":
                best["kernels"] = kernel_report(log)
    a = runs["snn-run"]["first_loss"]
    if not all(abs(a - r["first_loss"]) <= 1e-4 * max(abs(r["first_loss"]), 1e-6)
               for r in runs.values()):
        print("   warning: first-step losses differ "
              f"({ {k: r['first_loss'] for k, r in runs.items()} }): not the same "
              "computation?", flush=True)
    return runs


def kernel_report(log):
    """Which kernels snn-run's steps ran: its end event's counters."""
    with open(log) as f:
        end = [e for e in map(json.loads, f) if e.get("event") == "end"]
    keys = ("spiking_blocks", "spike_bits", "spike_linear", "spike_conv", "event_kernels")
    return {k: end[-1][k] for k in keys if end and k in end[-1]}


def describe_kernels(kernels):
    parts = []
    if "spiking_blocks" in kernels:
        b = kernels["spiking_blocks"]
        parts.append(f"spiking blocks {b['fused']} fused, {b['node_by_node']} node by node, "
                     f"{b['one_step_layers']} one-step layers, "
                     f"{b.get('fused_norm_backward', 0)} BatchNorm backwards in the BPTT pass")
    if "spike_bits" in kernels:
        b = kernels["spike_bits"]
        parts.append(f"{b['tensors']} spike tensors kept as bits "
                     f"({b['bit_bytes'] / max(b['float_bytes'], 1):.1%} of float32)")
    for k in ("spike_linear", "spike_conv"):
        if k in kernels:
            parts.append(f"{k} {json.dumps(kernels[k])}")
    return "; ".join(parts) or "no spike-aware kernel ran"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="directory with snn-compile and snn-run (default build/bin)")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-train"))
    p.add_argument("--models", default="csnn,vgg_dvs",
                   help="comma-separated: csnn, vgg_dvs, sew_resnet, spiking_mlp "
                        "(default csnn,vgg_dvs)")
    p.add_argument("--T", default="4,8", help="comma-separated time steps (default 4,8)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", default=str(len(os.sched_getaffinity(0))),
                   help="comma-separated intra-op thread counts for both trainers (default: "
                        "the CPUs available)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=4, help="steps left out of the rate")
    p.add_argument("--repeat", type=int, default=2,
                   help="runs of each trainer, interleaved; the best is reported (default 2)")
    p.add_argument("--csnn-width", type=int)
    p.add_argument("--vgg-width", type=int)
    p.add_argument("--vgg-image", type=int)
    p.add_argument("--vgg-blocks", type=int)
    p.add_argument("--sew-blocks", type=int, help="sew_resnet's residual blocks (default 2)")
    p.add_argument("--reference", choices=("default", "tuned", "both"), default="both",
                   help="the PyTorch reference as shipped, with snn-run's process tuning "
                        "(one OpenBLAS thread, heap-kept activations), or both (default)")
    p.add_argument("--baseline-flags", default="",
                   help="also run snn-run with these flags as 'snn-run-base' (e.g. "
                        "'--no-fusion --no-spike-bits': the runtime without its spike-aware "
                        "paths), reported with its own speedup and RSS")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()

    snn_run = os.path.join(args.bin, "snn-run")
    for tool in (snn_run, os.path.join(args.bin, "snn-compile")):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found (build first, or pass --bin)")
    base_env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_export"))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rows = []
    for model in args.models.split(","):
        for T in (int(t) for t in args.T.split(",")):
            d, case, art, data, size = prepare_case(model, T, args, base_env)
            for threads in (int(t) for t in args.threads.split(",")):
                rows.append(measure_case(model, size, T, threads, d, case, art, data, args,
                                         dict(base_env, OMP_NUM_THREADS=str(threads))))
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": rows}, f, indent=2)


def measure_case(model, size, T, threads, d, case, art, data, args, env):
    B, static = args.batch, model_named(model).static
    common = ["--data-npy", data, "--steps", args.steps, "--batch-size", B, "--lr", "0.0001",
              "--optimizer", "adam", "--loss", "mse", "--seed", 0, "--threads", threads]
    if static:
        common += ["--repeat-time", T]
    print(f"== {model} ({size}), T={T}, B={B}, {threads} threads, {args.steps} steps",
          flush=True)
    stats = json.loads(sh(stats_command(PYTHON, case, data.split(",")[0], T, threads, B,
                                        static, train=True), dict(env, **TUNED_ENV)).stdout)
    print("   firing: " + ", ".join(f"{k} {v:.1%}" for k, v in stats["firing"].items()),
          flush=True)
    trainers = [("snn-run", [os.path.join(args.bin, "snn-run"), "train", art, *common], env)]
    if args.baseline_flags:
        trainers.append(("snn-run-base", [os.path.join(args.bin, "snn-run"), "train", art,
                                          *common, *args.baseline_flags.split()], env))
    reference = [PYTHON, "-m", "snnexport.train", "--init-from-case", case, *common, "--quiet"]
    if args.reference in ("default", "both"):
        trainers.append(("pytorch", reference, env))
    if args.reference in ("tuned", "both"):
        trainers.append(("pytorch-tuned", reference, dict(env, **TUNED_ENV)))
    runs = run_trainers(d, trainers, args, B * args.steps)
    print(f"   snn-run: {describe_kernels(runs['snn-run']['kernels'])}", flush=True)
    gflop = stats["train_flops_per_sample"] / 1e9
    for r in runs.values():
        r["gflops"] = r["samples_per_s"] * gflop
    return {"model": model, "size": size, "T": T, "batch": B, "threads": threads,
            "steps": args.steps, "warmup": args.warmup, "repeat": args.repeat,
            "gflop_per_sample": gflop, "gemm_peak_gflops": stats["gemm_peak_gflops"],
            "firing": stats["firing"], "trainers": runs}


def median_rate(trainer):
    """The median of a trainer's steady rates over its runs: one outlier run of either
    trainer moves the best-of ratio, not this one."""
    return float(np.median([r["samples_per_s"] for r in trainer["runs"]]))


def print_table(rows):
    """speedup: best run against best run; median: median run against median run."""
    refs = [n for n in ("pytorch", "pytorch-tuned", "snn-run-base") if n in rows[0]["trainers"]]
    head = (f"{'model':11s} {'T':>2s} {'B':>4s} {'thr':>3s} | {'snn-run/s':>9s} {'RSS MiB':>7s} "
            f"{'GFLOP/s':>7s}")
    for n in refs:
        label = {"pytorch": "PyTorch/s", "pytorch-tuned": "tuned/s"}.get(n, "base/s")
        head += (f" | {label:>9s} {'RSS MiB':>7s} {'GFLOP/s':>7s} {'speedup':>7s} {'median':>6s} "
                 f"{'wall':>5s}")
    print()
    print(head + " | GEMM GFLOP/s")
    for r in rows:
        t = r["trainers"]
        s_ = t["snn-run"]
        line = (f"{r['model']:11s} {r['T']:>2d} {r['batch']:>4d} {r['threads']:>3d} | "
                f"{s_['samples_per_s']:>9.1f} {s_['peak_rss_mib']:>7.0f} {s_['gflops']:>7.1f}")
        for n in refs:
            speed = s_["samples_per_s"] / t[n]["samples_per_s"]
            wall = s_["wall_samples_per_s"] / t[n]["wall_samples_per_s"]
            median = median_rate(s_) / median_rate(t[n])
            t[n]["speedup"], t[n]["median_speedup"], t[n]["wall_speedup"] = speed, median, wall
            line += (f" | {t[n]['samples_per_s']:>9.1f} {t[n]['peak_rss_mib']:>7.0f} "
                     f"{t[n]['gflops']:>7.1f} {speed:>6.2f}x {median:>5.2f}x {wall:>4.2f}x")
        print(line + f" | {r['gemm_peak_gflops']:>7.1f}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The planner on models it was not tuned on: for N random architectures (bench/random_snn.py)
and every candidate the planner lists on 2 and on 4 ranks, predicted against measured step
time and per-rank memory, with the built-in profile too (what a user without a profile gets),
and whether the first choice was the fastest measured.

Seeds: the held-out set is --first-seed 1000 onwards (the default). The cost model is tuned on
seeds 0-999 only (and on the benchmark models of bench/planner_check.py); nothing is fitted to
seeds from 1000 on.

1. Each seed's case is written by random_snn.py (batch --batch), with a synthetic dataset of
   --steps batches, and compiled for one process; a seed whose model has an earlier seed's
   parameter count and input shape (a profile cannot tell them apart) is skipped.
2. `snn-run calibrate --model ART ... --model-batches 1,4,16,B` over every model's
   one-process artifact, as a user would (docs/planner.md); or --profile FILE is used as given.
3. Before each model's runs, its one-process artifact trains as many steps as its runs
   (`snn-run --nproc 1 train`): that step over the profile's is how far the machine's speed
   moved since calibration (a shared host's slow spells last minutes); the summary also
   gives the step predictions of the models within 15 % of it.
   For each model and each rank count in --ranks: `snn-compile --topology dp=R
   --explain-json` lists the feasible candidates; each is compiled forced (`--mode`,
   `--topology` from its mesh) with the profile and again with the built-in one (the
   prediction a user without a profile gets); the best-predicted pipeline also runs under
   its other schedule (gpipe beside 1f1b, zero_bubble beside interleaved_1f1b). Each trains
   --steps SGD steps, or more for a model whose one-process step (the profile's, at the
   batch) is short: as many as fill --steady-seconds after the warm-up, at most --max-steps
   (`snn-run --nproc R train --threads 1`); a run's step is the median of rank 0's step
   times after --warmup steps, its memory the largest rank's measured peak (plan_check). A
   millisecond step on 2 CPUs shared by 2-4 ranks varies 1.2-5.4 ms from step to step: the
   median of 4 such steps measured a 1.4 ms dp=2 step of a small MLP at 5.9 ms. Each
   candidate runs --repeat times, in rounds over the model's candidates: its measured step
   and memory are the medians of its runs (one run of a candidate measured again two hours
   later was 0.67-1.40x the first on this host), and the summary gives how far apart a
   candidate's runs were.
4. The table, per candidate, and the distributions: measured / predicted step and memory
   (median, 90th percentile and worst of max(r, 1/r)), the share within 25 % and beyond 2x,
   the built-in profile's predictions within 3x, and per model and rank count whether the
   planner's first choice measured the fastest or within 10 % of it. A run that fails is
   listed with its error (and left out of the distributions); the survey goes on.

Not a test (the suite runs a 3-model version for its completeness): run it on an otherwise
idle machine.
  bench/planner_heldout.py [--models 20] [--first-seed 1000] [--ranks 2,4] [--batch 32]
                           [--steps 6] [--warmup 2] [--steady-seconds 0.1] [--max-steps 30]
                           [--repeat 2]
                           [--profile FILE | --quick] [--json FILE]
                           [--repredict ROWS]
"""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

import planner_check as pc
import train_distributed as td

HERE = os.path.dirname(os.path.abspath(__file__))
ALTERNATIVE_SCHEDULE = {1: "gpipe", 2: "zero_bubble"}  # the one beside each v's default
DRIFT = 1.15  # a model's one-process step off the profile's by more: the machine moved


def run_args(args):
    return argparse.Namespace(**dict(vars(args), threads=1, repeat=1, max_steal=1.0,
                                     retries=0))


def prepare(seed, args, env):
    """Writes case, data and the one-process artifact of random model `seed`."""
    d = os.path.join(args.work, f"seed{seed}")
    os.makedirs(d)
    case = os.path.join(d, "case")
    td.sh([td.PYTHON, os.path.join(HERE, "random_snn.py"), "--seed", seed, "--out", case,
           "--N", args.batch, "--attempts", 1], env, os.path.join(d, "random_snn.out"))
    with open(os.path.join(case, "meta.json")) as f:
        meta = json.load(f)
    spec, T = meta["spec"], meta["T"]
    g = np.random.default_rng(seed)
    S, step = args.batch * max(args.steps, args.max_steps), meta["input_shape"][2:]
    encoding = spec["input"]["encoding"]
    x = g.random((S, *step)) if encoding == "direct" else g.random((S, T, *step))
    xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(xp, (x < 0.3 if encoding == "events" else x).astype(np.float32))
    np.save(yp, g.integers(0, spec["classes"], S).astype(np.int64))
    whole = os.path.join(d, "art_whole")
    td.sh([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
           "--batch-size", args.batch, "-o", whole], env, os.path.join(d, "compile_whole.out"))
    return {"seed": seed, "dir": d, "case": case, "data": (xp, yp), "T": T, "spec": spec,
            "static": encoding == "direct", "whole": whole}


def identity(model):
    """What a device profile knows a model by: its trainable parameter count and input
    shape (two seeds may draw the same, e.g. attention stacks of other neuron options)."""
    with open(os.path.join(model["whole"], "manifest.json")) as f:
        manifest = json.load(f)
    parameters = sum(int(np.prod(p["shape"])) for p in manifest["parameters"]
                     if p.get("kind", "parameter") == "parameter")
    return parameters, tuple(manifest["input"]["shape"])


def prepare_models(args, env):
    """--models models from --first-seed on, a seed whose model a profile could not tell
    from an earlier seed's (identity()) skipped for the next."""
    models, seen, seed = [], set(), args.first_seed
    while len(models) < args.models:
        model = prepare(seed, args, env)
        seed += 1
        key = identity(model)
        if key in seen:
            print(f"   seed {model['seed']}: the same parameters and input shape as an "
                  "earlier seed's model, skipped", flush=True)
            continue
        seen.add(key)
        models.append(model)
    return models


def compile_forced(model, args, env, tag, flags, profile):
    art = os.path.join(model["dir"], f"art_{tag}")
    cmd = [os.path.join(args.bin, "snn-compile"), os.path.join(model["case"], "model.onnx"),
           "--batch-size", args.batch, "--optimizer-states=1", *flags, "-o", art]
    # without a profile of this machine: the built-in one, as a user without one gets it
    cmd += ["--device-profile", profile or "builtin"]
    td.sh(cmd, env, os.path.join(model["dir"], f"compile_{tag}.out"))
    with open(os.path.join(art, "manifest.json")) as f:
        return art, json.load(f)["plan"]


def listed_candidates(model, ranks, args, env):
    """(planner rank, candidate) of every feasible candidate on `ranks` ranks, fastest
    predicted first."""
    explain = os.path.join(model["dir"], f"explain_{ranks}.json")
    compile_forced(model, args, env, f"auto{ranks}",
                   ["--topology", f"dp={ranks}", "--explain-json", explain], args.profile)
    with open(explain) as f:
        listed = json.load(f)["plan"]["candidates"]
    ranked = sorted((c for c in listed if c["feasible"]), key=lambda c: c["step_seconds"])
    return list(enumerate(ranked, start=1))


def variants(candidate, other_schedule):
    """The forced compiles of one candidate: its default schedule, and for a pipeline, when
    `other_schedule`, also the other schedule its virtual stages allow."""
    flags = ["--mode", pc.mode_of(candidate["mode"]), "--topology",
             pc.topology_of(candidate["mesh"])]
    out = [("", flags)]
    if candidate["mode"] == "pp" and other_schedule:
        v = 2 if "(vpp 2)" in candidate["mesh"] else 1
        out.append((ALTERNATIVE_SCHEDULE[v], flags + ["--pp-schedule", ALTERNATIVE_SCHEDULE[v]]))
    return out


def set_steps(models, args):
    """Each model's steps a run: --steps, or enough to fill --steady-seconds after the
    warm-up at its one-process training step at the batch (the profile's curve of its
    artifact, where the profile has it), at most --max-steps. The profile's step is kept
    as the model's "calibrated_s" (None without it)."""
    with open(args.profile) as f:
        curves = {c["model"]: c["points"] for c in json.load(f).get("model_steps", [])}
    for m in models:
        points = [p["seconds"] for p in curves.get(m["whole"], []) if p["size"] == args.batch]
        m["calibrated_s"] = points[0] if points else None
        wanted = args.warmup + int(np.ceil(args.steady_seconds / points[0])) if points else 0
        m["steps"] = int(np.clip(wanted, args.steps, args.max_steps))


def machine_drift(model, args, env):
    """The model's one-process training step measured now (its whole artifact, as many
    steps as its runs take) over the profile's: how far the machine's speed moved since it
    was calibrated. A shared host's slow spells last minutes: 20 models' steps calibrated
    in one measured 1.2-1.6x their steps a day later, on both CPUs alike. None without
    the profile's step."""
    if not model["calibrated_s"]:
        return None
    rargs = run_args(args)
    rargs.ranks, rargs.T, rargs.steps = 1, model["T"], model["steps"]
    got = pc.measure(rargs, env, model["whole"], model["data"], model["static"], model["dir"],
                     "drift")
    return got["step_seconds"] / model["calibrated_s"]


def compiled_candidates(model, ranks, args, env):
    """(tag, artifact, row) of each listed candidate on `ranks` ranks (and of the best
    pipeline's other schedule), compiled with the profile and with the built-in one."""
    out, first_pipeline = [], True
    for planner_rank, c in listed_candidates(model, ranks, args, env):
        # the other schedule of the best pipeline only: each run costs seconds
        for schedule, flags in variants(c, first_pipeline):
            tag = (f"r{ranks}_{planner_rank}_{c['mode']}_{pc.topology_of(c['mesh'])}"
                   f"{'_' + schedule if schedule else ''}").replace(",", "_").replace("=", "")
            art, plan = compile_forced(model, args, env, tag, flags, args.profile)
            _, bare = compile_forced(model, args, env, tag + "_bare", flags, None)
            out.append((tag, art, {
                "seed": model["seed"], "family": model["spec"]["family"], "ranks": ranks,
                "drift": model.get("drift"),
                "planner_rank": planner_rank if not schedule else None, "mode": c["mode"],
                "mesh": c["mesh"], "schedule": plan.get("pp_schedule", "none"),
                "predicted_s": plan["prediction"]["step_seconds"],
                "builtin_s": bare["prediction"]["step_seconds"],
                "predicted_mem": plan["prediction"]["memory_bytes"], "steps": model["steps"],
                "runs_s": [], "runs_mem": [], "runs_steal": []}))
        first_pipeline = first_pipeline and c["mode"] != "pp"
    return out


def bench_candidates(model, ranks, args, env):
    """Every candidate's rows, each candidate trained --repeat times in rounds over all of
    them (a slow spell of the host lands on every candidate alike, not on one); measured:
    the median of its runs' steps and memory."""
    candidates = compiled_candidates(model, ranks, args, env)
    rargs = run_args(args)
    rargs.ranks, rargs.T, rargs.steps = ranks, model["T"], model["steps"]
    for round_ in range(args.repeat):
        for tag, art, r in candidates:
            if "failed" in r:
                continue
            try:
                got = pc.measure(rargs, env, art, model["data"], model["static"],
                                 model["dir"], tag if round_ == 0 else f"{tag}_run{round_}")
            except td.Failed as e:
                # a run that fails is a bug to report, not a reason to lose the survey
                r["failed"] = e.msg.strip().splitlines()[-1]
                print(f"   seed {r['seed']} {ranks} ranks {r['mode']} {r['mesh']}: FAILED "
                      f"({r['failed']})", flush=True)
                continue
            r["runs_s"].append(got["step_seconds"])
            r["runs_mem"].append(got["memory_bytes"])
            r["runs_steal"].append(got["steal"])
    rows = [r for _, _, r in candidates]
    for r in measured(rows):
        r.update(measured_s=float(np.median(r["runs_s"])),
                 measured_mem=float(np.median(r["runs_mem"])))
        print(f"   seed {r['seed']} {ranks} ranks #{r['planner_rank'] or '-'} {r['mode']} "
              f"{r['mesh']} {r['schedule']}: predicted {r['predicted_s'] * 1e3:.2f} ms "
              f"(built-in profile {r['builtin_s'] * 1e3:.2f}), measured "
              + ", ".join(f"{x * 1e3:.2f}" for x in r["runs_s"]) + " ms", flush=True)
    return rows


def repredict(args, env):
    """The rows of an earlier --json (its --work still holding the cases and the device
    profile) with this build's predictions, calibrated and built-in; nothing is measured."""
    with open(args.repredict) as f:
        rows = json.load(f)
    for i, r in enumerate(rows):
        model = {"dir": os.path.join(args.work, f"seed{r['seed']}")}
        model["case"] = os.path.join(model["dir"], "case")
        flags = ["--mode", pc.mode_of(r["mode"]), "--topology", pc.topology_of(r["mesh"])]
        flags += ["--pp-schedule", r["schedule"]] if r["mode"] == "pp" else []
        _, plan = compile_forced(model, args, env, f"re{i}", flags, args.profile)
        _, bare = compile_forced(model, args, env, f"re{i}_bare", flags, None)
        r["predicted_s"] = plan["prediction"]["step_seconds"]
        r["predicted_mem"] = plan["prediction"]["memory_bytes"]
        r["builtin_s"] = bare["prediction"]["step_seconds"]
    return rows


def spread(ratios):
    """Median, 90th percentile and worst of each ratio's distance max(r, 1/r) from 1."""
    d = [max(r, 1 / r) for r in ratios if r > 0]
    return (float(np.median(d)), float(np.percentile(d, 90)), max(d)) if d else (0, 0, 0)


def first_choices(rows):
    """Per (seed, ranks): the first choice's measured step over the fastest measured. The
    first choice is the listed candidate predicted fastest (planner rank 1 as measured; after
    --repredict, by this build's predictions)."""
    out = []
    for key in dict.fromkeys((r["seed"], r["ranks"]) for r in rows):
        mine = [r for r in rows if (r["seed"], r["ranks"]) == key]
        listed = [r for r in mine if r["planner_rank"] is not None]
        first = min(listed, key=lambda r: r["predicted_s"]) if listed else None
        fastest = min(mine, key=lambda r: r["measured_s"])
        if first:
            out.append((key, first, fastest, first["measured_s"] / fastest["measured_s"]))
    return out


def report(rows):
    print("\n| seed | family | ranks | planner rank | mode | mesh | schedule | predicted ms | "
          "measured ms | measured / predicted | built-in profile ms | measured / built-in | "
          "predicted MiB | measured MiB | measured / predicted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in measured(rows):
        print(f"| {r['seed']} | {r['family']} | {r['ranks']} | {r['planner_rank'] or '-'} | "
              f"{r['mode']} | {r['mesh']} | {r['schedule']} | {r['predicted_s'] * 1e3:.2f} | "
              f"{r['measured_s'] * 1e3:.2f} | {r['measured_s'] / r['predicted_s']:.2f} | "
              f"{r['builtin_s'] * 1e3:.2f} | {r['measured_s'] / r['builtin_s']:.2f} | "
              f"{r['predicted_mem'] / td.MiB:.2f} | {r['measured_mem'] / td.MiB:.2f} | "
              f"{r['measured_mem'] / max(1, r['predicted_mem']):.2f} |")
    summary(rows)


def measured(rows):
    return [r for r in rows if "failed" not in r]


def summary(rows):
    failed = [r for r in rows if "failed" in r]
    rows = measured(rows)
    n = len(rows)
    step = [r["measured_s"] / r["predicted_s"] for r in rows]
    mem = [r["measured_mem"] / r["predicted_mem"] for r in rows if r["predicted_mem"]]
    bare = [r["measured_s"] / r["builtin_s"] for r in rows]
    print()
    for name, ratios, goal in (("step", step, 1.25), ("memory", mem, 1.25),
                               ("built-in profile step", bare, 3.0)):
        med, p90, worst = spread(ratios)
        inside = sum(max(x, 1 / x) <= goal for x in ratios if x > 0)
        print(f"{name}: measured / predicted off by a factor of median {med:.2f}, 90th "
              f"percentile {p90:.2f}, worst {worst:.2f}; {inside} of {len(ratios)} within "
              f"{goal:g}x, {sum(max(x, 1 / x) > 2 for x in ratios if x > 0)} beyond 2x")
    apart = [max(r["runs_s"]) / min(r["runs_s"]) for r in rows if len(r.get("runs_s", [])) > 1]
    if apart:
        med, p90, worst = spread(apart)
        print(f"a candidate's runs apart (slowest / fastest): median {med:.2f}, 90th "
              f"percentile {p90:.2f}, worst {worst:.2f}; {sum(a > 1.25 for a in apart)} of "
              f"{len(apart)} more than 25 %")
    print(f"failed runs: {len(failed)}")
    for r in failed:
        print(f"  seed {r['seed']} on {r['ranks']} ranks: {r['mode']} {r['mesh']} "
              f"{r['schedule']}: {r['failed']}")
    steady = [r for r in rows if r.get("drift") and max(r["drift"], 1 / r["drift"]) <= DRIFT]
    seeds = {r["seed"] for r in rows if r.get("drift")}
    if seeds:
        ratios = [r["measured_s"] / r["predicted_s"] for r in steady]
        inside = sum(max(x, 1 / x) <= 1.25 for x in ratios)
        print(f"models whose one-process step measured before their runs within "
              f"{(DRIFT - 1) * 100:.0f} % of the profile's: {len({r['seed'] for r in steady})} "
              f"of {len(seeds)}; their steps: {inside} of {len(ratios)} within 1.25x, "
              f"{sum(max(x, 1 / x) > 2 for x in ratios)} beyond 2x")
    picks = first_choices(rows)
    good = sum(ratio <= 1.10 for *_, ratio in picks)
    print(f"first choice the fastest measured or within 10 %: {good} of {len(picks)} "
          f"(model, rank count) pairs, over {n} runs")
    for (seed, ranks), first, fastest, ratio in picks:
        if ratio > 1.10:
            print(f"  seed {seed} on {ranks} ranks: first choice {first['mode']} "
                  f"{first['mesh']} measured {ratio:.2f}x the fastest, {fastest['mode']} "
                  f"{fastest['mesh']} {fastest['schedule']}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--bin", default=os.path.join(td.ROOT, "build", "bin"))
    p.add_argument("--work", default=os.path.join(td.ROOT, "build", "bench-heldout"))
    p.add_argument("--models", type=int, default=20, help="how many random models")
    p.add_argument("--first-seed", type=int, default=1000,
                   help="seed of the first model (held-out: 1000 and up; tuning: below 1000)")
    p.add_argument("--ranks", default="2,4", help="rank counts to plan for")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2,
                   help="runs of each candidate, in rounds over the model's candidates; "
                        "its measured step and memory are their medians")
    p.add_argument("--steady-seconds", type=float, default=0.1,
                   help="a model with a short step runs more than --steps: enough to fill "
                        "this long after the warm-up, by its one-process step")
    p.add_argument("--max-steps", type=int, default=30,
                   help="the most steps a run takes (with --steady-seconds)")
    p.add_argument("--profile", help="a device profile to use instead of calibrating")
    p.add_argument("--quick", action="store_true",
                   help="calibrate with snn-run calibrate --quick (fewer, shorter points)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per training run")
    p.add_argument("--json", help="also write the rows here")
    p.add_argument("--repredict", metavar="ROWS",
                   help="a --json of an earlier run: predict its rows again, measure nothing")
    args = p.parse_args()
    if args.models < 1 or args.repeat < 1 or args.steps <= args.warmup:
        td.fail("--models and --repeat must be >= 1 and --steps larger than --warmup")
    if args.max_steps < args.steps or not args.steady_seconds >= 0:
        td.fail("--max-steps must be at least --steps and --steady-seconds at least 0")
    rank_counts = [int(r) for r in args.ranks.split(",") if r]
    env = dict(os.environ, PYTHONPATH=os.path.join(td.ROOT, "python_export"))
    if args.repredict:
        args.profile = args.profile or os.path.join(args.work, "device-profile.json")
        rows = repredict(args, env)
        report(rows)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=2)
        return 0
    t0 = time.monotonic()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    models = prepare_models(args, env)
    if not args.profile:
        args.profile = os.path.join(args.work, "device-profile.json")
        flags = [a for m in models for a in ("--model", m["whole"])]
        flags += ["--model-batches", ",".join(str(b) for b in sorted({1, 4, 16, args.batch}))]
        pc.calibrate(run_args(args), env, flags + (["--quick"] if args.quick else []))
    set_steps(models, args)
    rows = []
    for m in models:
        m["drift"] = machine_drift(m, args, env)
        print(f"== seed {m['seed']}: {m['spec']['family']}, T={m['T']}, {m['steps']} steps "
              f"a run; one process now / calibrated: "
              + (f"{m['drift']:.2f}" if m["drift"] else "-"), flush=True)
        for ranks in rank_counts:
            rows += bench_candidates(m, ranks, args, env)
    report(rows)
    print(f"\n{len(models)} models, {len(rows)} runs in {time.monotonic() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The short version of bench/planner_heldout.py (3 random models, 2 ranks) runs to the end:
every model is written, calibrated, planned, and each candidate the planner lists is compiled,
trained and measured; the summary lines are printed.

Checked: no run failed; each model has rows for dp, fsdp and a pipeline with both
schedules, exactly one first choice, each candidate measured in two runs (--repeat 2) and its
step their median, its one-process step measured before its runs over the profile's (the
machine's drift), positive predictions with the calibrated and the built-in profile, measured
steps and memory; the predicted memory of every candidate within 2x of the measured peak (the
times are the benchmark's to judge: this machine is shared while the suite runs).

Usage: heldout_short.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    rows_path = os.path.join(args.work, "rows.json")
    cmd = [sys.executable, os.path.join(ROOT, "bench", "planner_heldout.py"), "--bin", args.bin,
           "--work", os.path.join(args.work, "bench"), "--models", "3", "--ranks", "2",
           "--batch", "16", "--steps", "4", "--warmup", "1", "--steady-seconds", "0.02",
           "--max-steps", "6", "--repeat", "2", "--quick", "--json", rows_path]
    run = subprocess.run(cmd, capture_output=True, text=True)
    print(run.stdout[-4000:])
    if run.returncode != 0:
        sys.exit(f"FAIL: planner_heldout.py exited {run.returncode}:\n{run.stderr[-3000:]}")
    for line in ("step: measured / predicted", "built-in profile step:",
                 "models whose one-process step measured before their runs",
                 "first choice the fastest measured", "a candidate's runs apart"):
        if line not in run.stdout:
            sys.exit(f"FAIL: the summary has no line starting {line!r}")
    with open(rows_path) as f:
        rows = json.load(f)
    failures = []
    for seed in sorted({r["seed"] for r in rows}):
        mine = [r for r in rows if r["seed"] == seed]
        modes = {(r["mode"], r["schedule"]) for r in mine}
        for want in (("dp", "none"), ("fsdp", "none"), ("pp", "1f1b"), ("pp", "gpipe")):
            if want not in modes:
                failures.append(f"seed {seed}: no {want} row (got {sorted(modes)})")
        if sum(r["planner_rank"] == 1 for r in mine) != 1:
            failures.append(f"seed {seed}: not exactly one first choice")
        for r in mine:
            what = f"seed {seed} {r['mode']} {r['mesh']} {r['schedule']}"
            if "failed" in r:
                failures.append(f"{what}: the run failed: {r['failed']}")
                continue
            if not 4 <= r["steps"] <= 6:
                failures.append(f"{what}: {r['steps']} steps, not within --steps 4 and "
                                 "--max-steps 6")
            if not (r.get("drift") or 0) > 0:
                failures.append(f"{what}: no one-process step over the profile's: {r}")
            runs = r["runs_s"]
            if len(runs) != 2 or r["measured_s"] != (runs[0] + runs[1]) / 2:
                failures.append(f"{what}: measured {r['measured_s']} is not the median of "
                                 f"its two runs {runs}")
            if not (r["predicted_s"] > 0 and r["builtin_s"] > 0 and r["measured_s"] > 0):
                failures.append(f"{what}: a step time is not positive: {r}")
            ratio = r["measured_mem"] / max(1, r["predicted_mem"])
            if not 0.5 <= ratio <= 2.0:
                failures.append(f"{what}: measured memory {ratio:.2f}x the prediction")
    if len({r["seed"] for r in rows}) != 3:
        failures.append(f"rows of {len({r['seed'] for r in rows})} models, not 3")
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print(f"OK: 3 models, {len(rows)} candidates planned, trained and measured")


if __name__ == "__main__":
    main()

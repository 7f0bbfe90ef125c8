"""`snn-run calibrate --model` and what the planner does with it, end to end:

  calibrate --quick --ranks 2 --model ART --model-batches 1,2,4
      -> exit 0; the profile's model_steps holds ART's trainable parameter count (the
         manifest's parameters), its input shape, 3 ascending points, as many cold_points
         (each step timed right after other work), as many node_by_node_points (its spiking
         blocks taken apart), and its training steps as 2
         data-parallel replicas (replicated: ranks 2, the same sizes); a summary row
  ... --model MLP (no spiking blocks, no BatchNorm)
      -> its entry has no node_by_node_points, and its replicated steps too
  snn-compile --device-profile P on the same model
      -> the rationale scales the op curves to the measured step (also node by node); the manifest's
         plan.prediction.times says so; --optimizer-states=1 is recorded
  snn-compile --device-profile P on another model (other width)
      -> the rationale says the profile has no step of this model
  snn-run train (SGD with momentum) of that artifact
      -> the end event's plan_check.optimizer_states is {planned 1, trained 1}
  --model of a missing directory, of a partitioned artifact, given twice, two copies of one
  model, --model-batches 4,2, --optimizer-states=3
      -> exit 1, one `error:` line naming the problem, no profile / artifact written

Usage: calibrate_model.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np


class Failure(Exception):
    pass


def run(cmd, expect_ok=True):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300)
    if expect_ok and proc.returncode != 0:
        raise Failure(f"{cmd} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def expect_error(cmd, needle, no_output):
    proc = run(cmd, expect_ok=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    if proc.returncode != 1 or len(errors) != 1 or needle not in errors[0]:
        raise Failure(f"{cmd}: expected exit 1 and one error line with {needle!r}, got "
                      f"{proc.returncode}:\n{proc.stderr}")
    if os.path.exists(no_output):
        raise Failure(f"{cmd}: wrote {no_output}")
    print(f"ok   {errors[0]}")


def make_case(work, name, width, model="csnn"):
    case = os.path.join(work, name)
    subprocess.run([sys.executable, "-m", "snnexport.make_case", "--model", model, "--width",
                    str(width), "--T", "2", "--N", "4", "--out", case, "--quiet"], check=True)
    return os.path.join(case, "model.onnx")


def trainable_elements(art):
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    total = sum(int(np.prod(p["shape"])) for p in manifest["parameters"]
                if p.get("kind", "parameter") == "parameter")
    return total, manifest["input"]["shape"]


def check_step(step, art, proc, blocks):
    parameters, shape = trainable_elements(art)
    sizes = [p["size"] for p in step["points"]]
    if (step["parameters"], step["input"], sizes) != (parameters, shape, [1.0, 2.0, 4.0]):
        raise Failure(f"model step {step}, expected {parameters} parameters, input {shape}")
    apart = step.get("node_by_node_points")
    if blocks != (apart is not None):
        raise Failure(f"{art}: node_by_node_points {apart}, the model "
                      f"{'has' if blocks else 'has no'} spiking blocks")
    cold = step.get("cold_points")
    if not cold:
        raise Failure(f"{art}: no cold_points")
    replicated = step.get("replicated")
    if not replicated or [r["ranks"] for r in replicated] != [2]:
        raise Failure(f"{art}: replicated steps over {[r['ranks'] for r in replicated]} ranks, "
                      "calibrated --ranks 2")
    for points in [step["points"], cold] + ([apart] if apart else []) + \
            [r["points"] for r in replicated]:
        if [p["size"] for p in points] != sizes or not all(p["seconds"] > 0 for p in points):
            raise Failure(f"{art}: points {points}")
    if f"step of {art}" not in proc.stdout:
        raise Failure(f"no summary row for the model step:\n{proc.stdout}")
    print(f"ok   {os.path.basename(art)}: {parameters} parameters, input {shape}, "
          f"{[round(p['seconds'] * 1e3, 2) for p in step['points']]} ms"
          + (f", node by node {[round(p['seconds'] * 1e3, 2) for p in apart]} ms"
             if apart else "")
          + f", 2 replicas {[round(p['seconds'] * 1e3, 2) for p in replicated[0]['points']]} ms")


def check_profile(snn_run, art, mlp_art, work):
    """The CSNN's blocks (BatchNorm, LIF, pooling) are also measured taken apart; the
    MLP has none to take apart."""
    profile = os.path.join(work, "profile.json")
    proc = run([snn_run, "calibrate", "--quick", "--ranks", "2", "--model", art, "--model",
                mlp_art, "--model-batches", "1,2,4", "--out", profile, "--progress", "none"])
    with open(profile) as f:
        steps = json.load(f).get("model_steps", [])
    if len(steps) != 2:
        raise Failure(f"model_steps: {steps}")
    check_step(steps[0], art, proc, blocks=True)
    check_step(steps[1], mlp_art, proc, blocks=False)
    return profile


def check_plans(compile_, snn_run, onnx, other_onnx, profile, work):
    art = os.path.join(work, "art_planned")
    proc = run([compile_, onnx, "--topology", "dp=2", "--batch-size", "8", "--device-profile",
                profile, "--optimizer-states=1", "--explain", "-o", art])
    if "Op times are scaled to this model's measured training step" not in proc.stdout or \
            "with its spiking blocks run node by node" not in proc.stdout:
        raise Failure(f"the rationale does not use the measured steps:\n{proc.stdout}")
    with open(os.path.join(art, "manifest.json")) as f:
        prediction = json.load(f)["plan"]["prediction"]
    if "scaled to this model's measured training step" not in prediction["times"] or \
            prediction["optimizer_states"] != 1:
        raise Failure(f"plan.prediction: {prediction}")
    other = run([compile_, other_onnx, "--topology", "dp=2", "--batch-size", "8",
                 "--device-profile", profile, "--explain", "-o", os.path.join(work, "art_other")])
    if "has no training step of this model" not in other.stdout:
        raise Failure(f"another model took this one's step:\n{other.stdout}")
    print("ok   the plan scales to the measured step of its own model only")
    return art


def check_train(snn_run, art, work):
    g = np.random.default_rng(0)
    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    np.save(x, (g.random((16, 2, 1, 28, 28)) < 0.3).astype(np.float32))
    np.save(y, g.integers(0, 10, 16).astype(np.int64))
    log = os.path.join(work, "train.jsonl")
    run([snn_run, "--nproc", "2", "train", art, "--data-npy", f"{x},{y}", "--steps", "2",
         "--batch-size", "8", "--lr", "0.01", "--momentum", "0.9", "--threads", "1", "--log",
         log, "--progress", "none"])
    with open(os.path.join(work, "train.rank0.jsonl")) as f:
        end = [json.loads(line) for line in f if '"end"' in line][-1]
    states = end["plan_check"]["optimizer_states"]
    if states != {"planned": 1, "trained": 1}:
        raise Failure(f"plan_check.optimizer_states {states}")
    print(f"ok   plan_check.optimizer_states {states}")


def check_errors(compile_, snn_run, onnx, art, work):
    out = os.path.join(work, "bad.json")
    base = [snn_run, "calibrate", "--quick", "--ranks", "2", "--out", out]
    missing = os.path.join(work, "no-such-artifact")
    expect_error(base + ["--model", missing], "no-such-artifact", out)
    tp = os.path.join(work, "art_tp")
    run([compile_, onnx, "--topology", "tp=2", "--mode", "tp", "--batch-size", "8", "-o", tp])
    expect_error(base + ["--model", tp], "per-rank parts", out)
    expect_error(base + ["--model", art, "--model", art + "/"], "given twice", out)
    copy = os.path.join(work, "art_copy")
    shutil.copytree(art, copy, dirs_exist_ok=True)
    expect_error(base + ["--model", art, "--model", copy], "are the same model", out)
    expect_error(base + ["--model", art, "--model-batches", "4,2"], "ascending", out)
    bad_art = os.path.join(work, "art_bad")
    expect_error([compile_, onnx, "--optimizer-states=3", "-o", bad_art],
                 "optimizer-states must be 0", bad_art)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    compile_ = os.path.join(args.bin, "snn-compile")
    snn_run = os.path.join(args.bin, "snn-run")
    try:
        onnx = make_case(args.work, "case", 8)
        other = make_case(args.work, "other", 12)
        whole = os.path.join(args.work, "art_whole")
        run([compile_, onnx, "--batch-size", "8", "-o", whole])
        mlp = os.path.join(args.work, "art_mlp")
        run([compile_, make_case(args.work, "mlp", 16, "deep_mlp"), "--batch-size", "8", "-o",
             mlp])
        check_errors(compile_, snn_run, onnx, whole, args.work)
        profile = check_profile(snn_run, whole, mlp, args.work)
        planned = check_plans(compile_, snn_run, onnx, other, profile, args.work)
        check_train(snn_run, planned, args.work)
    except (Failure, subprocess.TimeoutExpired, subprocess.CalledProcessError) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("calibrate --model: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

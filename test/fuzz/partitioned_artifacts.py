"""The partitioned-artifacts fuzz target: mutations of real `snn-compile --mode tp` and
`--mode pp` artifacts (their manifest, or one rank's program; test/fuzz/artifact_mutations.py),
each run on 2 ranks by `snn-run --nproc 2 infer ... --dist-timeout 10`.

An outcome is fine when the run exits 1 with an `error:` line, or exits 0 with the unmutated
artifact's output (a field the runtime rightly ignores), or (pp only, program mutations) exits 0
with another output: a stage program is the model, and every rank runs the edited one. Anything
else is a finding: a signal or "terminate called", a hang past 90 s, another exit code, exit 1
without an `error:` line, or exit 0 with another output after a manifest mutation or a mutation
of one tp rank's program (the ranks ran programs that disagree, which their start-up agreement
must refuse). Findings are saved as recipes under --save
(test/fuzz/regressions/partitioned-artifacts/ from scripts/fuzz.sh).

  partitioned_artifacts.py --bin BUILD/bin --work DIR --seconds N [--seed S] [--save DIR]
  partitioned_artifacts.py --bin BUILD/bin --work DIR --mutants K --seed S   (fixed mutants)
  partitioned_artifacts.py --bin BUILD/bin --work DIR --replay FILE|DIR ...

Exits 1 when a fixed or replayed mutant is a finding, or when --seconds found a new one.
"""
import argparse
import glob
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import artifact_mutations as mutations  # noqa: E402

BASES = {"tp": ["--mode", "tp", "--topology", "tp=2"],
         "pp": ["--mode", "pp", "--topology", "pp=2", "--pp-microbatches", "4"]}
RUN_TIMEOUT = 90
SIGNAL_SIGNS = ("terminate called", "EnforceNotMet", "SIGPIPE", "signal", "exited with code 141")


def compile_bases(bin_dir, work):
    """The deep MLP (3 layers, 8 wide) as tp=2 and pp=2 artifacts, and their outputs."""
    case = os.path.join(work, "case")
    if not os.path.exists(os.path.join(case, "model.onnx")):
        subprocess.run([sys.executable, "-m", "snnexport.make_case", "--model", "deep_mlp",
                        "--layers", "3", "--width", "8", "--out", case, "--quiet"], check=True)
    outputs = {}
    for base, flags in BASES.items():
        art = os.path.join(work, f"base_{base}")
        shutil.rmtree(art, ignore_errors=True)
        subprocess.run([os.path.join(bin_dir, "snn-compile"), os.path.join(case, "model.onnx"),
                        *flags, "--batch-size", "8", "-o", art], check=True, capture_output=True)
        rc, err, out = run_infer(bin_dir, art, case)
        if rc != 0:
            raise SystemExit(f"error: the unmutated {base} artifact fails (exit {rc}): {err}")
        outputs[base] = out
    return case, outputs


def run_infer(bin_dir, art, case):
    """(exit code or 'hang', stderr, output array or None) of a 2-rank infer."""
    out = os.path.join(art, "output.npy")
    cmd = [os.path.join(bin_dir, "snn-run"), "--nproc", "2", "infer", art, "--input",
           os.path.join(case, "input.npy"), "--output", out, "--dist-timeout", "10"]
    # Its own session, so a hang's whole process group (launcher and ranks) can be ended.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        _, err = proc.communicate()
        return "hang", err, None
    output = np.load(out) if proc.returncode == 0 and os.path.exists(out) else None
    return proc.returncode, err, output


def classify(recipe, rc, err, output, expected):
    """'fine' or the finding's name."""
    errors = [l for l in err.splitlines() if l.startswith("error: ")]
    if rc == "hang":
        return "hang"
    if any(sign in err for sign in SIGNAL_SIGNS) or rc < 0 or rc > 128:
        return f"signal (exit {rc})"
    if rc == 1:
        return "fine" if errors else "exit 1 without an error: line"
    if rc != 0:
        return f"exit {rc}"
    if output is not None and output.shape == expected.shape and \
            np.allclose(output, expected, atol=1e-6):
        return "fine"
    if recipe["base"] == "pp" and not recipe["mutation"]["kind"].startswith("manifest_"):
        return "fine"  # an edited stage program is another model, run by every rank alike
    if recipe["base"] == "tp" and not recipe["mutation"]["kind"].startswith("manifest_"):
        return "tp ranks ran differing programs to exit 0"
    return "manifest mutation ran to exit 0 with another output"


def run_recipe(args, case, outputs, recipe, index):
    art = os.path.join(args.work, "mutant")
    shutil.rmtree(art, ignore_errors=True)
    shutil.copytree(os.path.join(args.work, f"base_{recipe['base']}"), art)
    try:
        mutations.apply_mutation(art, recipe["mutation"])
    except (ValueError, TypeError, OverflowError) as e:
        return "fine", f"(not writable as a file: {e})"  # e.g. an attribute onnx cannot hold
    rc, err, output = run_infer(args.bin, art, case)
    verdict = classify(recipe, rc, err, output, outputs[recipe["base"]])
    last = [l for l in err.splitlines() if l.strip()][-1:] or [""]
    print(f"#{index} {recipe['base']} {json.dumps(recipe['mutation'])[:160]} -> exit {rc}: "
          f"{verdict}: {last[0][:200]}", flush=True)
    return verdict, err


def draw_recipe(rng, args):
    base = rng.choice(sorted(BASES))
    art = os.path.join(args.work, f"base_{base}")
    if rng.random() < 0.5:
        with open(os.path.join(art, "manifest.json")) as f:
            mutation = mutations.draw_manifest_mutation(rng, json.load(f))
    else:
        programs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(art, "*.onnx")))
        mutation = mutations.draw_program_mutation(rng, art, programs)
    return {"target": "partitioned-artifacts", "base": base, "mutation": mutation}


def save(directory, recipe, verdict, err):
    os.makedirs(directory, exist_ok=True)
    text = json.dumps(recipe, sort_keys=True)
    name = f"{recipe['base']}-{recipe['mutation']['kind']}-{hashlib.sha1(text.encode()).hexdigest()[:10]}.json"
    with open(os.path.join(directory, name), "w") as f:
        json.dump(dict(recipe, found=verdict, stderr_tail=err[-600:]), f, indent=1)
    print(f"  saved {os.path.join(directory, name)}")


def fuzz(args, case, outputs):
    """Draws and runs mutants for --seconds (or --mutants of them); returns the findings."""
    rng = random.Random(args.seed)
    findings, count, end = 0, 0, time.monotonic() + (args.seconds or 1e9)
    while time.monotonic() < end and (args.mutants is None or count < args.mutants):
        recipe = draw_recipe(rng, args)
        count += 1
        verdict, err = run_recipe(args, case, outputs, recipe, count)
        if verdict == "fine":
            continue
        if args.save:
            save(args.save, recipe, verdict, err)
        findings += 1
    print(f"partitioned-artifacts: {count} mutants, {findings} new finding(s)")
    return findings


def replay(args, case, outputs):
    files = []
    for path in args.replay:
        # A target without saved findings has no directory (git keeps no empty one).
        if os.path.isdir(path) or not os.path.exists(path):
            files += sorted(glob.glob(os.path.join(path, "*.json")))
        else:
            files.append(path)
    failed = 0
    for index, file in enumerate(files, 1):
        with open(file) as f:
            recipe = json.load(f)
        verdict, _ = run_recipe(args, case, outputs, recipe, index)
        failed += verdict != "fine"
    print(f"partitioned-artifacts: replayed {len(files)} saved mutants, {failed} still failing")
    return failed


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seconds", type=float)
    p.add_argument("--mutants", type=int)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--replay", nargs="+")
    p.add_argument("--save")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    case, outputs = compile_bases(args.bin, args.work)
    failed = replay(args, case, outputs) if args.replay else 0
    if args.seconds or args.mutants:
        print(f"partitioned-artifacts: seed {args.seed}")
        failed += fuzz(args, case, outputs)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""Bad inputs across the whole tool chain: each must exit non-zero with one `error:` line that
names the culprit, print no stack trace, and leave no output file behind.

Usage: cli_errors.py --bin BUILD/bin --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx

FAILURES = []


def expect_error(name, cmd, must_mention, forbidden_output=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    problems = []
    if proc.returncode == 0:
        problems.append("exit code 0")
    if proc.returncode < 0:
        problems.append(f"killed by signal {-proc.returncode}")
    if not lines or not lines[-1].startswith("error: "):
        problems.append(f"last stderr line is not 'error: ...': {lines[-1:]}")
    elif must_mention not in lines[-1]:
        problems.append(f"error does not mention {must_mention!r}: {lines[-1]}")
    if any("Stack dump" in l or "Traceback" in l or "frame #" in l for l in lines):
        problems.append("stack trace printed")
    if forbidden_output and os.path.exists(forbidden_output):
        problems.append(f"left {forbidden_output} behind")
    status = "ok  " if not problems else "FAIL"
    print(f"{status} {name}: {lines[-1] if lines else '<no stderr>'}")
    if problems:
        FAILURES.append(f"{name}: {'; '.join(problems)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    compile_ = os.path.join(args.bin, "snn-compile")
    run = os.path.join(args.bin, "snn-run")
    w = lambda *p: os.path.join(args.work, *p)

    # A good model and artifact to corrupt.
    subprocess.run([sys.executable, "-m", "snnexport.make_case", "--model", "spiking_mlp",
                    "--out", w("case"), "--width", "16", "--quiet"], check=True)
    subprocess.run([compile_, w("case", "model.onnx"), "-o", w("art")], check=True,
                   capture_output=True)

    expect_error("compile: missing file", [compile_, w("nope.onnx"), "-o", w("out1")],
                 "nope.onnx", w("out1"))
    with open(w("case", "model.onnx"), "rb") as f:
        data = f.read()
    with open(w("truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 3])
    expect_error("compile: truncated ONNX", [compile_, w("truncated.onnx"), "-o", w("out2")],
                 "truncated.onnx", w("out2"))
    with open(w("text.onnx"), "w") as f:
        f.write("not an onnx model\n")
    expect_error("compile: not ONNX", [compile_, w("text.onnx"), "-o", w("out3")],
                 "text.onnx", w("out3"))

    # A value_info whose batch disagrees with the computed one: a sentence naming the node
    # and both shapes, not MLIR's bare "incompatible return type(s)".
    model = onnx.load(w("case", "model.onnx"))
    declared = next(v for v in model.graph.value_info if v.name == "0/unfold")
    declared.type.tensor_type.shape.dim[1].dim_value = 5
    onnx.save(model, w("batch5.onnx"))
    expect_error("compile: value_info batch at odds", [compile_, w("batch5.onnx"), "-o", w("out4")],
                 "but the model declares tensor<4x5x16xf32>", w("out4"))

    x = np.load(w("case", "input.npy"))
    np.save(w("wrong_shape.npy"), x[..., :-1].copy())
    expect_error("infer: wrong input shape",
                 [run, "infer", w("art"), "--input", w("wrong_shape.npy"), "--output", w("y1.npy")],
                 "shape", w("y1.npy"))
    np.save(w("float64.npy"), x.astype(np.float64))
    expect_error("infer: float64 input",
                 [run, "infer", w("art"), "--input", w("float64.npy"), "--output", w("y2.npy")],
                 "float64.npy", w("y2.npy"))
    expect_error("infer: missing input",
                 [run, "infer", w("art"), "--input", w("absent.npy"), "--output", w("y3.npy")],
                 "absent.npy", w("y3.npy"))
    expect_error("infer: missing artifact",
                 [run, "infer", w("no_artifact"), "--input", w("case", "input.npy"),
                  "--output", w("y4.npy")], "no_artifact", w("y4.npy"))
    shutil.copytree(w("art"), w("art_trunc"))
    program = w("art_trunc", "program_0.onnx")
    with open(program, "rb") as f:
        blob = f.read()
    with open(program, "wb") as f:
        f.write(blob[: len(blob) // 2])
    expect_error("infer: truncated program",
                 [run, "infer", w("art_trunc"), "--input", w("case", "input.npy"),
                  "--output", w("y5.npy")], "program_0.onnx", w("y5.npy"))

    # snn-run export: its source of weights, and where it writes.
    expect_error("export: no weights named",
                 [run, "export", w("art"), "-o", w("e1.onnx")], "--checkpoint", w("e1.onnx"))
    os.makedirs(w("empty_ck"))
    expect_error("export: empty checkpoint directory",
                 [run, "export", w("art"), "--checkpoint", w("empty_ck"), "-o", w("e2.onnx")],
                 "empty_ck", w("e2.onnx"))
    expect_error("export: output directory missing",
                 [run, "export", w("art"), "--checkpoint", w("empty_ck"),
                  "-o", w("no_dir", "e3.onnx")], "no_dir", w("no_dir", "e3.onnx"))
    expect_error("export: under --nproc",
                 [run, "--nproc", "2", "export", w("art"), "--checkpoint", w("empty_ck"),
                  "-o", w("e4.onnx")], "--nproc", w("e4.onnx"))
    # --max-restarts: train's, and only with a checkpoint to continue from.
    expect_error("infer: --max-restarts",
                 [run, "--nproc", "1", "--max-restarts", "2", "infer", w("art"), "--input",
                  w("case", "input.npy"), "--output", w("y6.npy")], "only train restarts",
                 w("y6.npy"))
    expect_error("train: --max-restarts without --resume",
                 [run, "--nproc", "1", "--max-restarts", "2", "train", w("art"), "--steps", "2", "--batch-size", "4", "--lr", "0.1",
                  "--checkpoint", w("ck_restart")], "--resume", w("ck_restart"))

    if FAILURES:
        print("\n".join(["FAILED:"] + FAILURES))
        sys.exit(1)
    print("PASS: all bad inputs rejected cleanly")


if __name__ == "__main__":
    main()

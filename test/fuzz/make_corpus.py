#!/usr/bin/env python3
"""The fuzzers' seed corpus, made from the exported reference models.

  onnx-import/  model.onnx of each reference model (small sizes; make_case)
  manifest/     manifest.json of each compiled artifact: one process, dp, fsdp, tp, pp, dp x pp
  npy/          each model's input.npy and expected.npy, and .npy files of every header version

Usage: make_corpus.py --snn-compile BIN --out DIR   (PYTHONPATH must reach python_export/)
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

MODELS = {
    "spiking_mlp": ["--width", "16"],
    "deep_mlp": ["--width", "16", "--layers", "4", "--neuron", "plif"],
    "csnn": ["--width", "4"],
    "vgg_dvs": ["--width", "4", "--image", "16", "--blocks", "2"],
    "sew_resnet": ["--width", "4"],
}
# snn-compile flags per manifest seed (the models' batch is N = 8).
LAYOUTS = {
    "none": [],
    "dp2": ["--mode", "dp", "--topology", "dp=2", "--batch-size", "8"],
    "fsdp2": ["--mode", "fsdp", "--topology", "dp=2", "--batch-size", "8"],
    "tp2": ["--mode", "tp", "--topology", "tp=2", "--batch-size", "8"],
    "pp2": ["--mode", "pp", "--topology", "pp=2", "--batch-size", "8"],
    "dp2pp2": ["--mode", "pp", "--topology", "dp=2,pp=2", "--batch-size", "8"],
}


def run(cmd):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    return done.returncode == 0, done.stderr.strip()


def make_models(work, out):
    cases = {}
    for model, extra in MODELS.items():
        case = os.path.join(work, model)
        ok, err = run([sys.executable, "-m", "snnexport.make_case", "--model", model, "--out",
                       case, "--attempts", 1, "--quiet", *extra])
        if not ok:
            sys.exit(f"error: make_case {model}: {err}")
        shutil.copy(os.path.join(case, "model.onnx"), os.path.join(out, "onnx-import",
                                                                   f"{model}.onnx"))
        for name in ("input", "expected"):
            shutil.copy(os.path.join(case, f"{name}.npy"), os.path.join(out, "npy",
                                                                        f"{model}-{name}.npy"))
        cases[model] = case
    return cases


def make_manifests(snn_compile, cases, work, out):
    count = 0
    for model, case in cases.items():
        for layout, flags in LAYOUTS.items():
            art = os.path.join(work, f"art-{model}-{layout}")
            ok, _ = run([snn_compile, os.path.join(case, "model.onnx"), *flags, "-o", art])
            if ok:  # not every layout fits every model (tp needs candidates): seeds where it does
                shutil.copy(os.path.join(art, "manifest.json"),
                            os.path.join(out, "manifest", f"{model}-{layout}.json"))
                count += 1
    if count == 0:
        sys.exit("error: no artifact compiled; is --snn-compile right?")


def make_npy_versions(out):
    g = np.random.default_rng(0)
    arrays = {"scalar": np.float32(1.5), "empty": np.zeros((0, 3), np.float32),
              "labels-i8": g.integers(0, 10, 7), "rank5": g.random((2, 1, 2, 3, 2), np.float32)}
    for name, array in arrays.items():
        np.save(os.path.join(out, "npy", f"{name}.npy"), array)
    for version in ((1, 0), (2, 0), (3, 0)):
        path = os.path.join(out, "npy", f"version-{version[0]}.npy")
        with open(path, "wb") as f:
            a = g.random((3, 4), np.float32)
            header = {"descr": "<f4", "fortran_order": False, "shape": a.shape}
            np.lib.format._write_array_header(f, header, version)
            f.write(a.tobytes())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snn-compile", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for target in ("onnx-import", "manifest", "npy"):
        os.makedirs(os.path.join(args.out, target), exist_ok=True)
    work = os.path.join(args.out, ".work")
    shutil.rmtree(work, ignore_errors=True)
    cases = make_models(work, args.out)
    make_manifests(args.snn_compile, cases, work, args.out)
    make_npy_versions(args.out)
    shutil.rmtree(work)
    for target in ("onnx-import", "manifest", "npy"):
        print(f"{target}: {len(os.listdir(os.path.join(args.out, target)))} seeds")


if __name__ == "__main__":
    main()

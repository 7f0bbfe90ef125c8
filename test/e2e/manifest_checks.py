"""Manifest fields out of range or at odds with the rest of the plan, and rank programs at odds
with the manifest (docs/artifact-format.md, "What the reader checks"): each edit of a real
`snn-compile --mode tp|pp|fsdp` artifact must make `snn-run --nproc 2 infer` exit 1, killed by
no signal, with an `error:` line naming the artifact and the field or parameter at fault. The
unedited artifacts run first, so a check that refuses good artifacts fails here too.

Usage: manifest_checks.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import onnx
from onnx import helper

FAILURES = []


def compile_artifacts(bin_dir, work):
    """The deep MLP (8 wide: 8-element biases) as tp=2, pp=2 and fsdp on dp=2 artifacts."""
    case = os.path.join(work, "case")
    subprocess.run([sys.executable, "-m", "snnexport.make_case", "--model", "deep_mlp",
                    "--layers", "3", "--width", "8", "--out", case, "--quiet"], check=True)
    flags = {"tp": ["--mode", "tp", "--topology", "tp=2"],
             "pp": ["--mode", "pp", "--topology", "pp=2", "--pp-microbatches", "4"],
             "fsdp": ["--mode", "fsdp", "--topology", "dp=2"]}
    arts = {}
    for mode, extra in flags.items():
        arts[mode] = os.path.join(work, f"art_{mode}")
        subprocess.run([os.path.join(bin_dir, "snn-compile"), os.path.join(case, "model.onnx"),
                        *extra, "--batch-size", "8", "-o", arts[mode]], check=True,
                       capture_output=True)
    return case, arts


def infer(bin_dir, art, case, out):
    cmd = [os.path.join(bin_dir, "snn-run"), "--nproc", "2", "infer", art,
           "--input", os.path.join(case, "input.npy"), "--output", out, "--dist-timeout", "30"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def mutated(arts, work, name, mode, edit_manifest=None, edit_program=None):
    """A copy of the `mode` artifact with its manifest (a dict) and/or one program (file name,
    onnx.ModelProto) edited in place by the given functions."""
    dst = os.path.join(work, name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(arts[mode], dst)
    if edit_manifest:
        path = os.path.join(dst, "manifest.json")
        with open(path) as f:
            manifest = json.load(f)
        edit_manifest(manifest)
        with open(path, "w") as f:
            json.dump(manifest, f, indent=2)
    if edit_program:
        file, edit = edit_program
        model = onnx.load(os.path.join(dst, file))
        edit(model)
        onnx.save(model, os.path.join(dst, file))
    return dst


def expect_refused(bin_dir, case, art, name, *needles):
    proc = infer(bin_dir, art, case, os.path.join(art, "y.npy"))
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
    problems = []
    if proc.returncode != 1:
        problems.append(f"exit code {proc.returncode}, not 1")
    if "terminate called" in proc.stderr or "signal" in proc.stderr:
        problems.append("a rank died of a signal")
    for needle in (os.path.basename(art),) + needles:
        if not any(needle in l for l in errors):
            problems.append(f"no error line mentions {needle!r}")
    print(f"{'ok  ' if not problems else 'FAIL'} {name}: {errors[:1] or proc.stderr[-300:]}")
    if problems:
        FAILURES.append(f"{name}: {'; '.join(problems)}")


def set_plan(key, value):
    return lambda m: m["plan"].__setitem__(key, value)


def set_parameter(name, key, value):
    def edit(m):
        next(p for p in m["parameters"] if p["name"] == name)[key] = value
    return edit


def drop_parameter(name):
    return lambda m: m.__setitem__("parameters",
                                   [p for p in m["parameters"] if p["name"] != name])


def add_attribute(op_type, attribute):
    def edit(model):
        node = next(n for n in model.graph.node if n.op_type == op_type)
        node.attribute.append(helper.make_attribute(attribute, 1))
    return edit


# (name, artifact mode, manifest edit, program edit, words the error line must hold)
CASES = [
    ("tp_mesh_dim 7", "tp", set_plan("tp_mesh_dim", 7), None, "plan.tp_mesh_dim", "7"),
    ("tp_mesh_dim -5", "tp", set_plan("tp_mesh_dim", -5), None, "plan.tp_mesh_dim", "-5"),
    ("dp_mesh_dim 2^62", "tp", set_plan("dp_mesh_dim", 2 ** 62), None, "plan.dp_mesh_dim",
     str(2 ** 62)),
    ("pp_mesh_dim on a tp axis", "tp", set_plan("pp_mesh_dim", 0), None, "plan.pp_mesh_dim"),
    ("batch_size 0", "tp", set_plan("batch_size", 0), None, "plan.batch_size", "0"),
    ("batch_size -8", "fsdp", set_plan("batch_size", -8), None, "plan.batch_size", "-8"),
    ("pp_virtual_stages -1", "pp", set_plan("pp_virtual_stages", -1), None,
     "plan.pp_virtual_stages", "-1"),
    ("pp_microbatches -3", "pp", set_plan("pp_microbatches", -3), None,
     "plan.pp_microbatches", "-3"),
    ("pp_microbatches on tp", "tp", set_plan("pp_microbatches", 4), None,
     "plan.pp_microbatches", "4"),
    ("pp_layout of 3 stages", "pp", set_plan("pp_layout", [1, 1, 1]), None, "plan.pp_layout"),
    ("memopt_level -2", "tp", set_plan("memopt_level", -2), None, "plan.memopt_level", "-2"),
    ("communication over no axis", "tp",
     lambda m: m["plan"]["communication"][0].__setitem__("mesh_axis", "xx"), None,
     "plan.communication[0].mesh_axis", "xx"),
    ("stage on a tp parameter", "tp", set_parameter("stack.0.weight", "stage", 0), None,
     "parameters[0].stage", "tp"),
    ("stage on an fsdp parameter", "fsdp", set_parameter("stack.0.weight", "stage", 0), None,
     "parameters[0].stage", "fsdp"),
    ("split parameter of fsdp", "fsdp",
     lambda m: m["parameters"][0].update(sharding="split", split_dim=0, mesh_axis="dp"), None,
     "parameters[0].sharding", "partitioned"),
    ("split_groups 2 on a bias", "tp", set_parameter("stack.0.bias", "split_groups", 2), None,
     "parameters[1].split_groups", "2"),
    ("tp parameter entry deleted", "tp", drop_parameter("stack.2.weight"), None,
     "stack.2.weight", "manifest.json"),
    ("pp parameter entry deleted", "pp", drop_parameter("stack.4.bias"), None,
     "stack.4.bias", "manifest.json"),
    ("unknown attribute on a tp rank's op", "tp", None,
     ("program_1.onnx", add_attribute("all_reduce", "reduce_op")), "reduce_op", "all_reduce"),
    ("unknown attribute on a pp stage's op", "pp", None,
     ("program_1.onnx", add_attribute("recv", "tag")), "tag", "recv"),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    case, arts = compile_artifacts(args.bin, args.work)
    for mode, art in arts.items():
        proc = infer(args.bin, art, case, os.path.join(args.work, f"y_{mode}.npy"))
        if proc.returncode != 0:
            FAILURES.append(f"unedited {mode} artifact: exit {proc.returncode}: "
                            f"{proc.stderr[-500:]}")
    for name, mode, edit_manifest, edit_program, *needles in CASES:
        art = mutated(arts, args.work, re.sub(r"\W+", "_", name), mode, edit_manifest,
                      edit_program)
        expect_refused(args.bin, case, art, name, *needles)
    if FAILURES:
        print("\n".join(["FAILED:"] + FAILURES))
        sys.exit(1)
    print(f"PASS: {len(CASES)} edited artifacts refused")


if __name__ == "__main__":
    main()

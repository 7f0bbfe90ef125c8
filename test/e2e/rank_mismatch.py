"""Partitioned artifacts whose rank programs do not agree fail cleanly on 2 ranks.

From real `snn-compile --mode tp` (the CSNN, its convs split) and `--mode pp` (a deep MLP)
artifacts, one rank's program is corrupted the way a careless copy or an edit would:
  - tp: an all_reduce removed from program_1, a conv stride changed in program_1 (so the
    message sizes differ), program_0 copied over program_1, the mesh coordinate metadata
    removed (an older compiler's artifact), a neuron's v_reset or decay_input edited in
    program_1 (the messages stay the same size: only the ranks' node comparison sees it), a
    conv's groups set to one that does not divide its channels in program_1;
  - pp: the send removed from the stage program rank 1 runs (it fails while loading, and
    its peer used to die of SIGPIPE writing to it, then blamed by the launcher).
Each `snn-run --nproc 2 infer|train` (short --dist-timeout) must exit 1 with an `error:`
line naming the rank and the cause, the launcher's last line must name the rank that failed
first, and nothing may mention a signal ("signal", "SIGABRT", "SIGPIPE", "terminate called").
The pp case and the groups case are races, run 5 times (3 infer, 2 train).

Usage: rank_mismatch.py --bin BUILD/bin --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from snnexport.export.names import MESH_COORDINATE_KEY

FORBIDDEN = ("signal", "SIGABRT", "SIGPIPE", "terminate called")
FAILURES = []


def compile_case(args, model, mode, topology, case_options, compile_options=()):
    case = os.path.join(args.work, f"case_{model}")
    art = os.path.join(args.work, f"art_{model}_{mode}")
    subprocess.run([sys.executable, "-m", "snnexport.make_case", "--model", model, "--out", case,
                    "--T", "4", "--N", "4", "--seed", "0", "--attempts", "1", "--quiet"]
                   + case_options, check=True)
    subprocess.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
                    "--mode", mode, "--topology", topology, "--batch-size", "4", "-o", art]
                   + list(compile_options), check=True, capture_output=True)
    x = np.load(os.path.join(case, "input.npy"))
    samples = np.random.default_rng(0).random((8,) + x.shape[2:], dtype=np.float32)
    np.save(os.path.join(case, "x.npy"), samples)
    np.save(os.path.join(case, "y.npy"), np.arange(8, dtype=np.int64) % 4)
    return case, art


def corrupt(art, name, program, edit):
    """A copy of `art` whose `program` went through `edit(model)`."""
    out = os.path.join(os.path.dirname(art), f"{os.path.basename(art)}_{name}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(art, out)
    path = os.path.join(out, program)
    model = onnx.load(path)
    edit(model)
    onnx.save(model, path)
    return out


def remove_first(model, op_type):
    """Deletes the first `op_type` node, its consumers reading its input instead."""
    nodes = model.graph.node
    index = next(i for i, n in enumerate(nodes) if n.op_type == op_type)
    node = nodes[index]
    for other in nodes:
        for i, name in enumerate(other.input):
            if node.output and name == node.output[0]:
                other.input[i] = node.input[0]
    del nodes[index]


def set_first_conv_stride(model, stride):
    conv = next(n for n in model.graph.node if n.op_type == "conv2d")
    next(a for a in conv.attribute if a.name == "stride").ints[:] = [stride, stride]


def set_first_attribute(model, op_type, name, value):
    node = next(n for n in model.graph.node if n.op_type == op_type)
    attribute = next(a for a in node.attribute if a.name == name)
    if attribute.type == onnx.AttributeProto.FLOAT:
        attribute.f = value
    else:
        attribute.i = value


def set_conv_groups(model, index, groups):
    conv = [n for n in model.graph.node if n.op_type == "conv2d"][index]
    next(a for a in conv.attribute if a.name == "groups").i = groups


def drop_coordinate(model):
    kept = [p for p in model.metadata_props if p.key != MESH_COORDINATE_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)


def expect_refusal(args, name, art, case, command, must_mention, launcher_rank=None):
    run = [os.path.join(args.bin, "snn-run"), "--nproc", "2", command, art, "--dist-timeout", "10"]
    if command == "infer":
        run += ["--input", os.path.join(case, "input.npy"),
                "--output", os.path.join(args.work, f"{name}.npy")]
    else:
        run += ["--data-npy", os.path.join(case, "x.npy") + "," + os.path.join(case, "y.npy"),
                "--batch-size", "4", "--lr", "0.1", "--steps", "1"]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
    problems = []
    if proc.returncode != 1:
        problems.append(f"exit code {proc.returncode}, expected 1")
    if not any("rank" in l and all(m in l for m in must_mention) for l in errors):
        problems.append(f"no error line naming a rank and {must_mention}")
    if launcher_rank is not None and (not errors or
                                      f"rank {launcher_rank} exited with code 1" not in errors[-1]):
        problems.append(f"the launcher's line does not name rank {launcher_rank}")
    problems += [f"{word!r} in the output" for word in FORBIDDEN if word in out]
    print(f"{'FAIL' if problems else 'ok  '} {name}: {errors[0] if errors else '<no error>'}")
    if problems:
        FAILURES.append(f"{name}: {'; '.join(problems)}\n{out}")


def tp_cases(args):
    case, art = compile_case(args, "csnn", "tp", "tp=2", ["--width", "8", "--classes", "4"],
                             ["--experimental-conv-tp"])
    no_reduce = corrupt(art, "no_all_reduce", "program_1.onnx",
                        lambda m: remove_first(m, "all_reduce"))
    stride = corrupt(art, "stride", "program_1.onnx", lambda m: set_first_conv_stride(m, 2))
    copied = os.path.join(args.work, "art_copied")
    shutil.rmtree(copied, ignore_errors=True)
    shutil.copytree(art, copied)
    shutil.copy(os.path.join(copied, "program_0.onnx"), os.path.join(copied, "program_1.onnx"))
    old = corrupt(art, "no_coordinate", "program_1.onnx", drop_coordinate)
    for command in ("infer", "train"):
        expect_refusal(args, f"tp {command}: all_reduce removed", no_reduce, case, command,
                       ["collective over mesh axis 'tp'", "all_reduce"])
    expect_refusal(args, "tp infer: conv stride changed", stride, case, "infer",
                   ["collective over mesh axis 'tp'", "program_1.onnx"])
    for command in ("infer", "train"):
        expect_refusal(args, f"tp {command}: program_0 copied over program_1", copied, case,
                       command, ["rank 1", "mesh coordinate tp=0", "tp=1"])
    expect_refusal(args, "tp infer: no mesh coordinate", old, case, "infer",
                   ["rank 1", "no mesh coordinate", "recompile"])
    v_reset = corrupt(art, "v_reset", "program_1.onnx",
                      lambda m: set_first_attribute(m, "if_node", "v_reset", 0.5))
    for command in ("infer", "train"):
        expect_refusal(args, f"tp {command}: a neuron's v_reset edited", v_reset, case, command,
                       ["rank 1", "v_reset = 0, rank 1's of", "program_1.onnx has v_reset = 0.5"])
    groups = corrupt(art, "groups", "program_1.onnx", lambda m: set_conv_groups(m, 1, 3))
    for attempt, command in enumerate(["infer"] * 3 + ["train"] * 2):
        expect_refusal(args, f"tp {command} #{attempt + 1}: conv groups 3 on rank 1", groups,
                       case, command, ["rank 1", "groups"])
    case, art = compile_case(args, "deep_mlp", "tp", "tp=2", ["--neuron", "lif"])
    decay = corrupt(art, "decay_input", "program_1.onnx",
                    lambda m: set_first_attribute(m, "lif_node", "decay_input", 0))
    expect_refusal(args, "tp infer: a LIF's decay_input edited", decay, case, "infer",
                   ["rank 1", "decay_input = 1, rank 1's of", "program_1.onnx has decay_input = 0"])


def pp_case(args):
    case, art = compile_case(args, "deep_mlp", "pp", "pp=2", ["--layers", "4"])
    no_send = corrupt(art, "no_send", "program_1.onnx", lambda m: remove_first(m, "send"))
    # A race (whether the peer was writing when rank 1 exited): five runs, three of infer.
    for attempt, command in enumerate(["infer"] * 3 + ["train"] * 2):
        expect_refusal(args, f"pp {command} #{attempt + 1}: stage 1's send removed", no_send,
                       case, command, ["rank 1", "program_1.onnx"], launcher_rank=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    tp_cases(args)
    pp_case(args)
    if FAILURES:
        print("\n".join(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

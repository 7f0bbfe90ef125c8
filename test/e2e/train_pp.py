"""Pipeline-parallel runs equal one process accumulating over the same microbatches.

For one model, each stage count S and each schedule: the artifact compiled with `snn-compile
--mode pp --topology pp=S[,vpp=V]` (or `dp=D,pp=S`) holds one program per logical stage with
explicit send/recv. Required, against PyTorch in one process:
  - `snn-run --nproc W infer` on the case input: the output equal to the reference's (eval mode
    uses running statistics, so cutting the batch changes nothing; make_case keeps membrane
    potentials at least 1e-4 from the threshold, so no spike may flip);
  - 5 training steps (SGD with momentum) against the reference trainer with gradient
    accumulation over the same microbatches (`snnexport.train` with `microbatches` = D x M, see
    docs/training.md): losses within 1e-4 relative, the loss moving, every parameter and buffer
    within 1e-4 relative; every rank's saved parameters bit-identical to rank 0's;
  - with `--memopt`, the same training with `--pp-memopt-stages` recomputing every stage (the
    first, the last and any between): the same losses and weights as without recomputation
    (bit-identical), and the trace shows each recomputation;
  - each rank log's end event reports the schedule's bubble (measured and theoretical) and the
    tensor bytes (before the steps < peak);
  - every neuron layer of the reference fires at 5-50 % on the case input and on the first
    training batch.

With `--tp T` every stage is also tensor-parallel over T ranks (`--topology [dp=D,]pp=S,tp=T`,
a hybrid mesh): the compiler partitions @main over tp before the split, so each stage has one
program per tp coordinate, and the same checks hold on D x S x T ranks.

Usage: train_pp.py --bin BUILD/bin --work DIR --model deep_mlp|csnn|vgg_dvs|sew_resnet
                   [--layers L] [--neuron lif|if|plif] [--width W] [--stages 2,4] [--vpp V]
                   [--dp D] [--tp T] [--conv-tp] [--schedules gpipe,1f1b,...] [--memopt]
                   [--microbatches M] [--expect-fused-blocks]

`--microbatches M` sets the microbatches per replica (default: the fewest the schedule
allows); `--expect-fused-blocks` also requires every rank's end event to count its spiking
blocks all fused (none node by node).
"""
import argparse
import json
import os
import shutil

import train_common as tc  # first: it sets the BLAS threads before torch loads
import torch  # noqa: I100
import train_tp as ttp
import train_trajectory as tt
from snnexport import train as tr

T, B, STEPS = ttp.T, ttp.B, 5
MODELS = ttp.MODELS


def microbatches(stages, vpp, dp, asked=None):
    """The fewest microbatches the schedule allows (S x V), at least 2 per replica, or
    `asked`."""
    m = asked or max(stages * vpp, 2)
    if (B // dp) % m:
        raise tc.Failure(f"batch {B} over dp={dp} does not divide into {m} microbatches")
    return m


def compile_pp(args, case, stages, schedule, memopt=None):
    tag = f"pp{stages}_{schedule}" + (f"_memopt{memopt}" if memopt else "")
    art = os.path.join(args.work, f"art_{tag}")
    shutil.rmtree(art, ignore_errors=True)
    topology = (f"dp={args.dp}," if args.dp > 1 else "") + f"pp={stages}" + \
        (f",tp={args.tp}" if args.tp > 1 else "")
    if args.vpp > 1:
        topology += f",vpp={args.vpp}"
    m = microbatches(stages, args.vpp, args.dp, args.microbatches)
    cmd = [os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
           "--mode", "pp", "--topology", topology, "--batch-size", B,
           "--pp-schedule", schedule, "--pp-microbatches", m, "-o", art]
    if memopt:
        cmd += ["--pp-memopt-stages", memopt]
    if args.conv_tp:
        cmd.append("--experimental-conv-tp")
    tc.run(cmd)
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    plan = manifest["plan"]
    want_stages = stages * args.vpp
    got = sorted(p.get("stage", -1) for p in manifest["programs"])
    want = sorted(list(range(want_stages)) * args.tp)  # one program per tp coordinate
    if plan["mode"] != "pp" or got != want or plan["partitioned"] != (args.tp > 1):
        raise tc.Failure(f"{art}: expected a pp artifact with stages 0..{want_stages - 1} "
                         f"(x {args.tp} tp coordinates), got mode {plan['mode']}, stages {got}, "
                         f"partitioned {plan['partitioned']}")
    if args.tp > 1:
        check_tp_split(art, manifest)
    if plan["pp_schedule"] != schedule or plan["pp_microbatches"] != m:
        raise tc.Failure(f"{art}: plan has schedule {plan['pp_schedule']} and "
                         f"{plan['pp_microbatches']} microbatches, asked {schedule} and {m}")
    print(f"{art}: {want_stages} stage programs, layout {plan['pp_layout']}, {m} microbatches")
    return art, manifest


def check_tp_split(art, manifest):
    """Tensor-parallel stages: some parameter is split over tp, and some stage program holds
    a tp collective."""
    if not any(p.get("mesh_axis") == "tp" for p in manifest["parameters"]):
        raise tc.Failure(f"{art}: no parameter is split over tp")
    import onnx
    ops = set()
    for prog in manifest["programs"]:
        ops.update(n.op_type for n in onnx.load(os.path.join(art, prog["file"])).graph.node)
    if not ops & {"all_reduce", "all_gather", "backward_all_reduce"}:
        raise tc.Failure(f"{art}: no stage program holds a tp collective (ops: {sorted(ops)})")


# The collective ops that communicate in a training step, by the kind they run: forward
# (all_reduce, all_gather) or backward (backward_all_reduce, all_slice), once a microbatch.
COMMUNICATING = {"all_reduce": "all_reduce", "backward_all_reduce": "all_reduce",
                 "all_gather": "all_gather", "all_slice": "all_gather"}


def check_stage_comm(art, log, ranks, what):
    """Each rank's step events count its own stages' tp collectives: per kind, the
    communicating ops of its programs once per microbatch (a rank without one logs none)."""
    import onnx
    manifest = json.load(open(os.path.join(art, "manifest.json")))
    m = manifest["plan"]["pp_microbatches"]
    want = {r: {} for r in range(ranks)}
    for prog in manifest["programs"]:
        for node in onnx.load(os.path.join(art, prog["file"])).graph.node:
            if node.op_type in COMMUNICATING:
                for r in prog["ranks"]:
                    kind = COMMUNICATING[node.op_type]
                    want[r][kind] = want[r].get(kind, 0) + m
    if not any(want.values()):
        raise tc.Failure(f"{what}: no stage program holds a communicating tp collective")
    stem, ext = os.path.splitext(log)
    for r in range(ranks):
        steps, _ = tc.read_log(f"{stem}.rank{r}{ext}")
        for ev in steps:
            got = {c["kind"]: c["calls"] for c in ev.get("comm", [])
                   if c["mesh_axis"] == "tp" and c["bytes"] > 0 and c["seconds"] >= 0}
            if "comm" not in ev or got != want[r]:
                raise tc.Failure(f"{what}: rank {r} step {ev.get('step')} logged tp collectives "
                                 f"{ev.get('comm')}, its programs run {want[r]}")
    print(f"{what}: every rank logged its stages' tp collectives ({want})")


def run_training(args, art, ranks, x, y, static, tag, trace=False):
    d = tc.fresh_dir(os.path.join(args.work, f"train_{tag}"))
    c = tr.TrainConfig(batch_size=B, steps=STEPS, repeat_time=T if static else None,
                       **ttp.sgd(args.model))
    log, params = os.path.join(d, "log.jsonl"), os.path.join(d, "params")
    cmd = [os.path.join(args.bin, "snn-run"), "--nproc", ranks, "train", art,
           "--data-npy", f"{x},{y}", *tt.cli_flags(c), "--log", log, "--save-params", params,
           "--threads", 1, "--progress", "none", "--dist-timeout", 120,
           *tc.kernel_flags(args.model)]
    if static:
        cmd += ["--repeat-time", T]
    if trace:
        cmd += ["--trace", os.path.join(d, "trace.json")]
    tc.run(cmd)
    first = tc.load_params(os.path.join(params, "rank0"))
    for r in range(1, ranks):
        other = os.path.join(params, f"rank{r}")
        if os.path.isdir(other):
            tc.compare_params(tc.load_params(other), first, f"{tag}: rank {r} vs rank 0",
                              exact=True)
    return log, first


def check_bubble(log, ranks, schedule, what):
    stem, ext = os.path.splitext(log)
    for r in range(ranks):
        ends = [e for e in tc.read_jsonl(f"{stem}.rank{r}{ext}") if e.get("event") == "end"]
        bubble = ends[-1].get("bubble") if ends else None
        if not bubble or bubble.get("schedule") != schedule or \
                not 0 <= bubble.get("theoretical", -1) < 1 or \
                not 0 <= bubble.get("measured", -1) <= 1:
            raise tc.Failure(f"{what}: rank {r}'s end event has no valid bubble: {bubble}")
        tensors = ends[-1].get("tensor_bytes", {})
        if not 0 < tensors.get("before_steps", 0) < tensors.get("peak", 0):
            raise tc.Failure(f"{what}: rank {r}'s end event has no valid tensor_bytes: {tensors}")
    print(f"{what}: rank 0 bubble measured {bubble['measured']:.2f}, "
          f"theoretical {bubble['theoretical']:.2f}")


def check_fused_blocks(log, ranks, what):
    """Every spiking block ran as one (a one-sample microbatch's channels-last steps
    included), none node by node."""
    stem, ext = os.path.splitext(log)
    fused = 0
    for r in range(ranks):
        ends = [e for e in tc.read_jsonl(f"{stem}.rank{r}{ext}") if e.get("event") == "end"]
        blocks = ends[-1].get("spiking_blocks", {}) if ends else {}
        if blocks.get("node_by_node", 0) != 0:
            raise tc.Failure(f"{what}: rank {r} ran {blocks['node_by_node']} spiking blocks "
                             f"node by node: {blocks}")
        fused += blocks.get("fused", 0)
    if fused == 0:
        raise tc.Failure(f"{what}: no rank ran a spiking block")
    print(f"{what}: {fused} spiking block runs, all fused")


def check_recomputation(args, case, stages, schedule, ranks, data, plain, what):
    """Every stage recomputed: the same losses and weights, bit for bit, and an R span in the
    trace for every backward."""
    every = ",".join(str(k) for k in range(stages * args.vpp))
    art, manifest = compile_pp(args, case, stages, schedule, memopt=every)
    if manifest["plan"]["pp_memopt_stages"] != list(range(stages * args.vpp)):
        raise tc.Failure(f"{art}: plan.pp_memopt_stages is {manifest['plan']['pp_memopt_stages']}")
    tag = what.replace("/", "_") + "_memopt"
    log, again = run_training(args, art, ranks, *data, tag, trace=True)
    tc.check_same_steps(what, log, plain[0], STEPS, "with recomputation")
    tc.compare_params(again, plain[1], f"{what}: every stage recomputed vs none", exact=True)
    with open(os.path.join(args.work, f"train_{tag}", "trace.json")) as f:
        names = [e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    backwards = sum(n.startswith("B ") for n in names)
    recomputes = sum(n.startswith("R ") for n in names)
    if backwards == 0 or recomputes != backwards:
        raise tc.Failure(f"{what}: the trace has {recomputes} recomputations for {backwards} "
                         "backwards; every stage recomputes before each backward")
    print(f"{what}: recomputing every stage gives bit-identical losses and weights "
          f"({recomputes} recomputations traced)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    ttp.add_model_args(p)
    p.add_argument("--stages", default="2,4")
    p.add_argument("--vpp", type=int, default=1, help="virtual stages per rank")
    p.add_argument("--dp", type=int, default=1, help="data-parallel replicas (mesh dp x pp)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks per stage")
    p.add_argument("--conv-tp", action="store_true", help="compile with --experimental-conv-tp")
    p.add_argument("--schedules", default="gpipe,1f1b")
    p.add_argument("--memopt", action="store_true",
                   help="also train with every stage recomputed and require the same weights")
    p.add_argument("--microbatches", type=int, help="per replica (default: the fewest)")
    p.add_argument("--expect-fused-blocks", action="store_true",
                   help="require every spiking block to have run fused")
    args = p.parse_args()
    torch.set_num_threads(2)
    work = tc.fresh_dir(args.work)
    case, kw = ttp.make_case(args, work)
    _, shape, static = MODELS[args.model]
    data_dir = tc.fresh_dir(os.path.join(work, "data"))
    x, y = ttp.training_data(data_dir, shape, static, S=B * STEPS)
    summary = []
    for stages in [int(s) for s in args.stages.split(",")]:
        ranks = stages * args.dp * args.tp
        m = microbatches(stages, args.vpp, args.dp, args.microbatches)
        res, c, trained, count, _ = ttp.reference_training(case, x, y, static, args.model,
                                                           args.dp * m)
        for i, schedule in enumerate(args.schedules.split(",")):
            what = f"{args.model}/pp{stages}" + (f"xdp{args.dp}" if args.dp > 1 else "") + \
                   (f"xtp{args.tp}" if args.tp > 1 else "") + \
                   (f"v{args.vpp}" if args.vpp > 1 else "") + f"/{schedule}"
            art, _ = compile_pp(args, case, stages, schedule)
            if i == 0:
                ttp.check_infer(args, case, art, ranks, what)
            log, got = run_training(args, art, ranks, x, y, static, what.replace("/", "_"))
            steps, _ = tc.read_log(log)
            tt.check_steps(what, steps, res, c, count)
            worst = tc.compare_params(got, trained, f"{what} final weights")
            check_bubble(log, ranks, schedule, what)
            if args.tp > 1:
                check_stage_comm(art, log, ranks, what)
            if args.expect_fused_blocks:
                check_fused_blocks(log, ranks, what)
            print(f"{what}: = reference with {args.dp * m} microbatches (worst {worst:.2g})")
            summary.append(f"{what.split('/', 1)[1]} ({worst:.2g})")
            if args.memopt and i == 0:
                check_recomputation(args, case, stages, schedule, ranks, (x, y, static),
                                    (log, got), what)
    print(f"PASS: {args.model} {kw} = one process accumulating: " + ", ".join(summary))


if __name__ == "__main__":
    tc.main_wrapper(main)

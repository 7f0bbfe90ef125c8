"""The per-module gradient norms of the log agree across data-parallel modes, for a model whose
modules' parameters an fsdp shard can miss entirely (a PLIF's one scalar `w` lies in one rank's
chunk): deep_mlp with PLIF neurons, 4 SGD steps of a global batch of 8 on 2 ranks under dp,
fsdp, tp (tp=2: split Linear weights, a PLIF's `w` replicated over the ranks), fsdp_tp
(dp=2 x tp=2 on 4 ranks), pp (2 ranks, 4 microbatches of 2: each rank holds its stages'
modules), dp_pp (dp=2 x pp=2 on 4 ranks: a stage's modules on both replicas, counted once) and
pp_tp (pp=2 x tp=2 on 4 ranks: split and replicated parameters within the stages).
Required:
  - every run ends normally (the ranks reduce one list of modules, the same on each);
  - each step's grad_norms name every module with parameters, in the same order, in every run
    (a pipeline's rank 0 logs the other stage's modules too);
  - each norm within float32 reduction noise of dp's (1e-4 relative; fsdp's are summed from
    shards, tp's from the slices of the split parameters with a replicated one counted once,
    pp's from the stages' ranks, dp's from the averaged whole gradients: all the whole
    model's gradient of the same global batch), the losses within 1e-5;
  - the neuron layers fire at 5-50 % and the loss moves.

Usage: train_grad_norms.py --bin BUILD/bin --work DIR [--modes dp,fsdp,tp,fsdp_tp,pp,dp_pp,pp_tp]
"""
import argparse
import os

import train_common as tc

T, B, STEPS, RANKS = 4, 8, 4, 2


# mode -> snn-compile flags, ranks
MODES = {
    "dp": (["--mode", "dp", "--topology", f"dp={RANKS}"], RANKS),
    "fsdp": (["--mode", "fsdp", "--topology", f"dp={RANKS}"], RANKS),
    "tp": (["--mode", "tp", "--topology", "tp=2"], 2),
    "fsdp_tp": (["--mode", "fsdp_tp", "--topology", "dp=2,tp=2"], 4),
    "pp": (["--mode", "pp", "--topology", "pp=2", "--pp-microbatches", 4], 2),
    "dp_pp": (["--mode", "pp", "--topology", "dp=2,pp=2", "--pp-microbatches", 4], 4),
    "pp_tp": (["--mode", "pp", "--topology", "pp=2,tp=2", "--pp-microbatches", 4], 4),
}


def train(args, case, work, mode, data):
    art = os.path.join(work, f"art_{mode}")
    flags, ranks = MODES[mode]
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), *flags,
            "--batch-size", B, "-o", art])
    log = os.path.join(work, f"{mode}.jsonl")
    tc.run([os.path.join(args.bin, "snn-run"), "--nproc", ranks, "train", art, "--data-npy", data,
            "--steps", STEPS, "--batch-size", B, "--lr", "0.05", "--momentum", "0.9",
            "--loss", "mse", "--seed", 3, "--threads", 1, "--progress", "none",
            "--repeat-time", T, "--log", log])
    return log, tc.read_log(log)[0]


def check(args):
    work = tc.fresh_dir(args.work)
    case, _ = tc.make_artifact(args.bin, work, "deep_mlp", T=T, N=B, neuron="plif", width=32,
                               layers=3, classes=10)
    data = tc.static_images(os.path.join(work, "x.npy"), os.path.join(work, "y.npy"),
                            B * STEPS, [64])
    logs, steps = {}, {}
    for mode in args.modes:
        logs[mode], steps[mode] = train(args, case, work, mode, data)
    tc.check_fires_and_moves(case, [logs["dp"]])
    for mode in args.modes[1:]:
        compare(steps["dp"], steps[mode], mode)
    plif = [m for m in steps["dp"][0]["grad_norms"] if m.endswith(("1", "3", "5"))]
    print(f"PASS: {STEPS} steps, grad_norms of {len(steps['dp'][0]['grad_norms'])} modules "
          f"(PLIF ones: {plif}) agree under {', '.join(args.modes)}")


def compare(reference, other, mode):
    """`other` (mode's steps) logs dp's modules, norms and losses."""
    if len(reference) != STEPS or len(other) != STEPS:
        raise tc.Failure(f"{len(reference)} steps logged under dp, {len(other)} under {mode}, "
                         f"not {STEPS}")
    for i, (dp, got) in enumerate(zip(reference, other)):
        if list(dp["grad_norms"]) != list(got.get("grad_norms", {})):
            raise tc.Failure(f"step {i}: modules {list(dp['grad_norms'])} under dp, "
                             f"{list(got.get('grad_norms', {}))} under {mode}")
        if tc.rel_err(got["loss"], dp["loss"]) > 1e-5:
            raise tc.Failure(f"step {i}: loss {got['loss']} under {mode}, {dp['loss']} under dp")
        for module, norm in dp["grad_norms"].items():
            if not norm > 0 or tc.rel_err(got["grad_norms"][module], norm) > 1e-4:
                raise tc.Failure(f"step {i}: {module}'s gradient norm {got['grad_norms'][module]}"
                                 f" under {mode}, {norm} under dp")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--modes", default="dp,fsdp",
                   help="comma-separated, dp first (the reference): " + ",".join(MODES))
    args = p.parse_args()
    args.modes = args.modes.split(",")
    if args.modes[0] != "dp" or not set(args.modes) <= set(MODES):
        p.error(f"--modes {args.modes}: dp first, then any of {list(MODES)}")
    tc.main_wrapper(lambda: check(args))


if __name__ == "__main__":
    main()

"""The per-module gradient norms of the log agree across data-parallel modes, for a model whose
modules' parameters an fsdp shard can miss entirely (a PLIF's one scalar `w` lies in one rank's
chunk): deep_mlp with PLIF neurons, 4 SGD steps of a global batch of 8 on 2 ranks under dp and
under fsdp. Required:
  - both runs end normally (the fsdp ranks reduce one list of modules, the same on each);
  - each step's grad_norms name every module with parameters, in the same order, under both;
  - each norm within float32 reduction noise of the other mode's (1e-4 relative; fsdp's are
    summed from shards, dp's from the averaged whole gradients), the losses within 1e-5;
  - the neuron layers fire at 5-50 % and the loss moves.

Usage: train_grad_norms.py --bin BUILD/bin --work DIR
"""
import argparse
import os

import train_common as tc

T, B, STEPS, RANKS = 4, 8, 4, 2


def train(args, case, work, mode, data):
    art = os.path.join(work, f"art_{mode}")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"),
            "--mode", mode, "--topology", f"dp={RANKS}", "--batch-size", B, "-o", art])
    log = os.path.join(work, f"{mode}.jsonl")
    tc.run([os.path.join(args.bin, "snn-run"), "--nproc", RANKS, "train", art, "--data-npy", data,
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
    for mode in ("dp", "fsdp"):
        logs[mode], steps[mode] = train(args, case, work, mode, data)
    tc.check_fires_and_moves(case, [logs["dp"]])
    for i, (dp, fsdp) in enumerate(zip(steps["dp"], steps["fsdp"])):
        if list(dp["grad_norms"]) != list(fsdp["grad_norms"]):
            raise tc.Failure(f"step {i}: modules {list(dp['grad_norms'])} under dp, "
                             f"{list(fsdp['grad_norms'])} under fsdp")
        if tc.rel_err(fsdp["loss"], dp["loss"]) > 1e-5:
            raise tc.Failure(f"step {i}: loss {fsdp['loss']} under fsdp, {dp['loss']} under dp")
        for module, norm in dp["grad_norms"].items():
            if not norm > 0 or tc.rel_err(fsdp["grad_norms"][module], norm) > 1e-4:
                raise tc.Failure(f"step {i}: {module}'s gradient norm {fsdp['grad_norms'][module]}"
                                 f" under fsdp, {norm} under dp")
    if len(steps["dp"]) != STEPS or len(steps["fsdp"]) != STEPS:
        raise tc.Failure(f"{len(steps['dp'])} and {len(steps['fsdp'])} steps logged, not {STEPS}")
    plif = [m for m in steps["dp"][0]["grad_norms"] if m.endswith(("1", "3", "5"))]
    print(f"PASS: {STEPS} steps, grad_norms of {len(steps['dp'][0]['grad_norms'])} modules "
          f"(PLIF ones: {plif}) agree under dp and fsdp")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    tc.main_wrapper(lambda: check(args))


if __name__ == "__main__":
    main()

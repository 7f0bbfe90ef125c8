"""Sharded checkpoints load under another rank count and mode.

One run of STEPS Adam steps of the VGG-style model (BatchNorm, Dropout, global batch B) is cut
after CUT steps (--stop-after, mid-epoch) and continued with --resume under another layout:
  fsdp on 4 ranks -> 1 process        (N -> 1: a sharded checkpoint merged)
  1 process       -> fsdp on 2 ranks  (1 -> N: a whole checkpoint sharded)
  zero on 2 ranks -> fsdp on 4 ranks  (N -> M, across modes)
Each continued run must end within 1e-4 relative of the PyTorch reference trainer (one process,
STEPS steps straight), and the sharded checkpoints must be laid out as docs/checkpoints.md says
(shards.json, rank<R>/ each with only its pieces). `snn-run export` writes the fsdp checkpoint as
one ONNX model whose weights (read back by snnexport.load_onnx_weights into the PyTorch model)
equal the gathered parameters the stopped run saved, and `snn-run eval --checkpoint` reads it.

Usage: train_sharded_checkpoint.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import os
import shutil

import torch

import train_common as tc
import train_trajectory as tt
from snnexport import train as tr
from snnexport import weights

T, B, STEPS, CUT = 4, 8, 6, 4
MODEL = "vgg_dvs"
CONFIG = dict(optimizer="adam", lr=1e-3, schedule="cosine", eta_min=1e-5, loss="ce", seed=5)
CHAINS = [("fsdp", 4, "none", 1), ("none", 1, "fsdp", 2), ("zero", 2, "fsdp", 4)]


def compile_mode(bin_dir, case, work, mode, ranks):
    art = os.path.join(work, f"art_{mode}{ranks}")
    if not os.path.isdir(art):
        cmd = [os.path.join(bin_dir, "snn-compile"), os.path.join(case, "model.onnx"), "-o", art]
        if mode != "none":
            cmd += ["--mode", mode, "--topology", f"dp={ranks}", "--batch-size", B]
        tc.run(cmd)
    return art


def flags(c, steps):
    f = tt.cli_flags(c)
    f[f.index("--steps") + 1] = steps
    return f


def launch(snn_run, ranks):
    return [snn_run] + (["--nproc", ranks] if ranks > 1 else [])


def check_layout(step_dir, ranks, mode):
    index = json.load(open(os.path.join(step_dir, "shards.json")))
    if index.get("world_size") != ranks or index.get("mode") != mode or \
            index.get("ranks") != [f"rank{r}" for r in range(ranks)]:
        raise tc.Failure(f"{step_dir}/shards.json: {index}")
    sizes = []
    for r in range(ranks):
        meta = json.load(open(os.path.join(step_dir, f"rank{r}", "checkpoint.json")))
        pieces = [e for e in meta["model"]["entries"] if "offset" in e]
        if not pieces or meta.get("shard", {}).get("rank") != r:
            raise tc.Failure(f"{step_dir}/rank{r}: not a shard ({meta.get('shard')})")
        sizes.append(sum(e["shape"][0] for e in pieces))
    if max(sizes) - min(sizes) > 1 + sum(sizes) // 1000 and mode == "zero":
        raise tc.Failure(f"{step_dir}: uneven shards {sizes}")
    print(f"{step_dir}: {ranks} shards of {sizes} parameter elements")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    torch.set_num_threads(2)
    kw, sample_shape, _ = tt.MODELS[MODEL]
    work = tc.fresh_dir(args.work)
    case, _ = tc.make_artifact(args.bin, work, MODEL, T=T, N=B, **kw)
    snn_run = os.path.join(args.bin, "snn-run")
    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    data_arg = tc.event_sequences(x, y, 3 * B + 3, T, sample_shape, seed=3)
    c = tr.TrainConfig(batch_size=B, steps=STEPS, **CONFIG)
    model, _ = tr.model_from_case(case)
    tr.train(model, tr.load_npy(x, y, static=False), c)
    reference = tr.state_arrays(model)

    for first_mode, first_ranks, then_mode, then_ranks in CHAINS:
        what = f"{first_mode}{first_ranks} -> {then_mode}{then_ranks}"
        print(f"== {what}", flush=True)
        d = tc.fresh_dir(os.path.join(work, f"{first_mode}{first_ranks}_{then_mode}{then_ranks}"))
        ckpt = os.path.join(d, "ckpt")
        common = ["--data-npy", data_arg, *flags(c, STEPS), "--checkpoint", ckpt,
                  "--threads", 1, "--progress", "none", "--dist-timeout", 120]
        art = compile_mode(args.bin, case, work, first_mode, first_ranks)
        tc.run(launch(snn_run, first_ranks) + ["train", art, *common, "--stop-after", CUT,
                                               "--save-params", os.path.join(d, "stopped")])
        step_dir = os.path.join(ckpt, f"step-{CUT:08d}")
        if first_mode != "none":
            check_layout(step_dir, first_ranks, first_mode)
        art = compile_mode(args.bin, case, work, then_mode, then_ranks)
        tc.run(launch(snn_run, then_ranks) + ["train", art, *common, "--resume",
                                              "--save-params", os.path.join(d, "final")])
        final = os.path.join(d, "final", "rank0") if then_ranks > 1 else os.path.join(d, "final")
        worst = tc.compare_params(tc.load_params(final), reference, f"{what}: final weights")
        print(f"{what}: resumed run ends within {worst:.3g} of the reference")
        if (first_mode, first_ranks) == ("fsdp", 4):
            check_export(snn_run, case, art, ckpt, d, data_arg)
    print("PASS: sharded checkpoints resume under " +
          ", ".join(f"{a}{n} -> {b}{m}" for a, n, b, m in CHAINS) + "; export and eval read them")


def check_export(snn_run, case, art, ckpt, d, data_arg):
    """The fsdp checkpoint (4 shards) as one ONNX model: equal to the gathered parameters the
    stopped run saved. The latest checkpoint is now the resumed run's final one, so export the
    cut one from a copy holding it alone."""
    alone = os.path.join(d, "cut_only")
    shutil.copytree(os.path.join(ckpt, f"step-{CUT:08d}"), os.path.join(alone, f"step-{CUT:08d}"))
    onnx_path = os.path.join(d, "cut.onnx")
    tc.run([snn_run, "export", art, "--checkpoint", alone, "-o", onnx_path])
    model, _ = tr.model_from_case(case)
    weights.load_onnx_weights(model, onnx_path)
    stopped = tc.load_params(os.path.join(d, "stopped", "rank0"))
    tc.compare_params(tr.state_arrays(model), stopped, "exported fsdp checkpoint", exact=True)
    r = tc.run([snn_run, "eval", art, "--data-npy", data_arg, "--checkpoint", alone])
    if '"event":"eval"' not in r.stdout.replace(" ", ""):
        raise tc.Failure(f"eval --checkpoint of a sharded checkpoint printed {r.stdout!r}")
    print("export and eval of the sharded checkpoint: equal to the stopped run's weights")


if __name__ == "__main__":
    tc.main_wrapper(main)

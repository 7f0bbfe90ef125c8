"""Checkpoints move between snn-run and the Python API, in both directions, bit for bit.

One process, or every rank of a torchrun job (``--mode``; rank 0 runs snn-run with as many
ranks): snn-run trains the seeded CSNN 6 Adam steps on ``.npy`` data without shuffling,
checkpointing after steps 3 and 6 (run A). The Python runtime of the same plan loads A's
step-3 checkpoint with a torch.optim.Adam and saves it again at once (B); ``snn-run train
--resume`` from B to step 6 must hold exactly A's step-6 tensors (parameters, buffers, Adam
state). In one process the Python loop also trains steps 4-6 itself from A's step 3 (snn-run's
mse loss on the same batches) within float32 rounding of A, saves, and snn-run resumes that
to step 8 within the same bound of A continued to step 8. Every neuron layer fires 5-50 %.

    PYTHONPATH=build/python python3 checkpoint_interop.py [--mode dp]   (or under torchrun)
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
import torch
import torch.distributed as torch_dist
import torch.nn.functional as F

import spikemesh
from spikemesh import _spikemesh
from common import check_firing, csnn_case

BATCH, STEPS, SAMPLES = 8, 6, 64
SNN_RUN = _spikemesh.snn_run_path
# Weights after 3 steps of two float32 computations of the same math (summation order, Adam's
# division): relative to the largest weight, far above float32 epsilon x the layers' sums.
RTOL = 1e-4


def read_checkpoint(path):
    with open(os.path.join(path, "checkpoint.json")) as f:
        meta = json.load(f)
    with open(os.path.join(path, "tensors.bin"), "rb") as f:
        blob = f.read()
    return {e["key"]: np.frombuffer(blob, e["dtype"], count=int(np.prod(e["shape"], dtype=int)),
                                    offset=e["offset"]).reshape(e["shape"])
            for e in meta["tensors"]}, meta


def snn_run_train(artifact, data, checkpoint, steps, ranks, replicas=1, resume=False):
    """snn-run train on `ranks` ranks; its --batch-size is each of the `replicas`' share."""
    command = [SNN_RUN] + (["--nproc", str(ranks)] if ranks > 1 else []) + [
        "train", artifact, "--data-npy", data, "--batch-size", str(BATCH // replicas),
        "--steps", str(steps), "--lr", "1e-3", "--optimizer", "adam", "--no-shuffle",
        "--no-eval", "--threads", "1", "--progress", "none", "--checkpoint", checkpoint,
        "--checkpoint-every", "3", "--keep-checkpoints", "5"] + (["--resume"] if resume else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed:\n{done.stderr}")


def only_step(source, step, target):
    """A checkpoint directory holding one checkpoint of `source`."""
    os.makedirs(target)
    name = f"step-{step:08d}"
    shutil.copytree(os.path.join(source, name), os.path.join(target, name))
    with open(os.path.join(target, "latest"), "w") as f:
        f.write(name + "\n")


def assert_same(a_dir, b_dir, exact=True):
    """Every tensor of two checkpoints (each rank's file of sharded ones: zero, fsdp)."""
    if os.path.exists(os.path.join(a_dir, "shards.json")):
        with open(os.path.join(a_dir, "shards.json")) as f:
            ranks = json.load(f)["ranks"]
        for name in ranks:
            assert_same(os.path.join(a_dir, name), os.path.join(b_dir, name), exact)
        return
    a, _ = read_checkpoint(a_dir)
    b, _ = read_checkpoint(b_dir)
    if sorted(a) != sorted(b):
        raise AssertionError(f"other tensors: {sorted(set(a) ^ set(b))}")
    for key in a:
        if key.startswith("rng/"):
            continue
        if exact and not np.array_equal(a[key], b[key]):
            raise AssertionError(f"{key}: not bit-identical ({np.abs(a[key] - b[key]).max()})")
        scale = max(float(np.abs(a[key]).max()), 1e-6)
        if not exact and float(np.abs(a[key] - b[key]).max()) > RTOL * scale:
            raise AssertionError(f"{key}: differs by {np.abs(a[key] - b[key]).max()}")


def python_steps(runtime, optimizer, x, y, first, last):
    """snn-run's steps first..last-1 in the Python loop: no shuffle, mse of the rate."""
    runtime.model.train()
    for step in range(first, last):
        rows = slice(step * BATCH % SAMPLES, step * BATCH % SAMPLES + BATCH)
        optimizer.zero_grad()
        out = runtime.model(x[rows].transpose(0, 1).contiguous())
        rate = out.mean(0) if out.dim() == 3 else out    # docs/training.md: the firing rate
        F.mse_loss(rate, F.one_hot(y[rows], 10).float()).backward()
        optimizer.step()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="none")
    parser.add_argument("--topology", default="")
    args = parser.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        torch_dist.init_process_group("gloo")
    rank = torch_dist.get_rank() if world > 1 else 0
    model, x, stats = csnn_case(N=SAMPLES)
    check_firing(stats)
    samples = x.transpose(0, 1).contiguous()                      # [S, T, 1, 28, 28]
    labels = torch.randint(0, 10, (SAMPLES,), generator=torch.Generator().manual_seed(1))
    plan = spikemesh.plan(analysis=spikemesh.analyze(model, example_input=x[:, :BATCH]),
                          objective="speed", topology=args.topology or {"dp": world},
                          backend="gloo", batch_size=BATCH, mode=args.mode)
    runtime = spikemesh.apply(model=copy.deepcopy(model), plan=plan)
    artifact = runtime.model.artifact
    work = tempfile.mkdtemp(prefix="ck-interop-") if rank == 0 else ""
    if world > 1:
        shared = [work]
        torch_dist.broadcast_object_list(shared, 0)
        work = shared[0]
    a, b = os.path.join(work, "a"), os.path.join(work, "b")
    if rank == 0:
        np.save(os.path.join(work, "x.npy"), samples.numpy())
        np.save(os.path.join(work, "y.npy"), labels.numpy())
        data = os.path.join(work, "x.npy") + "," + os.path.join(work, "y.npy")
        snn_run_train(artifact, data, a, STEPS, world, runtime.dp_size)
        only_step(a, 3, os.path.join(work, "a3"))
    if world > 1:
        torch_dist.barrier()
    optimizer = torch.optim.Adam(runtime.model.parameters(), lr=1e-3)
    info = runtime.load_checkpoint(os.path.join(work, "a3"), optimizer=optimizer)
    assert (info.step, info.batch, info.settings["--optimizer"]) == (3, 3, "adam"), info
    runtime.save_checkpoint(b, optimizer=optimizer, step=info.step)
    if world > 1:
        torch_dist.barrier()
    if rank == 0:
        snn_run_train(artifact, data, b, STEPS, world, runtime.dp_size, resume=True)
        assert_same(os.path.join(a, "step-00000006"), os.path.join(b, "step-00000006"))
        print(f"{args.mode} on {world} rank(s): snn-run -> Python -> snn-run --resume "
              f"bit-identical at step 6")
    if world == 1:
        python_trains(runtime, optimizer, samples, labels, work, data, artifact)
    if world > 1:
        torch_dist.barrier()
    if rank == 0:
        shutil.rmtree(work)


def python_trains(runtime, optimizer, samples, labels, work, data, artifact):
    """Steps 4-6 in Python from A's step 3, then snn-run --resume to 8 from Python's 6."""
    runtime.load_checkpoint(os.path.join(work, "a3"), optimizer=optimizer)
    python_steps(runtime, optimizer, samples, labels, 3, STEPS)
    c = os.path.join(work, "c")
    runtime.save_checkpoint(c, optimizer=optimizer, step=STEPS)
    assert_same(os.path.join(work, "a", "step-00000006"), os.path.join(c, "step-00000006"),
                exact=False)
    snn_run_train(artifact, data, c, 8, 1, resume=True)
    snn_run_train(artifact, data, os.path.join(work, "a"), 8, 1, resume=True)
    assert_same(os.path.join(work, "a", "step-00000008"), os.path.join(c, "step-00000008"),
                exact=False)
    print("Python steps 4-6 and snn-run's 7-8 after them equal snn-run's within rounding")


if __name__ == "__main__":
    main()

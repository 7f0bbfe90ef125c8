#!/usr/bin/python3
"""Distributed training: `snn-run --nproc N train` (modes none, dp, dp+zero, fsdp) against
PyTorch's DistributedDataParallel (Gloo) on the same model, weights, data, global batch, T and
threads per rank, measured in one run: steady-state samples/s, peak RSS per rank, and the
parameter / gradient / optimizer-state bytes each rank holds between steps.

For every model: make_case exports it (seeded weights), snn-compile builds one artifact per mode
(`none`: single rank; `dp`, `zero` (dp + ZeRO-1), `fsdp`: `--mode M --topology dp=N
--batch-size B`), and a synthetic .npy dataset of STEPS global batches is written (csnn: static
images, direct encoding; vgg_dvs: binary event sequences [S, T, 2, H, W]). Then every trainer
runs STEPS Adam steps (lr 1e-4, MSE, seed 0), REPEAT times each, interleaved (the order
alternates):

  none           snn-run train, one process, RANKS x THREADS threads (the same cores)
  dp             snn-run --nproc N train on the dp artifact (SyncBatchNorm, its default)
  dp-nosyncbn    the same with --no-sync-bn: per-rank BatchNorm, like-for-like with DDP
  zero, fsdp     snn-run --nproc N train on those artifacts
  ddp            N processes of this script: torch.distributed "gloo", the snnexport model in
                 torch.nn.parallel.DistributedDataParallel, plain BatchNorm (PyTorch 1.13's
                 SyncBatchNorm runs on CUDA only), torch.set_num_threads(THREADS); as shipped
  ddp-tuned      the same with snn-run's process tuning as environment (OPENBLAS_NUM_THREADS=1,
                 heap-kept activations; see train_throughput.py)

Every rank takes its 1/N slice of the same global batches (docs/training.md's order). Throughput
is B / the median step time of rank 0's log after WARMUP steps (a step: assembling the batch to
the end of the optimizer update), best of the repeats. Peak RSS per rank and the held bytes come
from the per-rank logs (`LOG.rank<R>.jsonl`, last line `{"event": "end", ...}`) where the build
writes them; otherwise RSS is wait4()'s of the launcher (the largest of it and its ranks) and the
parameter bytes are the model's (marked `*`). A mode that this snn-run cannot run yet is reported
as "not supported by this build" and the benchmark goes on.

Not a test: run it on an otherwise idle machine with at least RANKS x THREADS cores.
  bench/train_distributed.py [--models csnn,vgg_dvs] [--ranks 2] [--threads 1] [--batch 32]
                             [--steps 20] [--modes ...] [--reference both] [--json F]
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"
# As in train_throughput.py: what snn-run does inside its process, given to PyTorch as environment.
TUNED_ENV = {"OPENBLAS_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
             "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
SNN_MODES = ("none", "dp", "dp-nosyncbn", "zero", "fsdp")
LABELS = {"none": "none", "dp": "dp", "dp-nosyncbn": "dp --no-sync-bn", "zero": "dp+zero",
          "fsdp": "fsdp", "ddp": "PyTorch DDP", "ddp-tuned": "PyTorch DDP tuned"}
# snn-run's refusal of a plan mode it does not run yet (and the compiler's, should it refuse)
UNSUPPORTED = re.compile(r"cannot run .* yet|not (yet )?(supported|implemented)", re.I)
MiB = 1024.0 * 1024.0


class Unsupported(Exception):
    pass


class Failed(SystemExit):
    """A command or check failed: uncaught, it ends the script with status 1 and the message;
    a caller that surveys many runs may catch it and go on."""

    def __init__(self, msg):
        super().__init__(1)
        self.msg = msg


def fail(msg):
    print(f"error: {msg}", file=sys.stderr, flush=True)
    raise Failed(msg)


def tail(path, n=3000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:].strip()
    except OSError:
        return "(no output)"


def sh(cmd, env, out_path, may_be_unsupported=False):
    with open(out_path, "w") as out:
        code = subprocess.run([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                              env=env).returncode
    if code != 0:
        text = tail(out_path)
        if may_be_unsupported and UNSUPPORTED.search(text):
            raise Unsupported(text.splitlines()[-1] if text else "")
        fail(f"{' '.join(str(c) for c in cmd)} exited {code}:\n{text}")


def wait_all(procs, timeout):
    """Waits for every Popen in procs (polling wait4, so that each child's own rusage is kept).
    When one fails, the others get 5 s, then SIGKILL. Returns (codes, ru_maxrss MiB list)."""
    codes, rss = [None] * len(procs), [0.0] * len(procs)
    deadline, kill_at = time.monotonic() + timeout, None
    while any(c is None for c in codes):
        for i, p in enumerate(procs):
            if codes[i] is None:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    codes[i] = os.waitstatus_to_exitcode(status)
                    p.returncode = codes[i]
                    rss[i] = usage.ru_maxrss / 1024.0
                    if codes[i] != 0 and kill_at is None:
                        kill_at = time.monotonic() + 5.0
        now = time.monotonic()
        if (kill_at is not None and now > kill_at) or now > deadline:
            for i, p in enumerate(procs):
                if codes[i] is None:
                    p.send_signal(signal.SIGKILL)
            kill_at = deadline = float("inf")
        time.sleep(0.02)
    return codes, rss


def read_log(log):
    """Rank 0's (global) step events and an 'end' event if the log has one."""
    steps, end = [], None
    with open(log) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event") == "step":
                steps.append(ev)
            elif ev.get("event") == "end":
                end = ev
    return steps, end


def rank_logs(log, ranks):
    """The per-rank logs LOG.rank<R>.jsonl: [(rank event, end event)] or None if absent."""
    stem = log[:-len(".jsonl")] if log.endswith(".jsonl") else log
    out = []
    for r in range(ranks):
        path = f"{stem}.rank{r}.jsonl"
        if not os.path.exists(path):
            return None
        first, end = None, None
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                ev = json.loads(line)
                if ev.get("event") == "rank" and first is None:
                    first = ev
                elif ev.get("event") == "end":
                    end = ev
        out.append((first, end))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ the DDP ranks
def ddp_worker(cfg):
    """One rank of the PyTorch DDP baseline (started by run_ddp with RANK etc. in the env)."""
    import datetime
    import resource

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from snnexport import functional, layer
    from snnexport.train import (TrainConfig, firing_rate, load_npy, loss_of, make_optimizer,
                                 model_from_case, splitmix64_order)

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(cfg["threads"])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    model, _ = model_from_case(cfg["case"])
    B, T = cfg["batch"], cfg["repeat_time"]
    n = B // world

    # Dropout as snn-run's dp does it (docs/distributed.md): every rank draws the mask of the
    # whole global batch [T, B, ...] from the same generator and applies its own columns, so
    # the masks equal one process's and the first-step losses can be compared.
    def global_dropout(self, x):
        if not self.training or self.p == 0.0:
            return x
        shape = (x.shape[0], x.shape[1] * world) + tuple(x.shape[2:])
        if self.p == 1.0:
            return x * 0.0
        mask = torch.empty(shape, dtype=x.dtype).bernoulli_(1.0 - self.p).div_(1.0 - self.p)
        return x * mask[:, rank * x.shape[1]:(rank + 1) * x.shape[1]]

    for m in model.modules():
        if isinstance(m, layer.Dropout) and m.step_mode == "m":
            m.forward = global_dropout.__get__(m)

    ddp = DistributedDataParallel(model, broadcast_buffers=cfg["broadcast_buffers"])
    data = load_npy(cfg["x"], cfg["y"], static=T is not None)
    tc = TrainConfig(batch_size=B, lr=1e-4, steps=cfg["steps"], optimizer="adam", loss="mse",
                     seed=0, repeat_time=T)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, tc)
    order = splitmix64_order(tc.seed, 0, len(data))
    ddp.train()
    torch.manual_seed(tc.seed)
    losses, rates = [], []
    for step in range(tc.steps):
        t0 = time.perf_counter()  # as snnexport.train: a step includes assembling its batch
        idx = order[step * B:(step + 1) * B][rank * n:(rank + 1) * n]
        x, y = data.batch(idx, T)
        opt.zero_grad(set_to_none=True)
        functional.reset_net(model)
        rate = firing_rate(ddp(x))
        loss = loss_of(rate, y, tc.loss)
        loss_v = float(loss.detach())
        loss.backward()
        opt.step()
        functional.reset_net(model)
        dt = time.perf_counter() - t0
        losses.append(loss_v)
        rates.append(B / dt)
    # the global loss (mean of the shard means) once at the end, outside the timed steps
    local = torch.tensor(losses, dtype=torch.float64)
    dist.all_reduce(local)
    global_losses = (local / world).tolist()

    def nbytes(ts):
        return int(sum(t.numel() * t.element_size() for t in ts if t is not None))

    param_bytes = nbytes(model.parameters())
    grad_bytes = nbytes(p.grad for p in model.parameters())
    # DDP's reducer keeps one flat bucket per group of gradients (gradient_as_bucket_view is
    # off by default): their sizes from DDP's logging data where it has them
    bucket_bytes = None
    try:
        sizes = ddp._get_ddp_logging_data().get("bucket_sizes")
        if sizes:
            bucket_bytes = int(sum(int(s) for s in str(sizes).split(",") if s.strip()))
    except Exception:  # noqa: BLE001 - private API; the estimate below then stands
        pass
    if bucket_bytes is None:
        bucket_bytes = grad_bytes
    opt_bytes = nbytes(v for st in opt.state.values() for v in st.values()
                       if torch.is_tensor(v))
    stem = cfg["log"][:-len(".jsonl")]
    with open(f"{stem}.rank{rank}.jsonl", "w") as f:
        f.write(json.dumps({"event": "rank", "rank": rank, "world_size": world,
                            "pid": os.getpid(), "mode": "ddp"}) + "\n")
        f.write(json.dumps({
            "event": "end", "steps": tc.steps,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "param_bytes": param_bytes, "grad_bytes": grad_bytes + bucket_bytes,
            "grad_tensor_bytes": grad_bytes, "ddp_bucket_bytes": bucket_bytes,
            "optimizer_state_bytes": opt_bytes,
            "buffer_bytes": nbytes(model.buffers())}) + "\n")
    if rank == 0:
        with open(cfg["log"], "w") as f:
            for step, (lv, r) in enumerate(zip(global_losses, rates)):
                f.write(json.dumps({"event": "step", "epoch": 0, "step": step, "loss": lv,
                                    "samples_per_s": r}) + "\n")
    dist.destroy_process_group()


def run_ddp(case, x, y, T, args, env, log, out_prefix):
    cfg = {"case": case, "x": x, "y": y, "repeat_time": T, "batch": args.batch,
           "steps": args.steps, "threads": args.threads, "log": log,
           "broadcast_buffers": args.ddp_broadcast_buffers == "on"}
    port = free_port()
    procs, outs = [], []
    t0 = time.perf_counter()
    for r in range(args.ranks):
        renv = dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.ranks),
                    LOCAL_WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=str(port))
        out = f"{out_prefix}.rank{r}.out"
        with open(out, "w") as f:
            procs.append(subprocess.Popen(
                [PYTHON, os.path.abspath(__file__), "--ddp-worker", json.dumps(cfg)],
                stdout=f, stderr=subprocess.STDOUT, env=renv))
        outs.append(out)
    codes, rss = wait_all(procs, args.timeout)
    wall = time.perf_counter() - t0
    bad = [r for r, c in enumerate(codes) if c != 0]
    if bad:
        r = bad[0]
        fail(f"PyTorch DDP rank {r} exited {codes[r]}:\n{tail(outs[r])}")
    return wall, rss


def run_snn(cmd, env, out_path, timeout):
    t0 = time.perf_counter()
    with open(out_path, "w") as f:
        p = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT, env=env)
    codes, rss = wait_all([p], timeout)
    wall = time.perf_counter() - t0
    if codes[0] != 0:
        text = tail(out_path)
        if UNSUPPORTED.search(text):
            raise Unsupported(next((ln for ln in text.splitlines() if UNSUPPORTED.search(ln)),
                                   text.splitlines()[-1]))
        fail(f"{' '.join(str(c) for c in cmd)} exited {codes[0]}:\n{text}")
    return wall, rss


def measure_trainer(cmd, env, log, out_path, ranks, warmup, timeout):
    """Runs a trainer with --log LOG. Returns (info, ends): info has the median samples/s of
    the steps after `warmup`, the first loss and the peak RSS (MiB per rank, from the end
    events when every rank wrote one, else sampled while waiting); ends are the end events
    (one per rank) or None."""
    _, rss_wait = run_snn(cmd + ["--log", log], env, out_path, timeout)
    steps, end = read_log(log)
    if len(steps) <= warmup:
        fail(f"{log}: {len(steps)} steps logged, need more than --warmup {warmup}")
    info = {"samples_per_s": float(np.median([s["samples_per_s"] for s in steps[warmup:]])),
            "first_loss": steps[0]["loss"], "peak_rss_mib": max(rss_wait)}
    ends = [e for _, e in (rank_logs(log, ranks) or [])] if ranks > 1 else [end]
    if not ends or any(e is None for e in ends):
        return info, None
    info["peak_rss_mib"] = max(e["peak_rss_bytes"] for e in ends) / MiB
    return info, ends


# ------------------------------------------------------------------ one model
def prepare(model, args, env, d):
    """make_case, dataset, artifacts. Returns (case, x, y, T or None for sequences, size, arts)."""
    case = os.path.join(d, "case")
    B, T = args.batch, args.T
    make = [PYTHON, "-m", "snnexport.make_case", "--model", model, "--out", case, "--T", T,
            "--N", B, "--attempts", 1, "--quiet"]
    S = B * args.steps
    g = np.random.default_rng(0)
    if model == "csnn":
        make += ["--width", args.csnn_width]
        x = g.random((S, 1, 28, 28), dtype=np.float32)
        size, repeat_time = f"width {args.csnn_width}", T
    else:
        make += ["--width", args.vgg_width, "--image", args.vgg_image, "--blocks",
                 args.vgg_blocks]
        x = (g.random((S, T, 2, args.vgg_image, args.vgg_image)) < 0.3).astype(np.float32)
        size = f"width {args.vgg_width}, {args.vgg_image}px, {args.vgg_blocks} blocks"
        repeat_time = None
    sh(make, env, os.path.join(d, "make_case.out"))
    xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(xp, x)
    np.save(yp, g.integers(0, 10, S).astype(np.int64))
    compile_ = os.path.join(args.bin, "snn-compile")
    onnx = os.path.join(case, "model.onnx")
    arts, unsupported = {}, {}
    for mode in sorted({("dp" if m == "dp-nosyncbn" else m) for m in args.modes}):
        art = os.path.join(d, f"artifact_{mode}")
        cmd = [compile_, onnx, "-o", art]
        if mode != "none":
            cmd += ["--mode", mode, "--topology", f"dp={args.ranks}", "--batch-size", B]
        try:
            sh(cmd, env, os.path.join(d, f"compile_{mode}.out"), may_be_unsupported=True)
            arts[mode] = art
        except Unsupported as e:
            unsupported[mode] = f"snn-compile: {e}"
    return case, xp, yp, repeat_time, size, arts, unsupported


def model_param_bytes(case):
    from snnexport.train import model_from_case
    m, _ = model_from_case(case)
    return int(sum(p.numel() * p.element_size() for p in m.parameters()))


def bench_model(model, args, env):
    d = os.path.join(args.work, model)
    os.makedirs(d)
    case, xp, yp, T, size, arts, unsupported = prepare(model, args, env, d)
    full_param_bytes = model_param_bytes(case)
    snn_run = os.path.join(args.bin, "snn-run")
    common = ["--data-npy", f"{xp},{yp}", "--steps", args.steps, "--batch-size", args.batch,
              "--lr", "0.0001", "--optimizer", "adam", "--loss", "mse", "--seed", 0,
              "--progress", "none", "--dist-timeout", 60]
    if T is not None:
        common += ["--repeat-time", T]
    print(f"== {model} ({size}), T={args.T}, global B={args.batch}, {args.ranks} ranks x "
          f"{args.threads} threads, {args.steps} steps", flush=True)

    trainers = []  # (name, ranks, run(log, out_prefix) -> (wall, [rss MiB]))
    for mode in args.modes:
        art = arts.get("dp" if mode == "dp-nosyncbn" else mode)
        if art is None:
            continue
        if mode == "none":
            threads = args.none_threads or args.ranks * args.threads
            cmd = [snn_run, "train", art] + strip_flag(common, "--dist-timeout") + \
                ["--threads", threads]
            tenv = dict(env, OMP_NUM_THREADS=str(threads))
            ranks = 1
        else:
            cmd = [snn_run, "--nproc", args.ranks, "train", art, *common,
                   "--threads", args.threads]
            if mode == "dp-nosyncbn":
                cmd.append("--no-sync-bn")
            tenv, ranks = env, args.ranks
        trainers.append((mode, ranks, lambda log, op, cmd=cmd, tenv=tenv: run_snn(
            cmd + ["--log", log], tenv, op + ".out", args.timeout)))
    refs = {"default": ["ddp"], "tuned": ["ddp-tuned"], "both": ["ddp", "ddp-tuned"],
            "none": []}[args.reference]
    for name in refs:
        denv = dict(env, **TUNED_ENV) if name == "ddp-tuned" else env
        trainers.append((name, args.ranks, lambda log, op, denv=denv: run_ddp(
            case, xp, yp, T, args, denv, log, op)))

    runs = {m: {"status": "not supported by this build", "reason": r}
            for m, r in unsupported.items()}
    os.sync()  # the dataset's writeback must not land in a timed run
    for rep in range(args.repeat):
        for name, ranks, run in (trainers if rep % 2 == 0 else trainers[::-1]):
            if runs.get(name, {}).get("status") == "not supported by this build":
                continue
            log = os.path.join(d, f"{name}.{rep}.jsonl")
            for stale in os.listdir(d):
                if stale.startswith(f"{name}.{rep}.rank"):
                    os.remove(os.path.join(d, stale))
            try:
                wall, rss_wait = run(log, os.path.join(d, f"{name}.{rep}"))
            except Unsupported as e:
                runs[name] = {"status": "not supported by this build", "reason": str(e)}
                print(f"   {LABELS[name]:18s} not supported by this build: {e}", flush=True)
                continue
            steps, end = read_log(log)
            if len(steps) <= args.warmup:
                fail(f"{log}: {len(steps)} steps logged, need more than --warmup {args.warmup}")
            rate = float(np.median([s["samples_per_s"] for s in steps[args.warmup:]]))
            per_rank = rank_logs(log, ranks)
            if ranks == 1 and end is not None:
                per_rank = [({"rank": 0, "mode": "none"}, end)]
            run_info = {"samples_per_s": rate, "wall_s": wall,
                        "wall_samples_per_s": args.batch * args.steps / wall,
                        "first_loss": steps[0]["loss"], "wait4_rss_mib": rss_wait}
            if per_rank and all(e is not None for _, e in per_rank):
                ends = [e for _, e in per_rank]
                run_info["per_rank"] = [dict(e, mode=(f or {}).get("mode")) for f, e in per_rank]
                run_info["peak_rss_mib"] = max(e["peak_rss_bytes"] for e in ends) / MiB
                for k in ("param_bytes", "grad_bytes", "optimizer_state_bytes"):
                    if all(k in e for e in ends):
                        run_info[k] = max(e[k] for e in ends)
                run_info["source"] = "rank logs"
                modes = {(f or {}).get("mode") for f, _ in per_rank}
                want = {"dp": "replicated", "dp-nosyncbn": "replicated"}.get(name, name)
                if name not in ("none", "ddp", "ddp-tuned") and modes != {want}:
                    run_info["mode_mismatch"] = sorted(str(m) for m in modes)
            else:
                # no per-rank logs: wait4 of the launcher is the largest of it and its ranks;
                # none, dp and dp+zero hold every parameter, fsdp's share is unknown
                run_info["peak_rss_mib"] = max(rss_wait)
                if name != "fsdp":
                    run_info["param_bytes"] = full_param_bytes
                run_info["source"] = "wait4, model"
            best = runs.setdefault(name, {"status": "ok", "ranks": ranks, "runs": [],
                                          "samples_per_s": 0.0, "wall_samples_per_s": 0.0,
                                          "peak_rss_mib": 0.0})
            best["runs"].append(run_info)
            best["samples_per_s"] = max(best["samples_per_s"], rate)
            best["wall_samples_per_s"] = max(best["wall_samples_per_s"],
                                             run_info["wall_samples_per_s"])
            best["peak_rss_mib"] = max(best["peak_rss_mib"], run_info["peak_rss_mib"])
            for k in ("param_bytes", "grad_bytes", "optimizer_state_bytes", "source",
                      "mode_mismatch"):
                if k in run_info:
                    best[k] = run_info[k]
            best.setdefault("first_loss", steps[0]["loss"])
            extra = ""
            if "param_bytes" in run_info:
                extra = f", params {run_info['param_bytes'] / MiB:.2f} MiB/rank"
            print(f"   {LABELS[name]:18s} {rate:9.1f} samples/s steady, "
                  f"{run_info['wall_samples_per_s']:8.1f} wall ({wall:.1f} s), peak RSS "
                  f"{run_info['peak_rss_mib']:6.0f} MiB/rank{extra}", flush=True)
    return {"model": model, "size": size, "T": args.T, "batch": args.batch,
            "ranks": args.ranks, "threads_per_rank": args.threads,
            "none_threads": args.none_threads or args.ranks * args.threads,
            "steps": args.steps, "warmup": args.warmup, "repeat": args.repeat,
            "model_param_bytes": full_param_bytes, "trainers": runs}


def strip_flag(cmd, flag):
    out, skip = [], False
    for c in cmd:
        if skip:
            skip = False
        elif c == flag:
            skip = True
        else:
            out.append(c)
    return out


# ------------------------------------------------------------------ checks and the table
def loss_check(r, tol):
    """First-step global losses: runs with global-batch BatchNorm (none, dp, zero, fsdp) must
    agree, and so must runs with per-rank BatchNorm (dp --no-sync-bn, DDP). Between the groups
    they differ by design (BatchNorm statistics of the shard vs of the global batch)."""
    t = {k: v for k, v in r["trainers"].items() if v.get("status") == "ok"}
    groups = {"global-batch BatchNorm": [k for k in ("none", "dp", "zero", "fsdp") if k in t],
              "per-rank BatchNorm": [k for k in ("dp-nosyncbn", "ddp", "ddp-tuned") if k in t]}
    lines, ok = [], True
    for g, names in groups.items():
        if len(names) < 2:
            continue
        ls = [t[n]["first_loss"] for n in names]
        spread = (max(ls) - min(ls)) / max(abs(min(ls)), 1e-12)
        good = spread <= tol
        ok &= good
        lines.append(f"{'ok' if good else 'WARNING'}: first-step loss, {g} "
                     f"({', '.join(LABELS[n] + ' ' + format(t[n]['first_loss'], '.6f') for n in names)}): "
                     f"relative spread {spread:.1e}"
                     + ("" if good else f" > {tol:g}: not the same computation?"))
    a = [t[n]["first_loss"] for n in groups["global-batch BatchNorm"]]
    b = [t[n]["first_loss"] for n in groups["per-rank BatchNorm"]]
    if a and b:
        lines.append(f"info: global-batch vs per-rank BatchNorm first-step loss differ by "
                     f"{abs(a[0] - b[0]) / max(abs(a[0]), 1e-12):.1e} (relative; expected)")
    r["same_first_loss"] = ok
    return lines


def mib(v):
    return "n/a" if v is None else f"{v / MiB:.2f}"


def report(rows, args):
    print()
    refs = [n for n in ("ddp", "ddp-tuned") if any(
        r["trainers"].get(n, {}).get("status") == "ok" for r in rows)]
    head = ("| model | mode | ranks | samples/s | peak RSS MiB/rank | param MiB/rank | "
            "grad+opt MiB/rank |" + "".join(f" vs {LABELS[n]} |" for n in refs))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    notes, footnote = [], False
    for r in rows:
        t = r["trainers"]
        order = [m for m in args.modes if m in t] + [n for n in refs if n in t]
        for name in order:
            v = t[name]
            if v.get("status") != "ok":
                print(f"| {r['model']} | {LABELS[name]} | {args.ranks if name != 'none' else 1}"
                      f" | not supported by this build | | | |" + " |" * len(refs))
                continue
            star = "*" if v.get("source") != "rank logs" else ""
            footnote |= bool(star)
            go = None
            if "grad_bytes" in v and "optimizer_state_bytes" in v:
                go = v["grad_bytes"] + v["optimizer_state_bytes"]
            line = (f"| {r['model']} | {LABELS[name]} | {v['ranks']} | "
                    f"{v['samples_per_s']:.1f} | {v['peak_rss_mib']:.0f}{star} | "
                    f"{mib(v.get('param_bytes'))}{star if v.get('param_bytes') else ''} | "
                    f"{mib(go)} |")
            for n in refs:
                ref = t.get(n, {})
                if name.startswith("ddp") or ref.get("status") != "ok":
                    line += " |"
                    continue
                s = v["samples_per_s"] / ref["samples_per_s"]
                v.setdefault("speedup", {})[n] = s
                line += f" {s:.2f}x |"
            print(line)
            if name == "zero" and v.get("source") != "rank logs":
                notes.append(f"note: {r['model']} dp+zero: without per-rank logs it is not "
                             "visible whether this snn-run shards the optimizer state (a build "
                             "that runs the artifact as plain dp looks the same)")
            if v.get("mode_mismatch"):
                notes.append(f"warning: {r['model']} {LABELS[name]}: the ranks logged mode "
                             f"{', '.join(v['mode_mismatch'])} (not {name}?)")
    print()
    if footnote:
        print("* no per-rank 'end' event in this snn-run's logs: RSS is wait4()'s of the "
              "process (for --nproc the launcher: the largest of it and its ranks), parameters "
              "are the whole model's.")
    print("PyTorch DDP: plain BatchNorm per rank (PyTorch 1.13's SyncBatchNorm runs on CUDA "
          "only), compare it with 'dp --no-sync-bn'; snn-run's dp uses SyncBatchNorm.")
    for r in rows:
        t = r["trainers"]
        dp, fs = t.get("dp", {}), t.get("fsdp", {})
        if dp.get("status") == "ok" and "ddp" in t and t["ddp"].get("status") == "ok":
            s = dp["samples_per_s"] / t["ddp"]["samples_per_s"]
            print(f"{r['model']}: dp / PyTorch DDP = {s:.2f}x (goal >= 1.3x: "
                  f"{'met' if s >= 1.3 else 'NOT met'})"
                  + (f"; dp --no-sync-bn / DDP = "
                     f"{t['dp-nosyncbn']['samples_per_s'] / t['ddp']['samples_per_s']:.2f}x"
                     if t.get("dp-nosyncbn", {}).get("status") == "ok" else ""))
        if fs.get("status") == "ok" and dp.get("status") == "ok":
            if fs.get("param_bytes") and dp.get("param_bytes"):
                ratio = fs["param_bytes"] / dp["param_bytes"]
                ideal = 1.0 / args.ranks
                dev = ratio / ideal - 1.0
                r["fsdp_param_ratio"] = ratio
                print(f"{r['model']}: fsdp param bytes per rank = {ratio:.3f} of dp's "
                      f"({mib(fs['param_bytes'])} / {mib(dp['param_bytes'])} MiB); 1/N = "
                      f"{ideal:.3f}, {100 * dev:+.1f}% (goal within 10%: "
                      f"{'met' if abs(dev) <= 0.10 else 'NOT met'})")
            else:
                print(f"{r['model']}: fsdp param bytes per rank unknown (no per-rank logs)")
        elif fs:
            print(f"{r['model']}: fsdp {fs.get('status', 'not run')}")
        for line in loss_check(r, args.loss_tol):
            print(f"{r['model']}: {line}")
    for n in notes:
        print(n)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--ddp-worker":
        sys.path.insert(0, os.path.join(ROOT, "python_export"))
        return ddp_worker(json.loads(sys.argv[2]))
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="directory with snn-compile and snn-run")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-train-dist"),
                   help="scratch directory (emptied first): cases, artifacts, datasets, logs, "
                        "outputs of every run")
    p.add_argument("--models", default="csnn,vgg_dvs", help="comma-separated: csnn, vgg_dvs")
    p.add_argument("--modes", default=",".join(SNN_MODES),
                   help="snn-run modes to run, comma-separated, from: " + ", ".join(SNN_MODES))
    p.add_argument("--reference", choices=("default", "tuned", "both", "none"), default="both",
                   help="PyTorch DDP as shipped, with snn-run's process tuning as environment "
                        "(OPENBLAS_NUM_THREADS=1, heap-kept activations), both, or none")
    p.add_argument("--ranks", type=int, default=2, help="ranks (processes) of every "
                   "distributed trainer")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--none-threads", type=int, default=0,
                   help="threads of the single-process 'none' run (0: ranks x threads, the "
                        "same cores as the distributed runs)")
    p.add_argument("--T", type=int, default=4, help="time steps")
    p.add_argument("--batch", type=int, default=32,
                   help="global batch size (split over the ranks)")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps per run")
    p.add_argument("--warmup", type=int, default=4, help="steps left out of the rate")
    p.add_argument("--repeat", type=int, default=2,
                   help="runs of each trainer, interleaved; the best rate is reported")
    p.add_argument("--csnn-width", type=int, default=32, help="csnn channels")
    p.add_argument("--vgg-width", type=int, default=64, help="vgg_dvs channels")
    p.add_argument("--vgg-image", type=int, default=48, help="vgg_dvs input height and width")
    p.add_argument("--vgg-blocks", type=int, default=3, help="vgg_dvs conv blocks")
    p.add_argument("--ddp-broadcast-buffers", choices=("on", "off"), default="on",
                   help="DistributedDataParallel's broadcast_buffers (PyTorch's default on: "
                        "rank 0's BatchNorm running statistics are broadcast every forward)")
    p.add_argument("--loss-tol", type=float, default=1e-3,
                   help="relative tolerance of the first-step loss check")
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds before a run is killed")
    p.add_argument("--json", help="also write the raw results here")
    args = p.parse_args()

    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in SNN_MODES:
            p.error(f"--modes: unknown mode {m!r} (known: {', '.join(SNN_MODES)})")
    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in ("csnn", "vgg_dvs"):
            p.error(f"--models: unknown model {m!r} (csnn, vgg_dvs)")
    for flag in ("ranks", "threads", "batch", "steps", "repeat", "T"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1")
    if args.ranks < 2:
        p.error("--ranks must be >= 2")
    if args.batch % args.ranks:
        p.error(f"--batch {args.batch} is not divisible by --ranks {args.ranks}")
    if args.steps <= args.warmup:
        p.error(f"--steps {args.steps} must be more than --warmup {args.warmup}")
    for tool in ("snn-run", "snn-compile"):
        if not os.access(os.path.join(args.bin, tool), os.X_OK):
            fail(f"{os.path.join(args.bin, tool)} not found (build first, or pass --bin)")
    if len(os.sched_getaffinity(0)) < args.ranks * args.threads:
        print(f"warning: {len(os.sched_getaffinity(0))} CPUs for {args.ranks} ranks x "
              f"{args.threads} threads: the ranks share cores", file=sys.stderr)

    pypath = os.path.join(ROOT, "python_export")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               PYTHONPATH=pypath + os.pathsep + os.environ.get("PYTHONPATH", "")
               if os.environ.get("PYTHONPATH") else pypath)
    sys.path.insert(0, pypath)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rows = [bench_model(m, args, env) for m in models]
    report(rows, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": rows}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())

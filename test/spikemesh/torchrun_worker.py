"""One rank of a torchrun job: the user's own loop on spikemesh.apply's model, against eager
PyTorch in one process.

Every rank builds the same seeded CSNN and a dataset of STEPS global batches, plans
``--mode`` over ``WORLD_SIZE`` ranks, applies it, and trains 5 steps with the Python
criterion, SGD with momentum under StepLR and then Adam (from ``runtime.build_optimizer``:
sharded under ``--mode zero``, each rank holding the state of its own parameters), on its
share from
``runtime.prepare_dataloader`` (batch_size / D samples per rank). The same loop runs on the
eager model over the whole batches in this process. The mean of the ranks' losses (all-reduced
with torch.distributed, which runs beside SpikeMesh's own process groups) and this rank's
weights must equal the eager ones within common.RTOL; the layers must fire 5-50 %. A rank that
starts from other weights ends with rank 0's (apply broadcasts them); ``no_sync`` accumulates
locally; ``load_state_dict`` of another model's weights gives its state_dict and output;
``runtime.firing_rates()`` after each rank's forward of its share equals the eager model's rates
on the whole batch (every mode but pp); under dp and fsdp, every rank's kernel choice
(``set_event_kernels`` "auto" and 1, ``event_kernel_choices``) keeps its output equal to eager.
Exits non-zero on any
difference, naming it.

    torchrun --nproc_per_node 2 torchrun_worker.py --mode dp
"""
import argparse
import copy
import os

import torch
import torch.distributed as torch_dist
from torch.utils.data import TensorDataset

import common
import spikemesh
from spikemesh.export import functional

GLOBAL_BATCH = 8


def eager_batches(dataset: TensorDataset):
    images, labels = dataset.tensors
    for step in range(common.STEPS):
        rows = slice(step * GLOBAL_BATCH, (step + 1) * GLOBAL_BATCH)
        yield images[rows].transpose(0, 1).contiguous(), labels[rows]


def rank_batches(loader):
    for images, labels in loader:
        yield images.transpose(0, 1).contiguous(), labels


def mean_over_ranks(values):
    t = torch.tensor(values, dtype=torch.float64)
    torch_dist.all_reduce(t)
    return (t / torch_dist.get_world_size()).tolist()


def check_sharded_parameters(runtime, model):
    """Under fsdp each rank holds a piece of the parameters, all ranks together each element
    once per tp coordinate."""
    if runtime.plan.mode not in ("fsdp", "fsdp_tp") or runtime.dp_size == 1:
        return
    whole = sum(p.numel() for p in model.parameters())
    mine = sum(p.numel() for p in runtime.model.parameters())
    everyone = torch.tensor([mine])
    torch_dist.all_reduce(everyone)
    tp = torch_dist.get_world_size() // runtime.dp_size
    # tp splits some parameters and repeats the others on each tp coordinate.
    if mine >= whole or not whole <= int(everyone) <= tp * whole:
        raise AssertionError(f"fsdp: this rank holds {mine} of {whole} elements, "
                             f"all ranks {int(everyone)}")


def check_sharded_state(runtime, opt):
    """Under a zero plan each rank holds the optimizer state of its own parameters only."""
    if runtime.plan.optimizer_strategy != "zero":
        return
    total = sum(p.numel() for p in runtime.model.parameters())
    mine = sum(p.numel() for p in opt.local_parameters)
    everyone = torch.tensor([mine])
    torch_dist.all_reduce(everyone)
    if int(everyone) != total or mine >= total:
        raise AssertionError(f"zero: this rank holds the state of {mine} of {total} elements, "
                             f"all ranks {int(everyone)}")
    held = sum(t.numel() for s in opt.local_state_dict()["state"].values()
               for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
    if held > 2 * mine:
        raise AssertionError(f"zero: {held} elements of optimizer state for {mine} parameters")


def train_steps(runtime, optimizer, scheduler, batches):
    """The loop of a pipeline plan: runtime.train_step runs the schedule."""
    losses = []
    for images, labels in batches:
        optimizer.zero_grad()
        losses.append(float(runtime.train_step(images, labels, common.criterion)))
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    return losses


def accumulate_gradients(model, images, labels, replicas, microbatches):
    """One process doing what a dp x pp step does before its update: replica r's share
    (samples r, r+D, ...) cut into M microbatches, each one's loss / (D * M) backpropagated,
    in replica order. Returns the summed loss."""
    total = 0.0
    for r in range(replicas):
        xs, ys = images[:, r::replicas], labels[r::replicas]
        for x_m, y_m in zip(xs.chunk(microbatches, dim=1), ys.chunk(microbatches)):
            functional.reset_net(model)
            loss = common.criterion(model(x_m.contiguous()), y_m) / (replicas * microbatches)
            loss.backward()
            total += float(loss)
    return total


def train_accumulating(model, optimizer, scheduler, batches, replicas, microbatches):
    """accumulate_gradients, then the optimizer step, for each batch."""
    losses = []
    for images, labels in batches:
        optimizer.zero_grad()
        losses.append(accumulate_gradients(model, images, labels, replicas, microbatches))
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    return losses


def check_recomputation(runtime, plan):
    """A plan of mode none, dp or tp with memopt_level 1 trains with segment recomputation
    (the loss and weights then still equal eager's: compare's checks)."""
    want = plan.memopt_level >= 1 and plan.mode in ("none", "dp", "tp")
    got = runtime.model._program.recomputes_segments
    if got != want:
        raise AssertionError(f"{plan.mode} with memopt_level {plan.memopt_level}: "
                             f"recomputes_segments {got}")


def compare(name, model, x, dataset, plan, optimizer, make_scheduler):
    """``optimizer``: (torch.optim class, its keyword arguments)."""
    cls, kwargs = optimizer
    eager = copy.deepcopy(model).train()
    runtime = spikemesh.apply(model=model.train(), plan=plan)
    loader = runtime.prepare_dataloader(dataset=dataset, batch_size=GLOBAL_BATCH // runtime.dp_size,
                                        shuffle=False)
    loader.sampler.set_epoch(0)
    if not runtime.model.compiled and plan.mode not in ("none", "dp"):
        # These plans' parameters are the rank's parts, known once the program is compiled.
        try:
            runtime.build_optimizer(cls, **kwargs)
        except RuntimeError as e:
            if "compiled" not in str(e):
                raise
        else:
            raise AssertionError(f"build_optimizer before a {plan.mode} program was compiled")
        runtime.compile(next(rank_batches(loader))[0])
    opt = runtime.build_optimizer(cls, **kwargs)
    if plan.mode == "pp" and name == "adam":
        recompute_costliest_stages(runtime)
    if plan.mode == "pp":
        ours = mean_over_ranks(train_steps(runtime, opt, make_scheduler(opt),
                                           rank_batches(loader)))
    else:
        ours = mean_over_ranks(common.train(runtime.model, opt, make_scheduler(opt),
                                            rank_batches(loader)))
    check_sharded_state(runtime, opt)
    check_sharded_parameters(runtime, eager)
    check_recomputation(runtime, plan)
    opt = cls(eager.parameters(), **kwargs)
    if plan.mode == "pp":
        theirs = train_accumulating(eager, opt, make_scheduler(opt), eager_batches(dataset),
                                    runtime.dp_size, plan.pp_microbatches)
    else:
        theirs = common.train(eager, opt, make_scheduler(opt), eager_batches(dataset),
                              reset=functional.reset_net)
    common.check_close(ours, theirs, f"{name} loss")
    common.check_same_parameters(runtime.state_dict(), eager)
    return ours


def check_initial_broadcast(model, x, plan):
    """Rank r > 0 perturbs its model first; every rank starts from rank 0's weights once the
    program is compiled."""
    mine = copy.deepcopy(model)
    with torch.no_grad():
        next(mine.parameters()).add_(float(torch_dist.get_rank()))
    runtime = spikemesh.apply(model=mine, plan=plan)
    runtime.compile(x[:, :GLOBAL_BATCH // runtime.dp_size])
    whole = runtime.state_dict()
    for name, p in model.named_parameters():
        if not torch.equal(whole[name], p.detach()):
            raise AssertionError(f"{name}: not rank 0's value after apply")


def same_on_every_rank(tensor):
    gathered = [torch.empty_like(tensor) for _ in range(torch_dist.get_world_size())]
    torch_dist.all_gather(gathered, tensor)
    return all(torch.equal(g, gathered[0]) for g in gathered)


def check_no_sync(model, x, plan):
    """Inside no_sync a backward leaves this rank's own gradients; the next one averages
    what was accumulated, so every rank then holds the same gradients."""
    runtime = spikemesh.apply(model=copy.deepcopy(model).train(), plan=plan)
    if plan.mode in ("fsdp", "fsdp_tp") and runtime.dp_size > 1:
        try:
            with runtime.no_sync():
                pass
        except spikemesh.SpikeMeshError as e:
            if "no_sync" not in str(e):
                raise
        else:
            raise AssertionError("no_sync under fsdp did not refuse")
        return
    if runtime.dp_size != torch_dist.get_world_size():
        return  # ranks that share a dp coordinate hold the same gradients anyway
    rank = torch_dist.get_rank()
    share = x[:, rank * 2:(rank + 1) * 2]
    labels = torch.arange(2)
    with runtime.no_sync():
        common.criterion(runtime.model(share), labels).backward()
    grad = next(runtime.model.parameters()).grad
    if same_on_every_rank(grad.clone()):
        raise AssertionError("no_sync: the gradients were averaged")
    common.criterion(runtime.model(share), labels).backward()
    if not same_on_every_rank(next(runtime.model.parameters()).grad.clone()):
        raise AssertionError("after no_sync: the gradients differ between ranks")


def check_pipeline_forward(model, x, plan):
    """A pipeline's inference output reaches every rank and equals eager PyTorch's; a
    training forward outside train_step is refused."""
    if plan.mode != "pp":
        return
    eager = copy.deepcopy(model).eval()
    runtime = spikemesh.apply(model=copy.deepcopy(model), plan=plan)
    batch = x[:, :GLOBAL_BATCH // runtime.dp_size]
    try:
        runtime.model.train()(batch)
    except spikemesh.SpikeMeshError as e:
        if "train_step" not in str(e):
            raise
    else:
        raise AssertionError("a training forward of a pipeline was not refused")
    got = runtime.model.eval()(batch)
    functional.reset_net(eager)
    with torch.no_grad():
        want = eager(batch)
    if not torch.allclose(got, want, rtol=common.RTOL, atol=common.RTOL):
        raise AssertionError(f"pipeline inference differs by {(got - want).abs().max()}")


def check_load_state_dict(model, x, plan):
    """Another model's state_dict, loaded on every rank, is what state_dict() returns and
    what the program computes with."""
    other = copy.deepcopy(model).eval()
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(0.75)
    runtime = spikemesh.apply(model=copy.deepcopy(model), plan=plan)
    runtime.load_state_dict(other.state_dict())
    got = runtime.state_dict()
    for name, tensor in other.state_dict().items():
        if name in got and not torch.equal(got[name], tensor):
            raise AssertionError(f"load_state_dict: {name} is not the loaded value")
    batch = x[:, :2]
    out = runtime.model.eval()(batch)
    functional.reset_net(other)
    with torch.no_grad():
        want = other(batch)
    if not torch.allclose(out, want, rtol=common.RTOL, atol=common.RTOL):
        raise AssertionError(f"after load_state_dict the output differs by "
                             f"{(out - want).abs().max()}")


def eager_gradients(model, dataset, plan, replicas):
    """The first global batch's gradients in one process (a pipeline's accumulated as
    accumulate_gradients does)."""
    images, labels = next(eager_batches(dataset))
    if plan.mode == "pp":
        accumulate_gradients(model, images, labels, replicas, plan.pp_microbatches)
        return
    functional.reset_net(model)
    common.criterion(model(images), labels).backward()


def check_clip_grad_norm(model, dataset, plan):
    """runtime.clip_grad_norm_ clips by the whole model's gradient norm, whatever each rank
    holds: the norm and the clipped step (SGD, lr 1) equal torch's on the eager model."""
    eager = copy.deepcopy(model).train()
    runtime = spikemesh.apply(model=copy.deepcopy(model).train(), plan=plan)
    loader = runtime.prepare_dataloader(dataset=dataset,
                                        batch_size=GLOBAL_BATCH // runtime.dp_size,
                                        shuffle=False)
    images, labels = next(rank_batches(loader))
    if plan.mode == "pp":
        runtime.train_step(images, labels, common.criterion)
    else:
        common.criterion(runtime.model(images), labels).backward()
    eager_gradients(eager, dataset, plan, runtime.dp_size)
    whole = torch.nn.utils.clip_grad_norm_(eager.parameters(), float("inf"))
    theirs = torch.nn.utils.clip_grad_norm_(eager.parameters(), float(whole) / 2)
    ours = runtime.clip_grad_norm_(float(whole) / 2)
    if abs(float(ours) - float(theirs)) > common.RTOL * float(theirs):
        raise AssertionError(f"clip_grad_norm_: total norm {float(ours)} vs eager "
                             f"{float(theirs)}")
    runtime.build_optimizer(torch.optim.SGD, lr=1.0).step()
    torch.optim.SGD(eager.parameters(), lr=1.0).step()
    common.check_same_parameters(runtime.state_dict(), eager)


def recompute_costliest_stages(runtime):
    """apply_pipeline_stage_memopt: the costliest half of the stages recompute from now on,
    keeping their spike inputs as bytes; the training compared after it must still equal
    eager PyTorch's. Some rank recomputes, and a rank says so exactly when it holds a chosen
    stage."""
    costs = runtime.stage_costs
    _, _, applied = spikemesh.apply_pipeline_stage_memopt(runtime, memopt_level=1,
                                                          compress_x=True)
    chosen = runtime.memopt_selected_stage_indices
    if len(costs) < 2 or chosen != spikemesh.recommend_pipeline_memopt_stages(costs):
        raise AssertionError(f"memopt stages {chosen} for stage costs {costs}")
    mine = set(runtime.model._program.local_stages)
    anyone = torch.tensor([int(applied)])
    torch_dist.all_reduce(anyone)
    if applied != bool(mine & set(chosen)) or int(anyone) == 0:
        raise AssertionError(f"memopt applied={applied} on stages {sorted(mine)}, chosen "
                             f"{chosen}")


def check_shape_switch(model, dataset, plan):
    """Batches of T=4, T=2 and T=4 again: the T=2 program is compiled at its first batch
    with the plan's decisions, the weights and the optimizer's parameters carry over, and the
    three SGD steps equal eager PyTorch's."""
    eager = copy.deepcopy(model).train()
    runtime = spikemesh.apply(model=copy.deepcopy(model).train(), plan=plan)
    loader = runtime.prepare_dataloader(dataset=dataset,
                                        batch_size=GLOBAL_BATCH // runtime.dp_size,
                                        shuffle=False)
    schedule = (4, 2, 4)
    mine = [(x[:t].contiguous(), y) for t, (x, y) in zip(schedule, rank_batches(loader))]
    whole = [(x[:t].contiguous(), y) for t, (x, y) in zip(schedule, eager_batches(dataset))]
    runtime.compile(mine[0][0])
    opt = runtime.build_optimizer(torch.optim.SGD, lr=0.5)
    eager_opt = torch.optim.SGD(eager.parameters(), lr=0.5)
    if plan.mode == "pp":
        ours = train_steps(runtime, opt, None, mine)
        theirs = train_accumulating(eager, eager_opt, None, whole, runtime.dp_size,
                                    plan.pp_microbatches)
    else:
        ours = common.train(runtime.model, opt, None, mine)
        theirs = common.train(eager, eager_opt, None, whole, reset=functional.reset_net)
    common.check_close(mean_over_ranks(ours), theirs, "T=4, 2, 4 loss")
    common.check_same_parameters(runtime.state_dict(), eager)
    if runtime.model.compiled_shapes != [(4, 1, 28, 28), (2, 1, 28, 28)]:
        raise AssertionError(f"compiled shapes {runtime.model.compiled_shapes}")


def check_comm_stats(model, x, plan):
    """A tp program's all-reduces are counted per mesh axis, and by the reference's counters
    while they are on; other modes' programs run no collective of their own."""
    if plan.mode == "pp":
        return
    runtime = spikemesh.apply(model=copy.deepcopy(model).train(), plan=plan)
    spikemesh.enable_tp_communication_debug()
    spikemesh.reset_tp_communication_debug_stats()
    share = x[:, :GLOBAL_BATCH // runtime.dp_size]
    common.criterion(runtime.model(share), torch.arange(share.shape[1]) % 10).backward()
    rows = [r for r in runtime.comm_stats() if r["kind"] == "all_reduce" and r["mesh_axis"] == "tp"]
    counted = spikemesh.get_tp_communication_debug_stats()
    spikemesh.enable_tp_communication_debug(False)
    if "tp" not in plan.mesh_axes or max(plan.mesh_shape[plan.mesh_axes.index("tp")], 1) == 1:
        if runtime.comm_stats():
            raise AssertionError(f"comm_stats without tp: {runtime.comm_stats()}")
        return
    calls, nbytes = sum(r["calls"] for r in rows), sum(r["bytes"] for r in rows)
    if calls == 0 or nbytes == 0 or counted != {"all_reduce_calls": calls,
                                                 "all_reduce_bytes": nbytes}:
        raise AssertionError(f"tp counters: comm_stats {rows}, reference counters {counted}")
    runtime.model(share)
    if spikemesh.get_tp_communication_debug_stats() != counted:
        raise AssertionError("the reference's counters moved while off")
    runtime.reset_comm_stats()
    if runtime.comm_stats():
        raise AssertionError("reset_comm_stats left counts")


def eager_firing_rates(model, x):
    """Each neuron layer's firing rate of the eager model on x, eval mode, by forward hooks."""
    rates, hooks = {}, []
    for name, module in model.named_modules():
        if type(module).__name__.endswith("Node"):
            hooks.append(module.register_forward_hook(
                lambda m, i, out, name=name: rates.__setitem__(name, float(out.double().mean()))))
    model.eval()
    functional.reset_net(model)
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    functional.reset_net(model)
    return rates


def check_firing_rates(model, x, plan):
    """runtime.firing_rates() sums the ranks' counts: each dp rank's share of the global batch
    (and each tp rank's slice of a split layer) give the eager model's rates on the whole
    batch. A pipeline rank gives its own stages' layers."""
    if plan.mode == "pp":
        return
    runtime = spikemesh.apply(model=copy.deepcopy(model).eval(), plan=plan)
    runtime.model.eval()
    share = GLOBAL_BATCH // runtime.dp_size
    with torch.no_grad():
        runtime.model(x[:, runtime.dp_rank * share:(runtime.dp_rank + 1) * share])
    got = runtime.firing_rates()
    want = eager_firing_rates(copy.deepcopy(model), x[:, :GLOBAL_BATCH])
    # tp sums a split layer's inputs in another order: a neuron at its threshold may flip.
    tol = 2e-3 if "tp" in plan.mesh_axes else 2e-6
    if list(got) != list(want) or any(abs(got[k] - want[k]) > tol for k in want):
        raise AssertionError(f"firing_rates {got}, eager {want}")
    common.check_firing({k: {"firing_rate": v} for k, v in got.items()})


def check_event_kernels(model, x, plan):
    """The kernel choice on every rank of a data-parallel job: under "auto" each rank's Linear
    and conv2d shapes fed spikes get a crossover (timed once into the shared crossover file)
    and count their calls in event_kernel_choices; at limit 1 every spike-fed call is
    event-driven; either way the rank's output on its share equals eager PyTorch's bit for bit
    (a tp or pp rank sums other slices: their own tests cover those)."""
    if plan.mode not in ("dp", "fsdp"):
        return
    share = GLOBAL_BATCH // torch_dist.get_world_size()
    mine = x[:, torch_dist.get_rank() * share:(torch_dist.get_rank() + 1) * share]
    with torch.no_grad():
        want = copy.deepcopy(model).eval()(mine)
    for limit in ("auto", 1.0):
        spikemesh.set_event_kernels(linear=limit, conv=limit)
        try:
            runtime = spikemesh.apply(model=copy.deepcopy(model).eval(), plan=plan)
            runtime.model.eval()
            with torch.no_grad():
                got = runtime.model(mine)
        finally:
            spikemesh.set_event_kernels()
        if not torch.equal(got, want):
            raise AssertionError(f"event kernels at {limit!r}: output differs from eager by "
                                 f"{float((got - want).abs().max()):.3g}")
    kinds = {c["layer"].split()[0] for c in spikemesh.event_kernel_choices()
             if c["event_calls"] + c["dense_calls"] > 0 and 0.0 <= c["threshold"] <= 1.0}
    if kinds != {"linear", "conv2d"}:
        raise AssertionError(f"under 'auto' the spike-fed shapes counted were {kinds}: "
                             f"{spikemesh.event_kernel_choices()}")
    if spikemesh.event_kernels() != {"linear": "auto", "conv": "auto"}:
        raise AssertionError(f"set_event_kernels() left {spikemesh.event_kernels()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default=None, help="default: the planner's choice")
    parser.add_argument("--objective", default="speed")
    parser.add_argument("--topology", default="", help="default: dp=WORLD_SIZE")
    parser.add_argument("--schedule", default=None, help="a pipeline's schedule")
    parser.add_argument("--no-example", action="store_true",
                        help="analyze without an example: the plan follows the reference's "
                             "rules and each runtime compiles at its first forward")
    args = parser.parse_args()
    torch_dist.init_process_group("gloo")
    world = torch_dist.get_world_size()
    model, x, stats = common.csnn_case(N=GLOBAL_BATCH * common.STEPS)
    common.check_firing(stats)
    labels = torch.randint(0, 10, (x.shape[1],), generator=torch.Generator().manual_seed(1))
    dataset = TensorDataset(x.transpose(0, 1).contiguous(), labels)
    analysis = spikemesh.analyze(model, example_input=None if args.no_example
                                 else x[:, :GLOBAL_BATCH])
    plan = spikemesh.plan(analysis=analysis, objective=args.objective,
                          topology=args.topology or {"dp": world},
                          backend="gloo", batch_size=GLOBAL_BATCH, mode=args.mode,
                          features=spikemesh.DistributedFeatureSet(pp_schedule=args.schedule))
    if args.no_example and plan.decided_by != "rules":
        raise AssertionError(f"a plan without shapes decided by {plan.decided_by!r}")
    check_initial_broadcast(model, x, plan)
    check_no_sync(model, x, plan)
    check_pipeline_forward(model, x, plan)
    check_load_state_dict(model, x, plan)
    check_comm_stats(model, x, plan)
    check_firing_rates(model, x, plan)
    check_event_kernels(model, x, plan)
    check_clip_grad_norm(model, dataset, plan)
    if world == 2:
        check_shape_switch(model, dataset, plan)
    sgd = compare("sgd", model, x, dataset, plan,
                  (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
                  lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5))
    adam = compare("adam", model, x, dataset, plan, (torch.optim.Adam, dict(lr=1e-3)),
                   lambda o: None)
    if torch_dist.get_rank() == 0:
        detail = plan.pp_schedule if plan.mode == "pp" else plan.optimizer_strategy
        print(f"{plan.mode} ({detail}) on {world} ranks: 5 steps equal to eager; losses sgd "
              f"{sgd[0]:.5f} -> {sgd[-1]:.5f}, adam {adam[0]:.5f} -> {adam[-1]:.5f}")
    torch_dist.destroy_process_group()


if __name__ == "__main__":
    main()

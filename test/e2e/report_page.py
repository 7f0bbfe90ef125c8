"""snn-run report: one self-contained HTML page per run, every view drawn from the run's logs.

Three logs: (A) a one-process CSNN run of 3 epochs with an eval split (make_case's CSNN, whose
neuron layers fire at 5-50 % on the case input; the loss must move); (B) the same model
compiled for a pipeline (pp=2, 1F1B, 4 microbatches) trained on 2 ranks with `--trace`, so
the rank logs beside its log carry each rank's step times and the plan's prediction
(plan_check); (C) A's log with its per-layer "firing_rates" replaced in its step and epoch
events (synthetic values: the runtime's own are in A and B), and its last two steps logged
again with other losses, as a resumed run appends them.
Each page is rendered by headless Chromium (`--dump-dom`). Required:
  - the page loads nothing: no src/href/url()/import, no http(s) but the SVG namespace;
  - no JavaScript error: none in Chromium's console (stderr), #report-errors empty, and the
    script finished (body data-ready);
  - every view drew what the logs hold: the loss and accuracy series (x = the steps, y = the
    logged values, exactly), eval loss and accuracy at each epoch's last step, each layer's
    firing rates (A's and B's measured, C's synthetic), each rank's step times and the plan's
    predicted step, the predicted and measured bars per rank, and the pipeline schedule's
    spans of the last traced step (B; the others say there is no trace); the later event of
    a step logged twice;
  - bad input is one `error:` line naming the file (and line), exit 1, and the output left as
    it was (written whole or not at all).
Without a headless Chromium (`chromium-headless-shell`, which scripts/install-deps.sh
installs) the test fails saying so.

Usage: report_page.py --bin BUILD/bin --work DIR
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import train_common as tc

T, B = 4, 16
BROWSERS = ("chromium-headless-shell", "chromium", "google-chrome")
VOID = {"meta", "br", "input", "img", "link", "hr", "col", "area", "base", "embed", "source",
        "track", "wbr", "param"}


class Dom(HTMLParser):
    """Every element with its attributes and parent."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.stack, self.nodes = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        node = {"tag": tag, "attrs": dict(attrs), "parent": self.stack[-1] if self.stack else None}
        self.nodes.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.nodes.append({"tag": tag, "attrs": dict(attrs),
                           "parent": self.stack[-1] if self.stack else None})

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                return

    def by_id(self, ident):
        found = [n for n in self.nodes if n["attrs"].get("id") == ident]
        if len(found) != 1:
            raise tc.Failure(f"the page has {len(found)} elements with id '{ident}'")
        return found[0]

    def inside(self, ancestor, **attrs):
        """Elements under `ancestor` whose attributes include `attrs` (data_x: data-x)."""
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        out = []
        for n in self.nodes:
            p = n["parent"]
            while p is not None and p is not ancestor:
                p = p["parent"]
            if p is ancestor and all(k in n["attrs"] and v in (None, n["attrs"][k])
                                     for k, v in want.items()):
                out.append(n)
        return out


def browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise tc.Failure("no headless Chromium on PATH (tried " + ", ".join(BROWSERS) + "): "
                     "install chromium-headless-shell (bash scripts/install-deps.sh does)")


def render(page, work):
    """The DOM after the page's script ran; fails on console errors."""
    profile = tc.fresh_dir(os.path.join(work, "chromium-profile"))
    cmd = [browser(), "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr",
           "--v=0", f"--user-data-dir={profile}", "--dump-dom",
           "file://" + os.path.abspath(page)]
    print("+ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    console = [l for l in proc.stderr.splitlines() if ":CONSOLE" in l]
    if proc.returncode != 0 or "<body" not in proc.stdout:
        raise tc.Failure(f"{cmd[0]} exited {proc.returncode}:\n{tc._tail(proc.stderr)}")
    errors = [l for l in console if re.search(r"Uncaught|Error", l)]
    if errors:
        raise tc.Failure(f"{page}: JavaScript errors in the console: {errors}")
    dom = Dom(proc.stdout)
    body = next(n for n in dom.nodes if n["tag"] == "body")
    box = dom.by_id("report-errors")
    if body["attrs"].get("data-ready") != "true" or box["attrs"].get("data-errors") != "0":
        raise tc.Failure(f"{page}: the script did not finish cleanly (data-ready "
                         f"{body['attrs'].get('data-ready')}, errors {box['attrs']})")
    return dom


def check_self_contained(page):
    with open(page) as f:
        html = f.read()
    found = re.findall(r"""\b(?:src|href)\s*=|url\(|@import|\bfetch\(|XMLHttpRequest|https?://(?!www\.w3\.org/2000/svg")""", html)
    if found:
        raise tc.Failure(f"{page}: refers to outside resources: {sorted(set(found))}")


def numbers(text):
    return [None if v == "null" else float(v) for v in text.split(",")] if text else []


def finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def series(dom, plot, name, xs, ys, what):
    """The series `name` of `plot` has x = xs and y = ys exactly; returns its point count."""
    svg = dom.by_id(plot)
    found = dom.inside(svg, data_series=name)
    if len(found) != 1:
        raise tc.Failure(f"{what}: {plot} has {len(found)} series '{name}'")
    a = found[0]["attrs"]
    got_x, got_y = numbers(a.get("data-x", "")), numbers(a.get("data-y", ""))
    want_y = [y if finite(y) else None for y in ys]
    if got_x != [float(x) for x in xs] or got_y != want_y:
        raise tc.Failure(f"{what}: {plot} '{name}' drew x {got_x[:4]}.. y {got_y[:4]}.., "
                         f"the log holds x {list(xs)[:4]}.. y {want_y[:4]}..")
    n = sum(1 for y in want_y if y is not None)
    if a.get("data-points") != str(n):
        raise tc.Failure(f"{what}: {plot} '{name}' drew {a.get('data-points')} points, want {n}")
    return n


def drawn(dom, plot, count, unit, what):
    got = dom.by_id(plot)["attrs"].get("data-drawn")
    if got != f"{count} {unit}":
        raise tc.Failure(f"{what}: {plot} data-drawn '{got}', want '{count} {unit}'")


def empty(dom, plot, what):
    a = dom.by_id(plot)["attrs"]
    if a.get("data-drawn") != "0 points" or not a.get("data-empty"):
        raise tc.Failure(f"{what}: {plot} should say it has nothing to draw: {a}")


def run_steps(events):
    """Step events by step, the last event of a step winning; epoch events likewise."""
    steps, epochs, last = {}, {}, 0
    for e in events:
        if e["event"] == "step":
            steps[e["step"]] = e
            last = e["step"]
        elif e["event"] == "epoch":
            epochs[e["epoch"]] = (e, last)
    return [steps[s] for s in sorted(steps)], [epochs[k] for k in sorted(epochs)]


def check_training(dom, steps, epochs, what):
    xs = [s["step"] for s in steps]
    ends = [end for _, end in epochs]
    for plot, key, train, evaluated in (("plot-loss", "loss", "train loss", "eval loss"),
                                        ("plot-accuracy", "accuracy", "train accuracy",
                                         "eval accuracy")):
        n = series(dom, plot, train, xs, [s[key] for s in steps], what)
        evals = [e.get("eval_" + key) for e, _ in epochs]
        if any(finite(v) for v in evals):
            n += series(dom, plot, evaluated, ends, evals, what)
        drawn(dom, plot, n, "points", what)


def check_firing_rates(dom, steps, what):
    layers = []
    for s in steps:
        layers += [k for k in s.get("firing_rates", {}) if k not in layers]
    if not layers:
        return empty(dom, "plot-firing-rates", what)
    n = 0
    for layer in layers:
        have = [s for s in steps if layer in s.get("firing_rates", {})]
        n += series(dom, "plot-firing-rates", layer, [s["step"] for s in have],
                    [s["firing_rates"][layer] for s in have], what)
    drawn(dom, "plot-firing-rates", n, "points", what)


def check_step_times(dom, ranks, plans, what):
    """`ranks`: [(rank, step events)]; `plans`: [(rank, plan_check)]."""
    timed = [(r, steps) for r, steps in ranks if any(finite(s.get("seconds")) for s in steps)]
    n, all_steps = 0, []
    for r, steps in timed:
        n += series(dom, "plot-step-times", f"rank {r}", [s["step"] for s in steps],
                    [s.get("seconds") for s in steps], what)
        all_steps += [s["step"] for s in steps]
    if plans:
        p = plans[0][1]["predicted"]["step_seconds"]
        n += series(dom, "plot-step-times", "plan's prediction",
                    [min(all_steps), max(all_steps)], [p, p], what)
    drawn(dom, "plot-step-times", n, "points", what)


def check_plan(dom, plans, what):
    if not plans:
        return empty(dom, "plot-plan", what)
    svg = dom.by_id("plot-plan")
    got = {(int(b["attrs"]["data-rank"]), b["attrs"]["data-quantity"], b["attrs"]["data-kind"]):
           float(b["attrs"]["data-value"]) for b in dom.inside(svg, data_kind=None)}
    want = {(r, q, k): check[k][q] for r, check in plans
            for q in ("step_seconds", "comm_seconds") for k in ("predicted", "measured")}
    if got != want:
        raise tc.Failure(f"{what}: plan bars {got}, the end events hold {want}")
    drawn(dom, "plot-plan", len(want), "bars", what)
    return want


def check_schedule(dom, trace, what):
    if trace is None:
        return empty(dom, "plot-schedule", what)
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    last = max(e["args"]["step"] for e in spans)
    want = sorted((e["tid"], e["name"], float(e["ts"]), float(e["dur"]))
                  for e in spans if e["args"]["step"] == last)
    svg = dom.by_id("plot-schedule")
    got = sorted((int(g["attrs"]["data-rank"]), g["attrs"]["data-name"],
                  float(g["attrs"]["data-ts"]), float(g["attrs"]["data-dur"]))
                 for g in dom.inside(svg, data_name=None))
    if got != want or svg["attrs"].get("data-step") != str(last):
        raise tc.Failure(f"{what}: the schedule drew {len(got)} spans of step "
                         f"{svg['attrs'].get('data-step')}, the trace holds {len(want)} of "
                         f"step {last}")
    drawn(dom, "plot-schedule", len(want), "spans", what)
    return len(want)


def rank_logs(log):
    """[(rank, step events)], [(rank, plan_check)] of LOG.rank<R>.jsonl, or of LOG itself."""
    stem, ext = os.path.splitext(log)
    paths = [(r, f"{stem}.rank{r}{ext}") for r in range(64) if os.path.exists(f"{stem}.rank{r}{ext}")]
    ranks, plans = [], []
    for r, path in paths or [(0, log)]:
        events = tc.read_jsonl(path)
        ranks.append((r, run_steps(events)[0]))
        ends = [e for e in events if e["event"] == "end" and "plan_check" in e]
        if ends:
            plans.append((r, ends[-1]["plan_check"]))
    return ranks, plans


def check_page(args, work, name, log, trace=None):
    page = os.path.join(work, f"{name}.html")
    cmd = [os.path.join(args.bin, "snn-run"), "report", log, "-o", page]
    tc.run(cmd + (["--trace", trace] if trace else []))
    check_self_contained(page)
    dom = render(page, work)
    steps, epochs = run_steps(tc.read_jsonl(log))
    check_training(dom, steps, epochs, name)
    check_firing_rates(dom, steps, name)
    ranks, plans = rank_logs(log)
    check_step_times(dom, ranks, plans, name)
    check_plan(dom, plans, name)
    spans = check_schedule(dom, json.load(open(trace)) if trace else None, name)
    print(f"{name}: {os.path.getsize(page) // 1024} KiB; drew {len(steps)} steps, "
          f"{len(epochs)} epochs, {len(ranks)} rank(s), {len(plans)} plan check(s)"
          + (f", {spans} schedule spans" if trace else ""))


def with_firing_rates(log, out, layers):
    """`log` with synthetic per-layer firing_rates in its step and epoch events, and its last
    two steps logged again with other losses (a resumed run appends them)."""
    events = tc.read_jsonl(log)
    steps = [e for e in events if e["event"] == "step"]
    rates = lambda step: {l: round(r * (1 - 0.3 * step / len(steps)), 6)  # noqa: E731
                          for l, r in layers.items()}
    with open(out, "w") as f:
        for e in events:
            if e["event"] in ("step", "epoch"):
                e = dict(e, firing_rates=rates(e.get("step", steps[-1]["step"])))
            f.write(json.dumps(e) + "\n")
        for s in steps[-2:]:
            f.write(json.dumps(dict(s, loss=s["loss"] / 2, firing_rates=rates(s["step"]))) + "\n")


def expect_error(args, what, cmd_tail, needle, output):
    """`snn-run report ...` fails with one error line holding `needle`; `output` is as it
    was and nothing else appeared beside it."""
    before = open(output).read() if os.path.exists(output) else None
    listing = sorted(os.listdir(os.path.dirname(output)))
    proc = tc.run([os.path.join(args.bin, "snn-run"), "report", *cmd_tail], expect_ok=False)
    lines = proc.stderr.strip().splitlines()
    if proc.returncode != 1 or proc.stdout or len(lines) != 1 or \
            not lines[0].startswith("error: ") or needle not in lines[0]:
        raise tc.Failure(f"{what}: want exit 1 and one 'error: ...{needle}...' line, got "
                         f"{proc.returncode}: {proc.stderr!r}")
    after = open(output).read() if os.path.exists(output) else None
    if after != before or sorted(os.listdir(os.path.dirname(output))) != listing:
        raise tc.Failure(f"{what}: the failed report changed {os.path.dirname(output)}")


def check_bad_input(args, work, good_log):
    bad = tc.fresh_dir(os.path.join(work, "bad"))
    out = os.path.join(bad, "report.html")
    w = lambda n: os.path.join(bad, n)  # noqa: E731
    expect_error(args, "missing log", [w("none.jsonl"), "-o", out], w("none.jsonl") + ": cannot open", out)
    lines = open(good_log).read().splitlines(keepends=True)
    with open(w("broken.jsonl"), "w") as f:
        f.writelines(lines[:2] + ['{"event": "step", "step": 2, "loss": 0.5,\n'] + lines[2:])
    with open(out, "w") as f:
        f.write("an earlier report\n")
    expect_error(args, "a malformed line", [w("broken.jsonl"), "-o", out],
                 w("broken.jsonl") + ":3: not JSON", out)
    with open(w("noloss.jsonl"), "w") as f:
        f.write('{"event": "step", "step": 0, "accuracy": 0.5}\n')
    expect_error(args, "a step without loss", [w("noloss.jsonl"), "-o", out],
                 w("noloss.jsonl") + ":1: step event: 'loss' is missing", out)
    with open(w("trace.json"), "w") as f:
        f.write('{"traceEvents": [\n{"ph": "X", "ts": 1,\n')
    expect_error(args, "a cut trace", [good_log, "--trace", w("trace.json"), "-o", out],
                 w("trace.json") + ":3: not JSON", out)
    expect_error(args, "no output directory", [good_log, "-o", w("no/such/r.html")],
                 "directory '" + w("no/such") + "' does not exist", out)
    print("bad input: one error line naming the file and line, the earlier output untouched")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    browser()  # before any work: the reason a machine cannot run this comes first
    work = tc.fresh_dir(args.work)
    w = lambda *n: os.path.join(work, *n)  # noqa: E731
    snn_run = os.path.join(args.bin, "snn-run")
    case, art = tc.make_artifact(args.bin, work, "csnn", T=T, N=B, width=8)
    data = tc.static_images(w("x.npy"), w("y.npy"), 6 * B, [1, 28, 28], seed=5)
    evals = tc.static_images(w("ex.npy"), w("ey.npy"), 2 * B, [1, 28, 28], seed=6)
    common = ["--data-npy", data, "--eval-data-npy", evals, "--batch-size", B, "--optimizer",
              "adam", "--lr", "0.002", "--loss", "ce", "--threads", 1, "--progress", "none"]
    tc.fresh_dir(w("a"))
    tc.run([snn_run, "train", art, "--epochs", 3, *common, "--log", w("a", "log.jsonl")])
    with open(os.path.join(case, "meta.json")) as f:
        layers = {k: v["firing_rate"] for k, v in json.load(f)["neurons"].items()}
    if not all(0.05 <= r <= 0.5 for r in layers.values()):
        raise tc.Failure(f"neuron layers outside 5-50 % firing: {layers}")
    losses = [s["loss"] for s in tc.read_log(w("a", "log.jsonl"))[0]]
    if max(losses) - min(losses) < 1e-3 * abs(losses[0]):
        raise tc.Failure(f"the loss did not move: {losses}")

    pp_art = w("art_pp2")
    tc.run([os.path.join(args.bin, "snn-compile"), os.path.join(case, "model.onnx"), "-o",
            pp_art, "--mode", "pp", "--topology", "pp=2", "--batch-size", B,
            "--pp-schedule", "1f1b", "--pp-microbatches", 4])
    tc.fresh_dir(w("b"))
    tc.run([snn_run, "--nproc", 2, "train", pp_art, "--epochs", 1, *common,
            "--log", w("b", "log.jsonl"), "--trace", w("b", "trace.json")])
    with_firing_rates(w("a", "log.jsonl"), w("c.jsonl"), layers)

    check_page(args, work, "one_process", w("a", "log.jsonl"))
    check_page(args, work, "pipeline", w("b", "log.jsonl"), w("b", "trace.json"))
    check_page(args, work, "firing_rates", w("c.jsonl"))
    check_bad_input(args, work, w("a", "log.jsonl"))
    print(f"PASS: every view drawn from the logs, no script error; neuron layers fire at "
          f"{sorted(round(r, 3) for r in layers.values())}")


if __name__ == "__main__":
    tc.main_wrapper(main)

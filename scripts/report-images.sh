#!/usr/bin/env bash
# Remakes docs/images/report-*.png, the pictures of docs/observability.md: a real run of the
# Fashion-MNIST CSNN (2048 training images, 512 test images, 3 epochs of Adam) compiled as a
# 2-stage 1F1B pipeline and trained on 2 ranks with --log and --trace, drawn by
# `snn-run report` and photographed view by view with headless Chromium (page#view=ID).
# The firing-rate picture comes from the PyTorch reference trainer (snnexport.train) on the
# same model and data, its step events given the rates its neuron layers measured. Needs the build (BUILD_DIR, default build/) and
# chromium-headless-shell (scripts/install-deps.sh). About two minutes.
set -euo pipefail
ROOT="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
BIN="${BUILD_DIR:-$ROOT/build}/bin"
OUT="$ROOT/docs/images"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export PYTHONPATH="$ROOT/python_export"
PY=/usr/bin/python3
cd "$WORK"

$PY -m snnexport.make_case --model csnn --width 16 --N 32 --out case --quiet
$PY - <<'PY'
import numpy as np
from snnexport import train as tr
for split, count, name in (("train", 2048, "train"), ("test", 512, "test")):
    data = tr.load_fashion_mnist(split=split)
    np.save(f"{name}_x.npy", data.x[:count])
    np.save(f"{name}_y.npy", data.y[:count])
PY
# Planned with this machine's measurements, so that the plan view compares like with like.
"$BIN/snn-run" calibrate --quick --ranks 2 --out machine.json --progress none
"$BIN/snn-compile" case/model.onnx --mode pp --topology pp=2 --batch-size 32 \
    --pp-schedule 1f1b --pp-microbatches 4 --device-profile machine.json -o art
mkdir run
"$BIN/snn-run" --nproc 2 train art --data-npy train_x.npy,train_y.npy \
    --eval-data-npy test_x.npy,test_y.npy --epochs 3 --batch-size 32 --lr 1e-3 \
    --optimizer adam --loss ce --progress none --log run/log.jsonl --trace run/trace.json
"$BIN/snn-run" report run/log.jsonl --trace run/trace.json -o run.html

$PY - <<'PY'
import json
from snnexport import train as tr
model, _ = tr.model_from_case("case")
rates = {}
def recorder(name):
    def record(module, inputs, output):
        if module.training:  # training steps only, not the epochs' evaluation
            rates.setdefault(name, []).append(float(output.float().mean()))
    return record
for name, module in model.named_modules():
    if type(module).__name__.endswith("Node"):
        module.register_forward_hook(recorder(name))
cfg = tr.TrainConfig(batch_size=32, epochs=3, optimizer="adam", lr=1e-3, loss="ce",
                     repeat_time=4)
tr.train(model, tr.load_npy("train_x.npy", "train_y.npy", static=True), cfg,
         eval_data=tr.load_npy("test_x.npy", "test_y.npy", static=True),
         log_path="reference.jsonl")
with open("reference.jsonl") as f, open("rates.jsonl", "w") as out:
    for line in f:
        event = json.loads(line)
        if event["event"] == "step":
            event["firing_rates"] = {k: v[event["step"]] for k, v in rates.items()}
        out.write(json.dumps(event) + "\n")
PY
"$BIN/snn-run" report rates.jsonl -o rates.html

shoot() { # VIEW PAGE HEIGHT
  chromium-headless-shell --headless --disable-gpu --no-sandbox --hide-scrollbars \
      --user-data-dir="$WORK/profile" --window-size="820,$3" \
      --screenshot="$OUT/report-$1.png" "file://$WORK/$2#view=$1" 2>/dev/null
}
shoot training run.html 640
shoot firing-rates rates.html 330
shoot step-times run.html 330
shoot plan run.html 420
shoot schedule run.html 250
ls -l "$OUT"/report-*.png

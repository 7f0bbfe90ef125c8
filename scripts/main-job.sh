#!/usr/bin/env bash
# The README's main job: install what is missing, build, export the Fashion-MNIST CSNN from
# PyTorch, check that the compiled model runs exactly like PyTorch, then compile it for data
# parallelism on 2 ranks and train it for one epoch on 2 local ranks (STEPS=N: N steps instead,
# as the doc test runs it).
set -euo pipefail
ROOT="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
WORK="${WORK_DIR:-$BUILD_DIR/main-job}"
EPOCHS="${EPOCHS:-1}"
LENGTH=(--epochs "$EPOCHS")
if [ -n "${STEPS:-}" ]; then LENGTH=(--steps "$STEPS"); fi
bash "$ROOT/scripts/install-deps.sh"
BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/build.sh"

BIN="$BUILD_DIR/bin"
export PYTHONPATH="$ROOT/python_export"
rm -rf "$WORK" && mkdir -p "$WORK"

echo "== export: CSNN (width 32, T=4) from PyTorch to ONNX, with a reference forward"
/usr/bin/python3 -m snnexport.make_case --model csnn --width 32 --out "$WORK/case" --quiet

echo "== inference check: snn-compile + snn-run infer against the PyTorch forward"
"$BIN/snn-compile" "$WORK/case/model.onnx" -o "$WORK/artifact"
"$BIN/snn-run" infer "$WORK/artifact" --input "$WORK/case/input.npy" --output "$WORK/output.npy"
/usr/bin/python3 - "$WORK" <<'PY'
import sys, numpy as np
work = sys.argv[1]
got, want = np.load(f"{work}/output.npy"), np.load(f"{work}/case/expected.npy")
print(f"output {list(got.shape)}; max |snn-run - PyTorch| = {np.abs(got - want).max():.3g}")
sys.exit(0 if np.array_equal(got, want) else 1)
PY

echo "== compile for data parallelism on 2 ranks (global batch 64)"
"$BIN/snn-compile" "$WORK/case/model.onnx" -o "$WORK/artifact-dp" --mode dp --topology dp=2 \
  --batch-size 64 --explain

echo "== train on 2 local ranks: Fashion-MNIST, ${LENGTH[*]#--}, Adam lr 0.003, test after each epoch"
"$BIN/snn-run" --nproc 2 train "$WORK/artifact-dp" --data fashion-mnist "${LENGTH[@]}" \
  --batch-size 64 --lr 0.003 --optimizer adam --loss mse --seed 0 --progress lines \
  --log "$WORK/metrics.jsonl" --save-params "$WORK/params"
/usr/bin/python3 - "$WORK/metrics.jsonl" <<'PY'
import json, sys
log = [json.loads(line) for line in open(sys.argv[1])]
steps = [r for r in log if r["event"] == "step"]
epochs = [r for r in log if r["event"] == "epoch"]
if not epochs:
    print(f"{len(steps)} steps: loss {steps[0]['loss']:.4f} -> {steps[-1]['loss']:.4f}")
for r in epochs:
    print(f"epoch {r['epoch'] + 1}: train loss {r['loss']:.4f} acc {r['accuracy']:.4f}, "
          f"test acc {r.get('eval_accuracy', float('nan')):.4f} ({r['seconds']:.0f} s)")
PY

#!/usr/bin/env bash
# Real training: the Fashion-MNIST CSNN (width 32, T=4) trained from PyTorch's default
# initialisation with `snn-run train` on the Debian dataset, evaluated on the 10000 test images
# after every epoch. Prints time and test accuracy per epoch as they finish and stops after the
# first epoch that reaches TARGET (the acceptance bar is 0.88), or after EPOCHS.
#
#   bash bench/train_fashion_mnist.sh                # defaults below
#   EPOCHS=10 LR=0.001 BATCH=128 bash bench/train_fashion_mnist.sh
#
# Environment: BIN (snn-compile + snn-run, default build/bin), WORK (default
# build/bench-fmnist), EPOCHS, BATCH, LR, OPTIMIZER, LOSS, SCHEDULE (step: LR x GAMMA every
# STEP_SIZE steps, default one epoch), SEED, THREADS (default all CPUs), TARGET, DATA
# (fashion-mnist or fashion-mnist:DIR).
# Exit status: 0 when TARGET was reached, 1 otherwise.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${BIN:-$ROOT/build/bin}"
WORK="${WORK:-$ROOT/build/bench-fmnist}"
EPOCHS="${EPOCHS:-6}"
BATCH="${BATCH:-64}"
LR="${LR:-0.003}"
OPTIMIZER="${OPTIMIZER:-adam}"
LOSS="${LOSS:-mse}"
SCHEDULE="${SCHEDULE:-step}"
GAMMA="${GAMMA:-0.3}"
SEED="${SEED:-0}"
THREADS="${THREADS:-$(nproc)}"
TARGET="${TARGET:-0.88}"
DATA="${DATA:-fashion-mnist}"
WIDTH=32
T=4
PY=/usr/bin/python3
export PYTHONPATH="$ROOT/python_export"

for tool in snn-compile snn-run; do
  [ -x "$BIN/$tool" ] || { echo "error: $BIN/$tool not found (build first or set BIN)" >&2; exit 1; }
done
rm -rf "$WORK" && mkdir -p "$WORK"

echo "== export: CSNN width $WIDTH, T=$T, PyTorch default init (seed $SEED)"
"$PY" - "$WORK/csnn.onnx" "$WIDTH" "$T" "$SEED" <<'EOF'
import sys
import torch
from snnexport import export_onnx, models
path, width, T, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(seed)
export_onnx(models.csnn(channels=width), torch.rand(T, 2, 1, 28, 28), path)
EOF
"$BIN/snn-compile" "$WORK/csnn.onnx" -o "$WORK/artifact"

DATA_DIR="/usr/share/datasets/fashion-mnist"
[ "${DATA#*:}" != "$DATA" ] && DATA_DIR="${DATA#*:}"
TRAIN_SIZE=$("$PY" -c 'import gzip, struct, sys
with gzip.open(sys.argv[1]) as f:
    print(struct.unpack(">II", f.read(8))[1])' "$DATA_DIR/train-labels-idx1-ubyte.gz")
STEPS_PER_EPOCH=$((TRAIN_SIZE / BATCH))
SCHEDULE_FLAGS=(--schedule "$SCHEDULE")
SCHEDULE_TEXT="$SCHEDULE"
if [ "$SCHEDULE" = step ]; then
  SCHEDULE_FLAGS+=(--step-size "${STEP_SIZE:-$STEPS_PER_EPOCH}" --gamma "$GAMMA")
  SCHEDULE_TEXT="step: x$GAMMA every ${STEP_SIZE:-$STEPS_PER_EPOCH} steps"
fi
echo "== train: $OPTIMIZER lr $LR ($SCHEDULE_TEXT), batch $BATCH, loss $LOSS, up to $EPOCHS" \
     "epochs, $THREADS threads, stop at test accuracy >= $TARGET"
LOG="$WORK/metrics.jsonl"
: > "$LOG"
"$BIN/snn-run" train "$WORK/artifact" --data "$DATA" --epochs "$EPOCHS" --batch-size "$BATCH" \
  --lr "$LR" --optimizer "$OPTIMIZER" "${SCHEDULE_FLAGS[@]}" --loss "$LOSS" --seed "$SEED" \
  --threads "$THREADS" --log "$LOG" --progress none --save-params "$WORK/params" \
  --checkpoint "$WORK/checkpoints" --checkpoint-every "$STEPS_PER_EPOCH" &
TRAIN_PID=$!

# Follow the log: one line per finished epoch; stop training once TARGET is reached.
set +e
"$PY" - "$LOG" "$TRAIN_PID" "$TARGET" "$EPOCHS" <<'EOF'
import json, os, signal, sys, time
log, pid, target, epochs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
start, total, seen, pos, reached = time.time(), 0.0, 0, 0, None

def alive():  # snn-run is the shell's child, not ours: look at /proc (a zombie has exited)
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

print(f"{'epoch':>5} {'seconds':>8} {'total s':>8} {'train loss':>10} {'train acc':>9} "
      f"{'test loss':>9} {'test acc':>8}", flush=True)
buf = ""
while True:
    running = alive()
    with open(log) as f:
        f.seek(pos)
        buf += f.read()
        pos = f.tell()
    *lines, buf = buf.split("\n")
    for line in lines:
        ev = json.loads(line) if line.strip() else {}
        if ev.get("event") != "epoch":
            continue
        seen += 1
        total += ev["seconds"]
        print(f"{ev['epoch'] + 1:>5} {ev['seconds']:>8.1f} {total:>8.1f} {ev['loss']:>10.5f} "
              f"{ev['accuracy']:>9.4f} {ev.get('eval_loss', float('nan')):>9.5f} "
              f"{ev.get('eval_accuracy', float('nan')):>8.4f}", flush=True)
        if reached is None and ev.get("eval_accuracy", 0.0) >= target:
            reached = (ev["epoch"] + 1, total)
    if reached is not None:
        if running:
            os.kill(pid, signal.SIGTERM)
        break
    if not running:
        break
    time.sleep(1.0)
if reached:
    print(f"reached test accuracy >= {target} after {reached[0]} epoch(s), "
          f"{reached[1]:.0f} s of training ({time.time() - start:.0f} s wall); the weights "
          f"of the end of each epoch are in {os.path.dirname(log)}/checkpoints "
          "(snn-run eval --checkpoint)")
    sys.exit(0)
print(f"did not reach test accuracy {target} in {seen} epoch(s) ({total:.0f} s of training)")
sys.exit(1)
EOF
status=$?
wait "$TRAIN_PID" 2>/dev/null
exit "$status"

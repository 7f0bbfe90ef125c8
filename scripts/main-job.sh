#!/usr/bin/env bash
# The README's main job: install what is missing, build, export the Fashion-MNIST CSNN from
# PyTorch, compile it with snn-compile and run it with snn-run, checking against PyTorch.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
WORK="${WORK_DIR:-$BUILD_DIR/main-job}"
bash "$ROOT/scripts/install-deps.sh"
BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/build.sh"

export PYTHONPATH="$ROOT/python_export"
rm -rf "$WORK" && mkdir -p "$WORK"
echo "== export: CSNN (width 32, T=4, N=8) from PyTorch to ONNX"
/usr/bin/python3 -m snnexport.make_case --model csnn --width 32 --out "$WORK/case" --quiet
echo "== compile: snn-compile model.onnx -o artifact"
"$BUILD_DIR/bin/snn-compile" "$WORK/case/model.onnx" -o "$WORK/artifact"
echo "== run: snn-run infer"
"$BUILD_DIR/bin/snn-run" infer "$WORK/artifact" --input "$WORK/case/input.npy" \
  --output "$WORK/output.npy"
/usr/bin/python3 - "$WORK" <<'PY'
import sys, numpy as np
work = sys.argv[1]
got, want = np.load(f"{work}/output.npy"), np.load(f"{work}/case/expected.npy")
print(f"output {list(got.shape)}; max |snn-run - PyTorch| = {np.abs(got - want).max():.3g}")
sys.exit(0 if np.array_equal(got, want) else 1)
PY

#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test through ctest, then
# run each fuzz target for FUZZ_SECONDS (default 60; 0 skips it) in a separate clang build
# (scripts/fuzz.sh, docs/testing.md "Fuzzing").
set -euo pipefail
ROOT="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/install-deps.sh"
BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/build.sh"
# The tests plan with the default constants, not a profile this user calibrated, and keep
# the event kernels' crossovers (timed by the first test that meets a layer shape) in the build.
(cd "$BUILD_DIR" && SPIKEMESH_DEVICE_PROFILE=none \
  SPIKEMESH_KERNEL_CROSSOVERS="$BUILD_DIR/kernel-crossovers.json" \
  ctest --output-on-failure -j "${CTEST_JOBS:-2}")
if [ "${FUZZ_SECONDS:-60}" != "0" ]; then
  BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/fuzz.sh" --seconds "${FUZZ_SECONDS:-60}"
fi

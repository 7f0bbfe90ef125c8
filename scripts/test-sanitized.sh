#!/usr/bin/env bash
# The sanitized test run (docs/testing.md "Sanitizers"): installs what is missing, configures
# build-asan/ with -DSNN_SANITIZE=ON (gcc, the project's own code built with ASan + UBSan),
# builds, and runs ctest there with the options below. Extra arguments go to ctest
# (e.g. -R 'runtime|lit'). The ASan/UBSan options are exported before the build too, because
# gtest_discover_tests runs the instrumented test binaries at build time.
set -euo pipefail
ROOT="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-asan}"
# shellcheck source=test/sanitizers/env.sh
source "$ROOT/test/sanitizers/env.sh"
bash "$ROOT/scripts/install-deps.sh"
BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/build.sh" -DSNN_SANITIZE=ON
(cd "$BUILD_DIR" && ctest --output-on-failure -j "${CTEST_JOBS:-2}" "$@")

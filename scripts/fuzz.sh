#!/usr/bin/env bash
# The fuzzers, one command (docs/testing.md, "Fuzzing"): builds the libFuzzer targets with
# clang-22, AddressSanitizer and UBSan in build-fuzz/, makes the seed corpus from the exported
# reference models, runs each target for --seconds (default 60) and saves every crashing,
# leaking or hanging input under test/fuzz/regressions/<target>/, where the ordinary build's
# ctest `fuzz.replay.<target>` replays it from then on. The target partitioned-artifacts
# (test/fuzz/partitioned_artifacts.py) runs mutated tp and pp artifacts on 2 ranks with the
# ordinary build's snn-compile and snn-run (BUILD_DIR, default build/) instead.
#
#   scripts/fuzz.sh [--seconds N] [--targets manifest,npy,onnx-import,partitioned-artifacts]
#
# Exits non-zero when a target found something (the input's path is printed).
set -euo pipefail
ROOT="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
FUZZ_DIR="${FUZZ_DIR:-$ROOT/build-fuzz}"
SECONDS_EACH=60
TARGETS="manifest,npy,onnx-import,partitioned-artifacts"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --targets) TARGETS="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: scripts/fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

IFS=',' read -r -a targets <<< "$TARGETS"
libfuzzer=()
for t in "${targets[@]}"; do
  [ "$t" != partitioned-artifacts ] && libfuzzer+=("$t")
done

found=0
if [[ ",$TARGETS," == *",partitioned-artifacts,"* ]]; then
  BIN="${BUILD_DIR:-$ROOT/build}/bin"
  echo "== partitioned-artifacts: ${SECONDS_EACH} s on 2 ranks ($BIN)"
  mkdir -p "$FUZZ_DIR"
  if ! PYTHONPATH="$ROOT/python_export" /usr/bin/python3 "$ROOT/test/fuzz/partitioned_artifacts.py" \
       --bin "$BIN" --work "$FUZZ_DIR/run-partitioned-artifacts" --seconds "$SECONDS_EACH" \
       --save "$ROOT/test/fuzz/regressions/partitioned-artifacts" > "$FUZZ_DIR/fuzz-partitioned-artifacts.log"; then
    echo "partitioned-artifacts FOUND failing mutants (saved under test/fuzz/regressions/partitioned-artifacts; log $FUZZ_DIR/fuzz-partitioned-artifacts.log)"
    found=1
  fi
  tail -1 "$FUZZ_DIR/fuzz-partitioned-artifacts.log"
fi
[ "${#libfuzzer[@]}" -eq 0 ] && exit "$found"
targets=("${libfuzzer[@]}")

bash "$ROOT/scripts/install-deps.sh"
EXTRA=(clang-22 libclang-rt-22-dev)
missing=()
for p in "${EXTRA[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get install -y -qq "${missing[@]}"
fi

mkdir -p "$FUZZ_DIR"
cmake -S "$ROOT" -B "$FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DSNN_BUILD_FUZZERS=ON -DSNN_BUILD_RUNTIME=OFF -DSNN_BUILD_TESTS=OFF > "$FUZZ_DIR/configure.log"
ninja -C "$FUZZ_DIR" snn-compile "${targets[@]/#/fuzz-}"

CORPUS="$FUZZ_DIR/corpus"
if [ ! -d "$CORPUS/manifest" ]; then
  PYTHONPATH="$ROOT/python_export" ASAN_OPTIONS=detect_leaks=0 \
    /usr/bin/python3 "$ROOT/test/fuzz/make_corpus.py" --snn-compile "$FUZZ_DIR/bin/snn-compile" \
    --out "$CORPUS"
fi

for t in "${targets[@]}"; do
  saved="$ROOT/test/fuzz/regressions/$t"
  work="$FUZZ_DIR/run-$t"
  mkdir -p "$saved" "$work"
  echo "== fuzz-$t: ${SECONDS_EACH} s from $(ls "$CORPUS/$t" | wc -l) seeds and $(ls "$saved" | wc -l) saved inputs"
  # Seeds and saved inputs are read-only inputs; what the fuzzer learns goes to $work.
  if ! "$FUZZ_DIR/bin/fuzz-$t" "$work" "$CORPUS/$t" "$saved" -max_total_time="$SECONDS_EACH" \
       -timeout=25 -rss_limit_mb=4096 -max_len=1048576 -print_final_stats=1 \
       -artifact_prefix="$saved/" 2> "$FUZZ_DIR/fuzz-$t.log"; then
    echo "fuzz-$t FOUND a failing input (saved under $saved; log $FUZZ_DIR/fuzz-$t.log):"
    grep -E "^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)" "$FUZZ_DIR/fuzz-$t.log" | head -5
    found=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$FUZZ_DIR/fuzz-$t.log" | sed "s/^/fuzz-$t: /"
done
exit "$found"

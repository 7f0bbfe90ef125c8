# Sourced by scripts/test-sanitized.sh: the runtime options of the sanitized build. Every
# setting that differs from the sanitizers' defaults is explained in docs/testing.md
# "Sanitizers". Python processes of the tests are not instrumented; these variables only reach
# the instrumented snn-* binaries and test programs they (and ctest) start.
SNN_SANITIZER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# abort_on_error: a report ends the process with SIGABRT, not exit code 1, which the CLI tests
#   expect for bad input and could otherwise mistake for an ordinary error.
# check_initialization_order: reports a global of ours read before its initializer ran.
# detect_leaks + suppressions: LeakSanitizer stays on; lsan.supp lists the (uninstrumented)
#   library allocations it may ignore, each with its reason.
export ASAN_OPTIONS="abort_on_error=1:check_initialization_order=1:detect_leaks=1:symbolize=1"
export LSAN_OPTIONS="suppressions=$SNN_SANITIZER_DIR/lsan.supp:print_suppressions=0"
# UBSan errors are already fatal (-fno-sanitize-recover=undefined); print where they happened.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1"
if [ -x /usr/lib/llvm-22/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
fi

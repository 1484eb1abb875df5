#!/usr/bin/env bash
# Checks the C++ sources' format (scripts/check-format.sh), then runs the
# whole test suite twice: the release build, then the same tests
# under AddressSanitizer + UndefinedBehaviorSanitizer. Run scripts/setup.sh
# --sanitize first (README's quick start does). Both builds are brought up
# to date first, so the tests never run stale binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
for dir in build/release build/sanitize; do
  if [[ ! -f "$dir/CMakeCache.txt" ]]; then
    echo "test.sh: $dir is not configured; run scripts/setup.sh --sanitize first" >&2
    exit 2
  fi
  cmake --build "$dir" --parallel "$jobs"
done
echo "== format =="
scripts/check-format.sh
echo "== tests: release =="
ctest --test-dir build/release -j "$jobs" --output-on-failure
echo "== tests: ASan + UBSan =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/sanitize -j "$jobs" --output-on-failure

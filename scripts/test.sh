#!/usr/bin/env bash
# Runs the whole test suite twice: the release build, then the same tests
# under AddressSanitizer + UndefinedBehaviorSanitizer. Run scripts/setup.sh
# --sanitize first (README's quick start does).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
echo "== tests: release =="
ctest --test-dir build/release -j "$jobs" --output-on-failure
echo "== tests: ASan + UBSan =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/sanitize -j "$jobs" --output-on-failure

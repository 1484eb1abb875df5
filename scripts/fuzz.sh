#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz) and runs each for a
# bounded time, starting from seeds it writes itself (valid reports; random
# conversations with the FedSel and LDP-FL servers; a small valid file for
# each data loader).
#   scripts/fuzz.sh [SECONDS]   (default 60 per target)
# Exits non-zero on a crash, a sanitizer report or a broken invariant; the
# input that caused it is left in build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if [[ ! -f build/fuzz/CMakeCache.txt ]]; then
  CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDLDP_FUZZ=ON >/dev/null
fi
cmake --build build/fuzz --parallel "$(nproc)"
for target in report_gate_fuzz service_fuzz ldpfl_service_fuzz loader_fuzz; do
  corpus=build/fuzz/corpus/$target
  mkdir -p "$corpus" build/fuzz/artifacts
  FEDLDP_FUZZ_WRITE_SEEDS=$corpus "build/fuzz/fuzz/$target"
  echo "== fuzz: $target for $seconds s =="
  log=build/fuzz/$target.log
  if ! "build/fuzz/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix=build/fuzz/artifacts/ "$corpus" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: $target failed (log: $log)" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  echo "fuzz: $target ran $runs inputs in $seconds s without a crash"
done

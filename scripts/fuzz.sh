#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz) and runs each for a
# bounded time, starting from seeds it writes itself (valid reports; random
# conversations with the FedSel and LDP-FL servers; a small valid file for
# each data loader).
#   scripts/fuzz.sh [SECONDS]   (default 60 per target; nproc targets at once)
# Exits non-zero on a crash, a sanitizer report or a broken invariant; the
# input that caused it is left in build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if [[ ! -f build/fuzz/CMakeCache.txt ]]; then
  CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDLDP_FUZZ=ON >/dev/null
fi
cmake --build build/fuzz --parallel "$(nproc)"
# One target, its seeds written first; its report goes to its log.
fuzz_one() {
  local target=$1 corpus=build/fuzz/corpus/$1 log=build/fuzz/$1.log
  mkdir -p "$corpus" build/fuzz/artifacts
  FEDLDP_FUZZ_WRITE_SEEDS=$corpus "build/fuzz/fuzz/$target" >"$log" 2>&1 &&
    "build/fuzz/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix=build/fuzz/artifacts/ "$corpus" >>"$log" 2>&1
}
# Each fuzzer is one process: as many run at once as there are cores, each
# for the full time (4 targets in 2 x 60 s on 2 cores, not 4 x 60 s).
targets=(report_gate_fuzz service_fuzz ldpfl_service_fuzz loader_fuzz)
jobs=$(nproc)
failed=0
for ((start = 0; start < ${#targets[@]}; start += jobs)); do
  batch=("${targets[@]:start:jobs}")
  echo "== fuzz: ${batch[*]} for $seconds s each, at once =="
  pids=()
  for target in "${batch[@]}"; do
    fuzz_one "$target" &
    pids+=($!)
  done
  for i in "${!batch[@]}"; do
    target=${batch[$i]}
    log=build/fuzz/$target.log
    if ! wait "${pids[$i]}"; then
      tail -n 40 "$log"
      echo "fuzz: $target failed (log: $log)" >&2
      failed=1
      continue
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    echo "fuzz: $target ran $runs inputs in $seconds s without a crash"
  done
  [[ $failed == 0 ]] || exit 1
done

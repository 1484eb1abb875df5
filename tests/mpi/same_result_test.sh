#!/usr/bin/env bash
# `mpirun -np P fedldp train` gives the record of one process, P = 2 and 4
# (oversubscribed on a small machine), for a two-stage and a vector variant
# and for sampled rounds: only the time and the process count may differ.
#   same_result_test.sh FEDLDP MPIEXEC
set -euo pipefail
fedldp=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi
# Without the time and the process count, and with the one process's name.
strip() { sed -e 's/"seconds":[^,]*,//' -e 's/,"processes":[0-9]*//' "$1"; }
status=0
for variant in ps-pm privunitg "ps-pm --sample-clients --shuffle"; do
  # shellcheck disable=SC2086  # the variant may carry flags
  args=(train --dataset syn-L-0.01-0.9 --variant $variant --repeats 1 --folds 2 --epochs 2
        --threads 1)
  "$fedldp" "${args[@]}" --out "$work/one.jsonl" > "$work/one.txt"
  for p in 2 4; do
    "$mpiexec" -np "$p" "${flags[@]}" "$fedldp" "${args[@]}" --out "$work/$p.jsonl" \
      > "$work/$p.txt"
    if [ "$(wc -l < "$work/$p.jsonl")" -ne 1 ]; then
      echo "FAIL: $variant on $p processes wrote $(wc -l < "$work/$p.jsonl") records, not 1"
      status=1
    elif [ "$(strip "$work/one.jsonl")" != "$(strip "$work/$p.jsonl")" ]; then
      echo "FAIL: $variant on $p processes differs from one process:"
      diff <(strip "$work/one.jsonl" | tr ',' '\n') <(strip "$work/$p.jsonl" | tr ',' '\n') || true
      status=1
    elif ! grep -q "on each of $p MPI processes" "$work/$p.txt"; then
      echo "FAIL: $variant on $p processes does not say so"
      status=1
    else
      echo "ok: $variant on $p processes: $(grep -o '"accuracy_mean":[^,]*' "$work/$p.jsonl")"
    fi
    rm -f "$work/$p.jsonl"
  done
  rm -f "$work/one.jsonl"
done
exit $status

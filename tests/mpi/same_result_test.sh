#!/usr/bin/env bash
# `mpirun -np P fedldp train` and `... ldpfl` give the record of one
# process, P = 2 and 4 (oversubscribed on a small machine): FedSel with a
# two-stage and a vector variant and in sampled rounds, LDP-FL with its
# shuffled two-point mechanism and with PrivUnitG. Only times and the process
# count may differ.
#   same_result_test.sh FEDLDP MPIEXEC
set -euo pipefail
fedldp=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi
# The fields of record $2 that differ from record $1, times and the process
# count aside ("" if none).
differ() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items()
                if k != "processes" and k != "seconds" and not k.endswith("_seconds")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
a, b = (strip(json.loads(open(p).readline())) for p in sys.argv[1:3])
print(" ".join(k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)))
PY
}
status=0
runs=(
  "train --dataset syn-L-0.01-0.9 --variant ps-pm --repeats 1 --folds 2 --epochs 2"
  "train --dataset syn-L-0.01-0.9 --variant privunitg --repeats 1 --folds 2 --epochs 2"
  "train --dataset syn-L-0.01-0.9 --variant ps-pm --sample-clients --shuffle --repeats 1 --folds 2"
  "ldpfl --dataset mnist --clients 12 --rounds 2 --train-rows 600 --test-rows 200"
  "ldpfl --dataset mnist --clients 12 --rounds 2 --train-rows 600 --test-rows 200 --randomizer privunitg --epsilon 8"
)
for run in "${runs[@]}"; do
  # shellcheck disable=SC2206  # the words of the run
  args=($run --threads 1)
  "$fedldp" "${args[@]}" --out "$work/one.jsonl" > "$work/one.txt"
  for p in 2 4; do
    "$mpiexec" -np "$p" "${flags[@]}" "$fedldp" "${args[@]}" --out "$work/$p.jsonl" \
      > "$work/$p.txt"
    if [ "$(wc -l < "$work/$p.jsonl")" -ne 1 ]; then
      echo "FAIL: $run on $p processes wrote $(wc -l < "$work/$p.jsonl") records, not 1"
      status=1
    elif fields=$(differ "$work/one.jsonl" "$work/$p.jsonl") && [ -n "$fields" ]; then
      echo "FAIL: $run on $p processes differs from one process in: $fields"
      status=1
    elif ! grep -q "$p MPI processes" "$work/$p.txt"; then
      echo "FAIL: $run on $p processes does not say so"
      status=1
    else
      echo "ok: $run on $p processes: $(grep -o '"accuracy\(_mean\)\?":[^,]*' "$work/$p.jsonl" | head -1)"
    fi
    rm -f "$work/$p.jsonl"
  done
  rm -f "$work/one.jsonl"
done
exit $status

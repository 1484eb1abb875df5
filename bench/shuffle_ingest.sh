#!/bin/sh
# Server CPU per report with K shufflers in front of one FedSel server
# (serve --shuffle), each taking one report per call from its clients and
# forwarding batches: docs/deploying.md, "Shufflers as ingest front-ends".
# Usage: bench/shuffle_ingest.sh FEDLDP K [CLIENTS] [EPOCHS] [BATCH]
# BATCH: the statement's n (serve --shuffle-batch), each report shuffled
# among at least so many; default the round's 3,256 with one shuffler and
# 85 % of a shuffler's expected share with K (a share below it then has
# odds under 1e-6 a round for K <= 4): every batch must hold that many.
# Prints one line: shufflers, reports counted, training seconds, server CPU
# seconds and us per report (from serve --out), vouch calls per report,
# batches forwarded and the smallest.
set -eu
fedldp=$1 k=$2 clients=${3:-4} epochs=${4:-1}
batch=${5:-$(( k == 1 ? 0 : 3256 * 85 / 100 / k ))}
dir=$(mktemp -d /dev/shm/fedldp-ingest-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
cd "$dir"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$fedldp" enrol --state s.sqlite --count "$clients" --out-dir tokens > /dev/null
port=$(free_port)
"$fedldp" serve --state s.sqlite --users 32561 --variant privunitg --shuffle --epsilon 4 \
  --epochs "$epochs" --shuffle-batch "$batch" --address "127.0.0.1:$port" \
  --shuffler-token-file shuffler.token \
  --out result.json > serve.out 2> serve.err &
server=$!
until grep -q "listening on" serve.err 2>/dev/null; do sleep 0.1; done
shuffler_ports=""
for i in $(seq 1 "$k"); do
  p=$(free_port)
  "$fedldp" shuffle --server "127.0.0.1:$port" --address "127.0.0.1:$p" \
    --token-file shuffler.token > "shuffle$i.out" 2> "shuffle$i.err" &
  shuffler_ports="$shuffler_ports $p"
done
sleep 1
for c in $(seq 1 "$clients"); do
  # Client c goes through shuffler ((c - 1) mod K) + 1.
  p=$(echo $shuffler_ports | tr ' ' '\n' | sed -n "$(( (c - 1) % k + 1 ))p")
  "$fedldp" client --protocol fedsel --server "127.0.0.1:$port" --shuffler "127.0.0.1:$p" \
    --token-file "tokens/client-$c.token" --part "$c/$clients" --ledger "l$c.sqlite" \
    > "client$c.out" 2> "client$c.err" &
done
wait "$server"
# Every shuffler hears the task end and stops on its own; one that has not
# within 5 s is stopped (and the line says so).
sleep 5
late=0
for job in $(jobs -p); do kill -TERM "$job" 2>/dev/null && late=$((late + 1)) || true; done
wait
echo "still running 5 s after the server ended, stopped: $late" > late.txt
/usr/bin/python3 - "$k" <<'PY'
import json, re, sys, glob
r = json.load(open("result.json"))
vouched = [re.findall(r"vouched (\d+) reports in (\d+) calls", open(f).read()) for f in glob.glob("shuffle*.out")]
asks = sum(int(a) for v in vouched for a, _ in v[-1:]); calls = sum(int(c) for v in vouched for _, c in v[-1:])
n = r["reports_counted"]
sizes = [int(s) for f in glob.glob("shuffle*.err")
         for s in re.findall(r"delivered a batch of (\d+) users", open(f).read())]
print(f"shufflers {sys.argv[1]}: {n} reports in {r['training_seconds']:.2f} s; server CPU "
      f"{r['training_cpu_seconds']:.2f} s = {1e6 * r['training_cpu_seconds'] / n:.1f} us per report; "
      f"vouch calls per report {calls / asks if asks else float('nan'):.3f}; "
      f"{len(sizes)} batches, smallest {min(sizes) if sizes else 0}; accuracy {r['accuracy']} "
      f"(majority {r['majority']}); {open('late.txt').read().strip()}")
PY

#!/usr/bin/env bash
# Server instructions per job of emqbench workloads, for A/B on a loaded
# machine (issue 27): each run gets a private valkey-server under callgrind
# (instructions counted only while emqbench runs), so the figure does not
# move with the machine's load as wall time and CPU time do. It is slow
# (the server runs ~50x slower), so use small -n (20,000).
# usage: bench/ab/callgrind.sh N WORKLOAD EMQBENCH...   e.g.
#   bench/ab/callgrind.sh 20000 lanes /tmp/emqbench.base /tmp/emqbench.new
# prints: binary workload jobs/s (under callgrind, meaningless) LPOP and
# EVALSHA calls, Ir/job.
set -u
N=$1; W=$2; shift 2
M=$(cd "$(dirname "$0")/../.." && pwd)
VKB=$(bash "$M/../shared/servers/valkey.sh")
for b in "$@"; do
  port=$((20000 + RANDOM % 20000)); dir=$(mktemp -d)
  (cd "$dir" && valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --instr-atstart=no \
    "$VKB/valkey-server" --port $port --save '' --appendonly no --dir "$dir" --daemonize no >/dev/null 2>&1) & vpid=$!
  for i in $(seq 300); do "$VKB/valkey-cli" -p $port ping >/dev/null 2>&1 && break; sleep 0.2; done
  spid=$(pgrep -P $vpid | head -1); spid=${spid:-$vpid}
  callgrind_control -i on $spid >/dev/null 2>&1
  jps=$("$b" -url redis://127.0.0.1:$port -json -executor script -n "$N" "$W" 2>/dev/null | jq -r .ops_per_sec)
  callgrind_control -i off $spid >/dev/null 2>&1
  calls=$("$VKB/valkey-cli" -p $port info commandstats | grep -oE 'cmdstat_(lpop|evalsha):calls=[0-9]+' | tr '\n' ' ')
  "$VKB/valkey-cli" -p $port shutdown nosave >/dev/null 2>&1; wait $vpid 2>/dev/null
  ir=$(callgrind_annotate "$dir/cg.out" 2>/dev/null | grep 'PROGRAM TOTALS' | tr -d ',' | awk '{print $1}')
  echo "$(basename "$b") $W jobs/s=$jps $calls Ir/job=$(( ${ir:-0} / N ))"
  rm -rf "$dir"
done

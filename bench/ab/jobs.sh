#!/usr/bin/env bash
# -jobs A/B (BENCHMARKS.md "third session"): base vs new emqbench (emqbench.{base,new}, emq.{base,new}.so in $D),
# native and script, -jobs and plain side by side, the order alternating by round. usage: jobs.sh ROUNDS N
set -u
D=${D:-/tmp/emq-ab3}; rounds=${1:-6}; n=${2:-300000}; out=$D/jobsab.jsonl; : > $out
vk=$(bash /work/shared/servers/valkey.sh)/valkey-server
run() { local side=$1 ex=$2; shift 2
  local port=$((20000 + RANDOM % 20000)) dir; dir=$(mktemp -d)
  "$vk" --port $port --save '' --appendonly no --dir "$dir" --loadmodule $D/emq.$side.so --daemonize no >/dev/null 2>&1 & local pid=$!
  for i in $(seq 50); do "$(dirname $vk)/valkey-cli" -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  $D/emqbench.$side -url redis://127.0.0.1:$port -json -executor $ex -n $n "$@" e2e 2>/dev/null | jq -c --arg side $side --arg ex $ex --arg load $load --arg extra "$*" '{side:$side, ex:$ex, extra:$extra, load:$load, jps:.ops_per_sec, cli:.cpu_s_per_million_ops, srv:.server_cpu_us_per_op, lost:.e2e.lost, dup:.e2e.duplicates}' >> $out
  kill $pid; wait $pid 2>/dev/null; rm -rf "$dir"; }
for r in $(seq $rounds); do
  for w in $(seq 60); do awk '{exit !($1 < 1.5)}' /proc/loadavg && break; sleep 3; done
  echo "round $r: $(uptime)" >&2
  for ex in native script; do
    if [ $((r % 2)) = 1 ]; then run base $ex -jobs; run new $ex -jobs; run base $ex; run new $ex; else run new $ex -jobs; run base $ex -jobs; run new $ex; run base $ex; fi
  done
done
python3 - $out <<'PY'
import json,sys,statistics as st
rows=[json.loads(l) for l in open(sys.argv[1])]
for ex in ['native','script']:
  for extra in ['-jobs','']:
    for side in ['base','new']:
      rs=[r for r in rows if r['ex']==ex and r['extra']==extra and r['side']==side]
      if rs: print(ex, extra or 'plain', side, len(rs), 'jps %.0f'%st.median(r['jps'] for r in rs), 'cli %.2f'%st.median(r['cli'] for r in rs), 'srv %.2f'%st.median(r['srv'] for r in rs), 'lost', sum(r['lost'] or 0 for r in rs), 'dup', sum(r['dup'] or 0 for r in rs), 'loads', ','.join(r['load'] for r in rs))
PY

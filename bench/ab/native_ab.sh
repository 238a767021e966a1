#!/usr/bin/env bash
# Interleaved native e2e, base vs new emqbench (both against one module, emq.base.so), Valkey 8.0.1:
# in /tmp/n5 put emqbench.base, emqbench.new, emq.base.so; each round waits up to 2 min for load < 2.
# usage: native_ab.sh ROUNDS N OUT   (client CPU per job: .cli, jobs per worker call: .jpc)
set -u
rounds=$1; n=$2; out=$3
vk=/root/.cache/echomq-servers/valkey-8.0.1/bin/valkey-server
: > "$out"
run() {
  local side=$1 bin=$2; local port=$((20000 + RANDOM % 20000)) dir; dir=$(mktemp -d)
  "$vk" --port $port --save '' --appendonly no --dir "$dir" --loadmodule /tmp/n5/emq.base.so --daemonize no >/dev/null 2>&1 &
  local pid=$!
  for i in $(seq 50); do "$(dirname $vk)/valkey-cli" -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  "$bin" -url redis://127.0.0.1:$port -json -executor native -n "$n" e2e 2>/dev/null |
    jq -c --arg side "$side" --arg load "$load" '{side:$side, load:$load, jps:.ops_per_sec, cli:.cpu_s_per_million_ops, srv:.server_cpu_us_per_op, lost:.e2e.lost, dup:.e2e.duplicates, jpc:.e2e.jobs_per_call}' >> "$out"
  kill $pid; wait $pid 2>/dev/null; rm -rf "$dir"
}
for r in $(seq "$rounds"); do
  for w in $(seq 40); do awk '{exit !($1 < 2.0)}' /proc/loadavg && break; sleep 3; done
  echo "round $r: $(uptime)" >&2
  if (( r % 2 )); then run base /tmp/n5/emqbench.base; run new /tmp/n5/emqbench.new; else run new /tmp/n5/emqbench.new; run base /tmp/n5/emqbench.base; fi
done

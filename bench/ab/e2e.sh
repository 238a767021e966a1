#!/usr/bin/env bash
# Set up (see BENCHMARKS.md, "Issue 23 fixes: before and after"): in $BENCH_DIR (default /tmp/emq-ab),
# emqbench.base/.new and emq.base.so/.new.so built from the two commits.
# Interleaved e2e rounds: base (67ebe62) vs new (main), Valkey 8.0.1 with each side's module.
# usage: e2e.sh ROUNDS N OUT
set -u
rounds=${1:-6}; n=${2:-300000}; out=${3:-${BENCH_DIR:-/tmp/emq-ab}/e2e.jsonl}
vk=$(bash "$(dirname "$0")/../../../shared/servers/valkey.sh")/valkey-server
: > "$out"
run() { # side bin so executor extra...
  local side=$1 bin=$2 so=$3 ex=$4; shift 4
  local port=$((20000 + RANDOM % 20000)) dir; dir=$(mktemp -d)
  "$vk" --port $port --save '' --appendonly no --dir "$dir" --loadmodule "$so" --daemonize no >/dev/null 2>&1 &
  local pid=$!
  for i in $(seq 50); do "$(dirname $vk)/valkey-cli" -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  "$bin" -url redis://127.0.0.1:$port -json -executor "$ex" -n "$n" "$@" e2e 2>/dev/null |
    jq -c --arg side "$side" --arg ex "$ex" --arg load "$load" --arg extra "$*" \
      '{side:$side, ex:$ex, extra:$extra, load:$load, jps:.ops_per_sec, busy:.e2e.producer_busy, per_claim:.e2e.jobs_per_claim, cli:.cpu_s_per_million_ops, srv:.server_cpu_us_per_op, allocs:.allocs_per_op, lost:.e2e.lost, dup:.e2e.duplicates}' >> "$out"
  kill $pid; wait $pid 2>/dev/null; rm -rf "$dir"
}
for r in $(seq "$rounds"); do
  for w in $(seq 60); do awk '{exit !($1 < 1.5)}' /proc/loadavg && break; sleep 3; done
  echo "round $r: $(uptime)" >&2
  for ex in native script; do
    run base ${BENCH_DIR:-/tmp/emq-ab}/emqbench.base ${BENCH_DIR:-/tmp/emq-ab}/emq.base.so $ex
    run new ${BENCH_DIR:-/tmp/emq-ab}/emqbench.new ${BENCH_DIR:-/tmp/emq-ab}/emq.new.so $ex
  done
  run new ${BENCH_DIR:-/tmp/emq-ab}/emqbench.new ${BENCH_DIR:-/tmp/emq-ab}/emq.new.so native -jobs
  # issue 25: the producer's calls pipelined (2 in flight on its connection), new side only
  # (a base emqbench without -inflight fails the row; jq then writes nothing for it)
  run new ${BENCH_DIR:-/tmp/emq-ab}/emqbench.new ${BENCH_DIR:-/tmp/emq-ab}/emq.new.so native -inflight 2
  run new ${BENCH_DIR:-/tmp/emq-ab}/emqbench.new ${BENCH_DIR:-/tmp/emq-ab}/emq.new.so script -jobs
done

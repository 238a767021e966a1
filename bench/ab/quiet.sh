#!/usr/bin/env bash
# The quiet-machine driver of BENCHMARKS.md "2026-12-02 (second session)" and "(third session)". Expects in $D
# (default /tmp/emq-ab2): emqbench.{base,new}, emq.{base,new}.so, jobs.{base,new}.test, sentinel.new.test
# (go test -c), and gobench.sh set up in /tmp/emq-ab. BASE names the base commit in the headings;
# SKIP lists sections to leave out (e.g. SKIP="3 4").
set -u
D=${D:-/tmp/emq-ab2}; M=$(cd "$(dirname "$0")/../.." && pwd)
VKB=$(bash "$M/../shared/servers/valkey.sh"); VK=$VKB/valkey-server
quiet() { for w in $(seq 100); do awk '{exit !($1 < 1.5)}' /proc/loadavg && break; sleep 3; done; echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
BASE=${BASE:-177d4f5}; SKIP=" ${SKIP:-} "
skip() { [[ "$SKIP" == *" $1 "* ]]; }
if ! skip 1; then
echo "== 1 e2e (base $BASE vs new) $(date -u +%T)"
BENCH_DIR=$D bash $M/bench/ab/e2e.sh 6 300000 $D/e2e.jsonl 2>&1 | grep round
python3 $M/bench/ab/summary.py $D/e2e.jsonl 2>&1 | tail -20
fi
if ! skip 2; then
echo "== 2 lanes/flow vs e2e (scripts; base $BASE and new) $(date -u +%T)"
: > $D/lf.jsonl
port=$((20000 + RANDOM % 20000)); dir=$(mktemp -d)
$VK --port $port --save '' --appendonly no --dir $dir --daemonize no >/dev/null 2>&1 & vpid=$!
for i in $(seq 50); do $VKB/valkey-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
for r in $(seq 6); do
  l=$(quiet)
  for side in base new; do
  for w in "e2e 100000" "lanes 100000" "flow 100000" "e2e 10000" "flow 10000"; do
    set -- $w
    $VKB/valkey-cli -p $port flushall >/dev/null
    $VKB/valkey-cli -p $port script flush >/dev/null
    $D/emqbench.$side -url redis://127.0.0.1:$port -json -executor script -n $2 $1 2>/dev/null | jq -c --arg s $side --arg w "$1" --arg n "$2" --arg l "$l" --arg r $r '{r:$r,side:$s,w:$w,n:$n,load:$l,jps:.ops_per_sec,srv:.server_cpu_us_per_op,cli:.cpu_s_per_million_ops}' >> $D/lf.jsonl
  done
  done
done
kill $vpid; wait $vpid 2>/dev/null; rm -rf $dir
cat $D/lf.jsonl
fi
if ! skip 3; then
echo "== 3 unique vs plain bulk enqueue (jobs BenchmarkEnqueueBulk, base $BASE vs new) $(date -u +%T)"
: > $D/uq.base.txt; : > $D/uq.new.txt
for r in $(seq 6); do quiet; for s in base new; do (cd $M/jobs && ECHOMQ_SERVER=$VK $D/jobs.$s.test -test.run '^$' -test.bench EnqueueBulk -test.benchtime 30000x -test.count 1 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> $D/uq.$s.txt); done; done
~/go/bin/benchstat $D/uq.base.txt $D/uq.new.txt
cat $D/uq.new.txt
fi
if ! skip 4; then
echo "== 4 replica reads, server-bound $(date -u +%T)"
quiet
(cd $M/sentinel && ECHOMQ_SERVER=$VK EMQ_READ_ROUNDS=3 $D/sentinel.new.test -test.run '^$' -test.bench BenchmarkReplicaReadsServerBound -test.benchtime 5s 2>&1 | tail -40)
fi
if ! skip 5; then
echo "== 5 peers typed vs raw $(date -u +%T)"
quiet
(cd $M && ROUNDS=6 CLIENTS="${PEERS:-floor echomq echomq-typed}" WORKLOADS="ping:d100 set:d100 enqueue:d100 enqueue:g64" REF=0 bash bench/run-peers.sh 2>&1 | tail -5)
fi
if ! skip 6; then
echo "== 6 go benchmarks vs 67ebe62 $(date -u +%T)"
(cd $M && BENCH_DIR=/tmp/emq-ab bash bench/ab/gobench.sh 6 2>&1 | tail -80)
fi
echo "== done $(date -u +%T)"

#!/usr/bin/env bash
# Set up: in $BENCH_DIR (default /tmp/emq-ab), <pkg>.base.test/<pkg>.new.test (go test -c) for cmds,
# pipeline and conn, and src.base/src.new linking to the two checkouts.
# Interleaved go benchmarks, base (67ebe62) vs new: test binaries built once, run alternately.
# usage: gobench.sh ROUNDS
set -u
rounds=${1:-6}
export ECHOMQ_SERVER=$(bash "$(dirname "$0")/../../../shared/servers/valkey.sh")/valkey-server
declare -A pat=( [cmds]='^(BenchmarkBuild|BenchmarkDo)$' [pipeline]='^(BenchmarkBatchAdd|BenchmarkPipelineRebuilt|BenchmarkBatchIncr)$' [conn]='^(BenchmarkHooks)$' )
for side in base new; do : > ${BENCH_DIR:-/tmp/emq-ab}/go.$side.txt; done
for r in $(seq "$rounds"); do
  for w in $(seq 60); do awk '{exit !($1 < 1.5)}' /proc/loadavg && break; sleep 3; done
  echo "round $r: $(uptime)" >&2
  for p in cmds pipeline conn; do
    for side in base new; do
      (cd ${BENCH_DIR:-/tmp/emq-ab}/src.$side/$p && ${BENCH_DIR:-/tmp/emq-ab}/$p.$side.test -test.run '^$' -test.bench "${pat[$p]}" -test.benchmem -test.count 1 -test.benchtime 1s 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> ${BENCH_DIR:-/tmp/emq-ab}/go.$side.txt)
    done
  done
done
~/go/bin/benchstat ${BENCH_DIR:-/tmp/emq-ab}/go.base.txt ${BENCH_DIR:-/tmp/emq-ab}/go.new.txt

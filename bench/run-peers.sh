#!/usr/bin/env bash
# run-peers.sh — echomq-go against rueidis, go-redis v9, redigo and the C
# reference (redis-benchmark / valkey-benchmark), side by side in one run.
#
# Builds bench/peers (peerbench, peerreport), starts a private redis-server
# (valkey-server when on PATH) on a free loopback port, and for every
# workload runs the clients interleaved, one process per run:
#   round 1: floor rueidis goredis redigo echomq <ref>, round 2: ..., ROUNDS rounds.
# A client whose adapter is not wired yet (exit 3) is skipped with a note.
# Every run FLUSHALLs first (peerbench does), so the server does the same work.
#
# Output: bench/results/<UTC timestamp>/
#   raw.jsonl   one JSON line per run (peerbench's output)
#   tables.md   per workload: median ops/s, min–max, median CPU s/1M ops, allocs/op, ratios
#   chart.svg   ops/s and client CPU against pipeline depth, PING and SET
#   server.txt  server version and command line; peerbench.log  stderr of every run
#
# Env knobs:
#   ROUNDS=5            interleaved rounds
#   N=<ops>             ops per run for every workload (default: sized per workload, ~1–3 s)
#   WORKLOADS="..."     subset, space separated, each NAME:dDEPTH or NAME:gGOROUTINES
#                       (default: ping:d1 ping:d10 ping:d100 ping:d1000 set:d1 set:d10
#                        set:d100 set:d1000 enqueue:d100 enqueue:d1000 enqueue:g64 ping:g64;
#                        also get:… and pubsub:…, publish to receive, not in the default)
#   CLIENTS="floor rueidis goredis redigo echomq"   Go clients, in rotation order;
#                       floor is the reference loop with no library (pre-encoded
#                       batches on a bare net.Conn, replies counted, not decoded):
#                       tables.md gives every client's CPU per op as a multiple of it;
#                       echomq-typed (not in the default rotation) is echomq-go on
#                       the typed paths the README teaches (cmds builders, kv.Call,
#                       pipeline typed handles), for typed ÷ raw next to echomq:
#                       CLIENTS="floor echomq echomq-typed"
#   REF=1               0 skips the C reference tool
#   SIZE=64             value / payload bytes
#   BASE=<git rev>      also run echomq-go as it was at that revision, as client
#                       "echomq@base" in the same rounds (before/after a change,
#                       side by side in one run); its tree is extracted with
#                       git archive into the results folder
#   QUIET=1.5           before each round, wait (up to QUIET_WAIT=300 s) until the
#                       1-minute load average is under this; the load the round
#                       started at is printed and kept in server.txt. Empty: no wait
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-5}
QUIET=${QUIET:-}
QUIET_WAIT=${QUIET_WAIT:-300}
SIZE=${SIZE:-64}
REF=${REF:-1}
CLIENTS=${CLIENTS:-"floor rueidis goredis redigo echomq"}
WORKLOADS=${WORKLOADS:-"ping:d1 ping:d10 ping:d100 ping:d1000 set:d1 set:d10 set:d100 set:d1000 enqueue:d100 enqueue:d1000 enqueue:g64 ping:g64"}

# default_n sizes a run to ~1–3 s on a 2-core machine shared with the server.
default_n() {
	case "$1" in
	ping:d1 | set:d1 | get:d1) echo 50000 ;;
	ping:d10 | set:d10 | get:d10) echo 300000 ;;
	ping:d100 | ping:d1000) echo 2000000 ;;
	set:d100 | set:d1000 | get:d100 | get:d1000) echo 1500000 ;;
	enqueue:d1) echo 20000 ;;
	enqueue:d10) echo 100000 ;;
	enqueue:g*) echo 100000 ;;
	enqueue:*) echo 200000 ;;
	ping:g* | set:g* | get:g*) echo 150000 ;;
	pubsub:d1) echo 50000 ;;
	pubsub:g*) echo 150000 ;;
	pubsub:*) echo 1000000 ;;
	*) echo 200000 ;;
	esac
}

ts=$(date -u +%Y%m%dT%H%M%SZ)
out=$here/results/$ts
mkdir -p "$out/bin"
echo "results: $out"

echo "building peerbench, peerreport"
(cd "$here/peers" && go build -o "$out/bin/" ./cmd/peerbench ./cmd/peerreport)
pb=$out/bin/peerbench
if [ -n "${BASE:-}" ]; then
	echo "building peerbench at $BASE (client echomq@base)"
	mkdir -p "$out/base" "$out/bin-base"
	git -C "$here/.." archive "$BASE" | tar -x -C "$out/base"
	(cd "$out/base/bench/peers" && go build -o "$out/bin-base/" ./cmd/peerbench)
	CLIENTS="$CLIENTS echomq@base"
fi

server=$(command -v valkey-server || command -v redis-server || true)
tool=$(command -v valkey-benchmark || command -v redis-benchmark || true)
[ -n "$server" ] || { echo "no valkey-server or redis-server on PATH (apt-get install -y redis-server)" >&2; exit 1; }
if [ "$REF" = 1 ] && [ -z "$tool" ]; then
	echo "note: no valkey-benchmark/redis-benchmark on PATH: reference skipped" >&2
	REF=0
fi

# port_free: nothing answers a connect on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Below the kernel's ephemeral range (ip_local_port_range, 32768+ by
# default), where an outgoing connection may hold a port that nothing
# listens on, so that the server's bind does not fail.
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port=
for p in $(shuf -i 10000-$((low - 1)) -n 100); do
	if port_free "$p"; then port=$p; break; fi
done
[ -n "$port" ] || { echo "no free loopback port found" >&2; exit 1; }

spid=
stop_server() {
	if [ -n "$spid" ]; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		spid=
	fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

"$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize no --logfile "$out/server.log" &
spid=$!
for _ in $(seq 100); do
	if ! port_free "$port"; then break; fi
	kill -0 "$spid" 2>/dev/null || { echo "server exited; see $out/server.log" >&2; exit 1; }
	sleep 0.1
done
port_free "$port" && { echo "server did not start listening on $port" >&2; exit 1; }
addr=127.0.0.1:$port
{
	echo "server: $("$server" --version)"
	echo "command: $server --port $port --bind 127.0.0.1 --save '' --appendonly no"
	[ "$REF" = 1 ] && echo "reference: $("$tool" --version 2>&1 || true)"
	echo "go: $(go version)"
	echo "cpus: $(nproc)  kernel: $(uname -r)  load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "rounds: $ROUNDS  clients: $CLIENTS  ref: $REF  size: $SIZE"
} | tee "$out/server.txt"

raw=$out/raw.jsonl
log=$out/peerbench.log
: >"$raw"
failed=0
declare -A skip=()

# one CLIENT SPEC N: one peerbench run, its JSON line appended to raw.jsonl.
one() {
	local client=$1 spec=$2 n=$3 name=${2%%:*} shape=${2#*:} rc=0 line
	local args=(-client "$client" -workload "$name" -n "$n" -size "$SIZE" -addr "$addr")
	case "$shape" in
	d*) args+=(-depth "${shape#d}") ;;
	g*) args+=(-goroutines "${shape#g}") ;;
	*) echo "bad workload spec $spec (want NAME:dDEPTH or NAME:gG)" >&2; exit 2 ;;
	esac
	[ "$client" = ref ] && args=(-client "$(basename "$tool")" -bench "$tool" "${args[@]:2}")
	if [ "$client" = echomq@base ]; then
		args[1]=echomq
		line=$("$out/bin-base/peerbench" "${args[@]}" 2>>"$log") || rc=$?
		line=${line/\"client\":\"echomq\"/\"client\":\"echomq@base\"}
	else
		line=$("$pb" "${args[@]}" 2>>"$log") || rc=$?
	fi
	case $rc in
	0)
		echo "$line" >>"$raw"
		printf '  %-16s %s\n' "$client" "$(summary "$line")"
		;;
	3)
		echo "$line" >>"$raw"
		skip[$client]=1
		echo "  note: $client skipped: adapter not wired yet (bench/peers/cmd/peerbench/adapter_echomq.go)"
		;;
	*)
		[ -n "$line" ] && echo "$line" >>"$raw"
		failed=1
		echo "  FAIL: $client $spec exited $rc: $(tail -n 1 "$log")" >&2
		;;
	esac
}

# quiet waits until the 1-minute load average is under $QUIET (when set),
# at most QUIET_WAIT seconds, and prints the load the round starts at.
quiet() {
	local waited=0
	if [ -n "$QUIET" ]; then
		while ! awk -v q="$QUIET" '{exit !($1 < q)}' /proc/loadavg && [ "$waited" -lt "$QUIET_WAIT" ]; do
			sleep 3
			waited=$((waited + 3))
		done
	fi
	echo "load $(cut -d' ' -f1-3 /proc/loadavg)${QUIET:+ (waited ${waited}s for < $QUIET)}"
}

# summary: a short human line from one JSON record.
summary() {
	local ops cpu
	ops=$(sed -E 's/.*"ops_per_sec":([0-9.e+]+).*/\1/' <<<"$1")
	cpu=$(sed -E 's/.*"cpu_s_per_1m":([0-9.e+-]+).*/\1/' <<<"$1")
	printf '%9.0f ops/s  %6.2f s CPU/1M ops  load %s' "$ops" "$cpu" "$(cut -d' ' -f1 /proc/loadavg)"
}

for spec in $WORKLOADS; do
	n=${N:-$(default_n "$spec")}
	echo "== $spec  n=$n"
	for r in $(seq "$ROUNDS"); do
		echo " round $r/$ROUNDS: $(quiet)" | tee -a "$out/server.txt"
		for c in $CLIENTS; do
			[ -n "${skip[$c]:-}" ] && continue
			one "$c" "$spec" "$n"
		done
		# The C tool has no subscriber: no reference for pubsub.
		[ "$REF" = 1 ] && [ "${spec%%:*}" != pubsub ] && one ref "$spec" "$n"
	done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/server.txt"
stop_server

"$out/bin/peerreport" -in "$raw" -meta "$out/server.txt" -md "$out/tables.md" -svg "$out/chart.svg"
cat "$out/tables.md"
echo
echo "wrote $raw, $out/tables.md, $out/chart.svg"
if [ "$failed" = 1 ]; then
	echo "FAILED: at least one run failed or saw a wrong reply; see $log" >&2
	exit 1
fi

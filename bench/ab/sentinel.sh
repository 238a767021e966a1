#!/usr/bin/env bash
# Target (issue 28): "Through Sentinel, emqbench e2e within noise of a direct connection".
# Starts a primary, 2 replicas and 3 sentinels (private loopback ports, --save '' --appendonly no,
# each stopped by its pid on exit), then runs emqbench e2e against the primary directly
# (-url redis://) and through the sentinels (-url redis+sentinel://…/mymaster), interleaved,
# the order alternating by round, each round after the load average fell below 1.5.
# One JSON line per run goes to OUT; the medians per side and the ratios sentinel/direct are
# printed at the end.
#
# usage: sentinel.sh [ROUNDS (6)] [N jobs per run (300000)] [OUT] [extra emqbench flags…]
# env:   SERVER=/path/to/valkey-server or redis-server (default: Valkey 8 from
#        /work/shared/servers/valkey.sh); EMQBENCH=/path/to/emqbench (default: built from this tree);
#        MAXLOAD=1.5 (the load average a round waits for, up to 3 minutes)
set -u
rounds=${1:-6}; n=${2:-300000}; out=${3:-${BENCH_DIR:-/tmp/emq-ab}/sentinel.jsonl}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/emq-sentinel-ab.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

srv=${SERVER:-$(bash "$root/../shared/servers/valkey.sh")/valkey-server}
dir=$(dirname "$srv")
case $(basename "$srv") in
  valkey-server) cli=$dir/valkey-cli; sent=("$dir/valkey-sentinel") ;;
  *) cli=$dir/redis-cli; [ -x "$cli" ] || cli=$(command -v redis-cli); sent=("$srv" --sentinel) ;;
esac
[ -x "${sent[0]}" ] || sent=("$srv" --sentinel)
bin=${EMQBENCH:-}
if [ -z "$bin" ]; then
  bin=$work/emqbench
  (cd "$root" && go build -o "$bin" ./cmd/emqbench) || exit 2
fi
mkdir -p "$(dirname "$out")"; : > "$out"

used=" "
freeport() { # sets port: a loopback port nothing listens on, not handed out before
  while :; do
    port=$((20000 + RANDOM % 20000))
    case $used in *" $port "*) continue ;; esac
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && continue
    used="$used$port "; return
  done
}
waitfor() { # what cmd…: poll every 0.1 s for up to 60 s
  local what=$1; shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  echo "sentinel.sh: $what: not within 60 s" >&2; [ -n "${DEBUG:-}" ] && tail -n 5 "$work"/*/log >&2; exit 2
}
node() { # port [args…]
  local port=$1 d; shift; d=$work/node-$port; mkdir -p "$d"
  "$srv" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$d" --daemonize no \
    --protected-mode no --repl-diskless-sync-delay 0 "$@" >"$d/log" 2>&1 &
  pids+=($!)
  waitfor "node $port up" eval "\"\$cli\" -p $port ping >/dev/null 2>&1"
}
freeport; primary=$port; node "$primary"
for _ in 1 2; do freeport; node "$port" --replicaof 127.0.0.1 "$primary"; done
insync() { [ "$("$cli" -p "$primary" info replication | grep -c 'state=online')" = 2 ]; }
waitfor "replicas in sync" insync
sports=()
for _ in 1 2 3; do
  freeport; p=$port; d=$work/sentinel-$p; mkdir -p "$d"
  printf '%s\n' "port $p" "bind 127.0.0.1" "daemonize no" "protected-mode no" "dir $d" \
    "sentinel monitor mymaster 127.0.0.1 $primary 2" "sentinel down-after-milliseconds mymaster 5000" \
    "sentinel failover-timeout mymaster 60000" > "$d/sentinel.conf"
  "${sent[0]}" "$d/sentinel.conf" "${sent[@]:1}" >"$d/log" 2>&1 &
  pids+=($!); sports+=("$p")
done
ready() {
  local p f
  for p in "${sports[@]}"; do
    f=$("$cli" -p "$p" sentinel master mymaster 2>/dev/null | paste - - | tr '\t' '=')
    grep -qx "num-slaves=2" <<<"$f" && grep -qx "num-other-sentinels=2" <<<"$f" || return 1
  done
}
waitfor "sentinels know each other and the replicas" ready
direct=redis://127.0.0.1:$primary
viasent=redis+sentinel://$(printf '127.0.0.1:%s,' "${sports[@]}" | sed 's/,$//')/mymaster
echo "$("$srv" --version | cut -d' ' -f1-3): primary $primary, sentinels ${sports[*]}; $rounds rounds of $n jobs -> $out" >&2

run() { # side url round
  local side=$1 url=$2 r=$3 load; shift 3; load=$(cut -d' ' -f1 /proc/loadavg)
  "$bin" -url "$url" -json -n "$n" "$@" e2e 2>"$work/stderr" |
    jq -c --arg side "$side" --argjson round "$r" --arg load "$load" \
      '{side:$side, round:$round, load:$load, jps:.ops_per_sec, cli:.cpu_s_per_million_ops, srv:.server_cpu_us_per_op, allocs:.allocs_per_op, p50:.e2e.enqueue_to_done.p50_us, lost:.e2e.lost, dup:.e2e.duplicates}' >> "$out" ||
    echo "sentinel.sh: $side round $r failed: $(cat "$work/stderr")" >&2
}
for r in $(seq "$rounds"); do
  for _ in $(seq 60); do awk -v m="${MAXLOAD:-1.5}" '{exit !($1 < m)}' /proc/loadavg && break; sleep 3; done
  echo "round $r: $(uptime)" >&2
  if [ $((r % 2)) = 1 ]; then
    run direct "$direct" "$r" "$@"; run sentinel "$viasent" "$r" "$@"
  else
    run sentinel "$viasent" "$r" "$@"; run direct "$direct" "$r" "$@"
  fi
done
jq -rs '
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
  (group_by(.side) | map({key: .[0].side, value: {runs: length,
     jps: (map(.jps) | median), cli: (map(.cli) | median), srv: (map(.srv) | median),
     allocs: (map(.allocs) | median), p50: (map(.p50) | median),
     lost: (map(.lost) | add), dup: (map(.dup) | add)}}) | from_entries) as $m
  | "side      runs  jobs/s(median)  client_cpu_s/M  server_cpu_us/op  allocs/op  p50_us  lost  dup",
    (["direct", "sentinel"][] as $s | $m[$s] // empty | "\($s | . + "         " | .[0:9]) \(.runs)     \(.jps | r2)    \(.cli | r2)    \(.srv | r2)    \(.allocs | r2)    \(.p50 | r2)    \(.lost)    \(.dup)"),
    (if $m.direct and $m.sentinel then
       "ratio sentinel/direct: jobs/s \($m.sentinel.jps / $m.direct.jps | r2), client CPU \($m.sentinel.cli / $m.direct.cli | r2), server CPU \($m.sentinel.srv / $m.direct.srv | r2)"
     else "ratio: a side has no run" end)' "$out"

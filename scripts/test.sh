#!/usr/bin/env bash
# The test command of echomq-go: go vet, then the race-enabled tests against
# a real server (the root module's, then each contrib/* module's, bench/peers'
# (the go-redis versions of the first-hour programs) and each examples/*
# module's (examples/jobs-asynq, the asynq job program): ./... does not enter
# another module) on Redis and on Valkey in turn, then every fuzz
# target for a short while, the allocation budgets and the emqbench
# conformance gate (those three once: they do not depend on the server).
#
#   [SERVER=both|redis|valkey] bash scripts/test.sh [extra go test args]
#
# Environment:
#   SERVER     which servers the suite runs on: both (the default), redis or
#              valkey. Redis is redis-server from PATH or /usr/bin, /usr/sbin
#              (installed with apt-get when missing); Valkey is valkey-server
#              8.0.1 built once by ../shared/servers/valkey.sh (beside the
#              repository; VALKEY_SH names another copy), else valkey-server
#              from PATH. Each run forces its binary with ECHOMQ_SERVER
#              (internal/serverbin), and the Redis run has no valkey-server
#              on PATH.
#   FUZZTIME   how long each fuzz target runs (default 15s)
#   SKIP_FUZZ  set to 1 to skip the fuzz phase
#   SKIP_GATE  set to 1 to skip the emqbench gate (PROTOCOL.md's 8 checks)
#   SKIP_ALLOC set to 1 to skip the allocation budgets' run without -race
#   CI         passed through unchanged; CI=true makes a missing server fail
#              the tests instead of skipping them, and installs chromium
#              (apt-get) for contrib/webtest's browser tests when missing
#
# Every step runs even after an earlier one failed. Each server's run ends
# with a line of its own ("redis 7.0.15: N passed, N failed, N skipped"),
# and the script with "summary: N passed, N failed" over everything (tests
# of both servers, allocation budgets, fuzz targets and the gate passed;
# those failed, and failed steps); it exits non-zero when anything failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
if [[ -n "${CI+set}" ]]; then export CI; fi
in_ci() { [[ ${CI:-} == true || ${CI:-} == 1 ]]; }

SERVER=${SERVER:-both}
case $SERVER in
both) servers=(redis valkey) ;;
redis | valkey) servers=("$SERVER") ;;
*)
	echo "test.sh: SERVER=$SERVER: want both, redis or valkey" >&2
	exit 2
	;;
esac

failed_steps=()
fail() { failed_steps+=("$1"); echo "test.sh: FAILED: $1" >&2; }
step() { echo; echo "==> $*"; }
started=$SECONDS

# --- the servers ------------------------------------------------------------
# kind_of prints "redis" or "valkey" for a binary, from its --version
# ("Redis server v=…" / "Valkey server v=…"): Valkey installs redis-server
# links to itself, so the name alone does not tell.
kind_of() {
	case $("$1" --version 2>/dev/null) in
	Valkey*) echo valkey ;;
	Redis*) echo redis ;;
	*) echo unknown ;;
	esac
}

# find_redis prints the path of a redis-server that is Redis.
find_redis() {
	local d
	local IFS=:
	for d in $PATH /usr/bin /usr/sbin /usr/local/bin; do
		if [[ -x $d/redis-server && $(kind_of "$d/redis-server") == redis ]]; then
			echo "$d/redis-server"
			return 0
		fi
	done
	return 1
}

# apt_install installs Debian packages, as root or through sudo -n.
apt_install() {
	step "installing $* (none found)"
	local sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		if command -v sudo >/dev/null 2>&1; then sudo=(sudo -n); else
			echo "test.sh: not root and no sudo: cannot install $*" >&2
			return 1
		fi
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

install_redis() { apt_install redis-server; }

# The browser tests of contrib/webtest drive Debian's chromium (headless,
# through chromedp): under CI=true it is installed when missing, and the
# tests fail rather than skip without it; elsewhere they skip.
if [[ -d contrib/webtest ]] && in_ci && ! command -v chromium >/dev/null 2>&1; then
	apt_install chromium || echo "test.sh: apt-get install chromium failed" >&2
fi

# find_valkey prints the path of valkey-server: the one valkey.sh builds
# (once, cached), else one on PATH.
find_valkey() {
	local sh=${VALKEY_SH:-$repo/../shared/servers/valkey.sh} dir
	if [[ -f $sh ]]; then
		step "valkey-server from $sh (built once, then cached)" >&2
		if dir=$(bash "$sh") && [[ -x $dir/valkey-server ]]; then
			echo "$dir/valkey-server"
			return 0
		fi
		echo "test.sh: $sh did not give a valkey-server" >&2
	fi
	if dir=$(command -v valkey-server) && [[ $(kind_of "$dir") == valkey ]]; then
		echo "$dir"
		return 0
	fi
	return 1
}

# path_without_valkey prints PATH less every directory holding
# valkey-server (valkey.sh's cache, a build of one's own), but for one that
# also holds the toolchain (/usr/bin with Debian's valkey package): the
# Redis run needs go and cc, and ECHOMQ_SERVER forces its binary anyway.
path_without_valkey() {
	local d out=()
	local IFS=:
	for d in $PATH; do
		if [[ -x $d/valkey-server && ! -x $d/go && ! -x $d/cc && ! -x $d/gcc ]]; then
			continue
		fi
		out+=("$d")
	done
	echo "${out[*]}"
}

# --- vet (once) ---------------------------------------------------------------
step "go vet ./..."
go vet ./... || fail "go vet"
for mod in contrib/*/ bench/peers/ examples/*/; do
	mod=${mod%/}
	[[ -f $mod/go.mod ]] || continue
	step "$mod: go vet ./..."
	(cd "$mod" && go vet ./...) || fail "go vet $mod"
done

# --- tests, per server ------------------------------------------------------------
# count_log prints "passed failed skipped" for a go test -v log. A package
# that failed without a failing test (build error, TestMain exit) counts as
# one failure.
count_log() {
	local log=$1 status=$2 passed failed skipped
	passed=$(grep -cE '^ *--- PASS' "$log" || true)
	failed=$(grep -cE '^ *--- FAIL' "$log" || true)
	skipped=$(grep -cE '^ *--- SKIP' "$log" || true)
	failed=$((failed + $(awk '
		/^ *--- FAIL/ { seen = 1 }
		/^(ok|FAIL|\?) *\t/ { if ($1 == "FAIL" && !seen) n++; seen = 0 }
		END { print n + 0 }' "$log")))
	if [[ $status -ne 0 && $failed -eq 0 ]]; then failed=1; fi
	echo "$passed $failed $skipped"
}

total_passed=0
total_failed=0
server_lines=()
last_bin="" # the server the once-only phases use: Valkey when it ran
last_path=$PATH
logs=()
server_logs=() # "label=path" of each server's test log, for the failures list
trap 'rm -f "${logs[@]}"' EXIT

for kind in "${servers[@]}"; do
	bin=""
	case $kind in
	redis)
		bin=$(find_redis) || { install_redis || echo "test.sh: apt-get install redis-server failed" >&2; bin=$(find_redis) || bin=""; }
		run_path=$(path_without_valkey)
		;;
	valkey)
		bin=$(find_valkey) || bin=""
		[[ -z $bin ]] || run_path="$(dirname "$bin"):$PATH"
		;;
	esac
	if [[ -z $bin ]]; then
		if in_ci || [[ $SERVER != both ]]; then
			fail "no $kind server"
			total_failed=$((total_failed + 1))
			server_lines+=("$kind: not found: 0 passed, 1 failed")
		else
			echo "test.sh: no $kind server: its run is skipped (CI=true fails it)" >&2
			server_lines+=("$kind: not found: skipped")
		fi
		continue
	fi
	version=$("$bin" --version | grep -oE 'v=[^ ]+' | cut -c3-)
	label="$kind $version"
	step "$label ($bin): go test -race -count=1 ./... $*"
	t0=$SECONDS
	log=$(mktemp)
	logs+=("$log")
	server_logs+=("$label=$log")
	set +e
	# -v gives one line per test to count; the RUN/PAUSE/CONT lines are noise.
	ECHOMQ_SERVER=$bin PATH=$run_path go test -race -count=1 -v ./... "$@" 2>&1 | tee "$log" |
		grep --line-buffered -vE '^=== (RUN|PAUSE|CONT|NAME)'
	status=${PIPESTATUS[0]}
	set -e
	[[ $status -eq 0 ]] || fail "go test ($label)"
	# The contrib modules, bench/peers and examples/jobs-asynq have a
	# go.mod of their own (so that the core's stays small): test each from
	# its directory. Their
	# test lines join the log, so the counts include them.
	for mod in contrib/*/ bench/peers/ examples/*/; do
		mod=${mod%/}
		[[ -f $mod/go.mod ]] || continue
		step "$label: $mod: go test -race -count=1 ./... $*"
		set +e
		(cd "$mod" && ECHOMQ_SERVER=$bin PATH=$run_path go test -race -count=1 -v ./... "$@") 2>&1 |
			tee -a "$log" | grep --line-buffered -vE '^=== (RUN|PAUSE|CONT|NAME)'
		mod_status=${PIPESTATUS[0]}
		set -e
		if [[ $mod_status -ne 0 ]]; then
			fail "go test $mod ($label)"
			status=$mod_status
		fi
	done
	read -r passed failed skipped < <(count_log "$log" "$status")
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
	server_lines+=("$label: $passed passed, $failed failed, $skipped skipped ($((SECONDS - t0)) s)")
	echo "${server_lines[-1]}"
	last_bin=$bin
	last_path=$run_path
done

# --- fuzz (once: no server) ------------------------------------------------------
fuzz_passed=0
fuzz_failed=0
if [[ ${SKIP_FUZZ:-0} == 1 ]]; then
	step "fuzz phase skipped (SKIP_FUZZ=1)"
else
	t0=$SECONDS
	mapfile -t fuzz_dirs < <(grep -rlE --include='*_test.go' '^func Fuzz' . |
		xargs -r -n1 dirname | sort -u)
	for dir in "${fuzz_dirs[@]}"; do
		pkg="./${dir#./}"
		if ! targets=$(ECHOMQ_SERVER=$last_bin PATH=$last_path go test -list '^Fuzz' "$pkg" 2>&1); then
			echo "$targets"
			fail "go test -list $pkg"
			fuzz_failed=$((fuzz_failed + 1))
			continue
		fi
		for name in $(grep -E '^Fuzz' <<<"$targets"); do
			step "fuzz $pkg $name for ${FUZZTIME:-15s}"
			if ECHOMQ_SERVER=$last_bin PATH=$last_path go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-15s}" "$pkg"; then
				fuzz_passed=$((fuzz_passed + 1))
			else
				fail "fuzz $pkg $name"
				fuzz_failed=$((fuzz_failed + 1))
			fi
		done
	done
	echo "(fuzz phase: $((SECONDS - t0)) s)"
fi

# --- allocation budgets (once) -----------------------------------------------------
# The race detector makes sync.Pool drop items, so the allocation budgets
# skip under -race; run them once more without it. What a call allocates
# is the client's, whatever the server: one server (Valkey when it ran).
alloc_passed=0
alloc_failed=0
if [[ ${SKIP_ALLOC:-0} == 1 ]]; then
	step "allocation budgets skipped (SKIP_ALLOC=1)"
else
	step "allocation budgets: go test -count=1 -run Alloc ./... (no -race)"
	t0=$SECONDS
	alog=$(mktemp)
	logs+=("$alog")
	set +e
	ECHOMQ_SERVER=$last_bin PATH=$last_path go test -count=1 -v -run 'Alloc' ./... 2>&1 | tee "$alog" |
		grep -E '^(--- |ok|FAIL|panic)'
	alloc_status=${PIPESTATUS[0]}
	set -e
	alloc_passed=$(grep -cE '^ *--- PASS' "$alog" || true)
	alloc_failed=$(grep -cE '^ *--- FAIL' "$alog" || true)
	if [[ $alloc_status -ne 0 ]]; then
		fail "allocation budgets"
		if [[ $alloc_failed -eq 0 ]]; then alloc_failed=1; fi
	fi
	echo "(allocation budgets: $((SECONDS - t0)) s)"
fi

# --- the conformance gate (once) -----------------------------------------------------
# emqbench starts its own private node (Valkey when it ran) and runs
# PROTOCOL.md's eight checks.
gate_passed=0
gate_failed=0
if [[ ${SKIP_GATE:-0} == 1 ]]; then
	step "gate skipped (SKIP_GATE=1)"
else
	step "go run ./cmd/emqbench gate"
	t0=$SECONDS
	if ECHOMQ_SERVER=$last_bin PATH=$last_path go run ./cmd/emqbench gate; then
		gate_passed=1
	else
		fail "emqbench gate"
		gate_failed=1
	fi
	echo "(gate: $((SECONDS - t0)) s)"
fi

# --- summary ---------------------------------------------------------------
echo
for line in "${server_lines[@]}"; do echo "$line"; done
echo "once: allocation budgets $alloc_passed passed, $alloc_failed failed; fuzz targets $fuzz_passed passed, $fuzz_failed failed; gate $gate_passed passed, $gate_failed failed"
other=0
for s in "${failed_steps[@]}"; do
	[[ $s == "go vet"* ]] && other=$((other + 1))
done
if [[ ${#failed_steps[@]} -gt 0 ]]; then
	echo "failed steps: ${failed_steps[*]}"
fi
# The failures again, at the end where a reader of the tail finds them: each
# failed test's line and the first 6 and last 8 lines it printed (100
# lines in all at most), and each
# package that failed with no test line (a panic, a timeout, a build error).
for entry in "${server_logs[@]}"; do
	label=${entry%%=*}
	log=${entry#*=}
	grep -qE '^ *--- FAIL|^FAIL[[:space:]]|^panic:' "$log" || continue
	echo "failures ($label): $( (grep -oE '^ *--- FAIL: [^ ]+' "$log" || true) | awk '{ print $3 }' | awk 'NR <= 40' | tr '\n' ' ')"
	awk '
		function out(line) { if (++printed > 100) exit; print "  " line }
		match($0, /^=== (RUN|CONT|NAME|PAUSE) +/) { cur = substr($0, RLENGTH + 1); next }
		/^ *--- (PASS|SKIP)/ { next }
		/^ *--- FAIL: / {
			name = $0; sub(/^ *--- FAIL: /, "", name); sub(/ .*/, "", name)
			out($0)
			k = cnt[name]
			for (i = 0; i < k; i++)
				if (i < 6 || i >= k - 8) out(buf[name, i])
				else if (i == 6) out("  [" k - 14 " lines]")
			next
		}
		/^panic:/ || /^FAIL[[:space:]]+[^[:space:]]+[[:space:]]/ { out($0); next }
		/^(ok|\?|PASS|FAIL)/ { next }
		cur != "" { buf[cur, cnt[cur]++] = $0 }
	' "$log" || true
done
echo "time: $((SECONDS - started)) s"
echo "summary: $((total_passed + alloc_passed + fuzz_passed + gate_passed)) passed, $((total_failed + alloc_failed + fuzz_failed + gate_failed + other)) failed"
[[ ${#failed_steps[@]} -eq 0 ]]

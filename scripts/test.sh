#!/usr/bin/env bash
# The test command of echomq-go: installs a server when none is present, then
# go vet, the race-enabled tests against a real server (the root module's,
# then each contrib/* module's: ./... does not enter another module), every
# fuzz target for a short while, and the emqbench conformance gate.
#
#   bash scripts/test.sh [extra go test args]
#
# Environment:
#   FUZZTIME   how long each fuzz target runs (default 15s)
#   SKIP_FUZZ  set to 1 to skip the fuzz phase
#   SKIP_GATE  set to 1 to skip the emqbench gate (PROTOCOL.md's 8 checks)
#   CI         passed through unchanged; CI=true makes a missing server fail
#              the tests instead of skipping them
#
# Every step runs even after an earlier one failed; the script exits non-zero
# when any failed, after a closing "summary: N passed, N failed" line (tests
# and fuzz targets passed; tests, fuzz targets and steps failed).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ -n "${CI+set}" ]]; then export CI; fi

failed_steps=()
fail() { failed_steps+=("$1"); echo "test.sh: FAILED: $1" >&2; }
step() { echo; echo "==> $*"; }

# --- a server to test against ---------------------------------------------
have_server() {
	command -v valkey-server >/dev/null 2>&1 || command -v redis-server >/dev/null 2>&1 ||
		[[ -x /usr/bin/redis-server || -x /usr/sbin/redis-server ]]
}
if ! have_server; then
	step "installing redis-server (no valkey-server/redis-server found)"
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		if command -v sudo >/dev/null 2>&1; then sudo=(sudo -n); else sudo=(false); fi
	fi
	if [[ ${sudo[0]:-} == false ]]; then
		echo "test.sh: not root and no sudo: cannot install redis-server" >&2
	elif ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }; then
		echo "test.sh: apt-get install redis-server failed" >&2
	fi
	have_server || echo "test.sh: still no server: integration tests will skip (or fail under CI=true)" >&2
fi
for bin in valkey-server redis-server; do
	if command -v "$bin" >/dev/null 2>&1; then
		echo "server: $("$bin" --version)"
		break
	fi
done

# --- vet -------------------------------------------------------------------
step "go vet ./..."
go vet ./... || fail "go vet"

# --- tests -----------------------------------------------------------------
step "go test -race -count=1 ./... $*"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
# -v gives one line per test to count; the RUN/PAUSE/CONT lines are noise.
go test -race -count=1 -v ./... "$@" 2>&1 | tee "$log" |
	grep --line-buffered -vE '^=== (RUN|PAUSE|CONT|NAME)'
test_status=${PIPESTATUS[0]}
set -e
if [[ $test_status -ne 0 ]]; then fail "go test"; fi

# The contrib modules have a go.mod of their own (so that the core's stays
# small): vet and test each from its directory. Their test lines join the
# log, so the counts below include them.
for mod in contrib/*/; do
	mod=${mod%/}
	[[ -f $mod/go.mod ]] || continue
	step "$mod: go vet ./... && go test -race -count=1 ./... $*"
	(cd "$mod" && go vet ./...) || fail "go vet $mod"
	set +e
	(cd "$mod" && go test -race -count=1 -v ./... "$@") 2>&1 | tee -a "$log" |
		grep --line-buffered -vE '^=== (RUN|PAUSE|CONT|NAME)'
	mod_status=${PIPESTATUS[0]}
	set -e
	if [[ $mod_status -ne 0 ]]; then
		fail "go test $mod"
		test_status=$mod_status
	fi
done
count() { grep -cE "$1" "$log" || true; }
passed=$(count '^ *--- PASS')
failed=$(count '^ *--- FAIL')
skipped=$(count '^ *--- SKIP')
# A package that failed without a failing test (build error, TestMain exit)
# counts as one failure.
failed=$((failed + $(awk '
	/^ *--- FAIL/ { seen = 1 }
	/^(ok|FAIL|\?) *\t/ { if ($1 == "FAIL" && !seen) n++; seen = 0 }
	END { print n + 0 }' "$log")))
if [[ $test_status -ne 0 && $failed -eq 0 ]]; then failed=1; fi

# --- fuzz ------------------------------------------------------------------
fuzz_passed=0
fuzz_failed=0
if [[ ${SKIP_FUZZ:-0} == 1 ]]; then
	step "fuzz phase skipped (SKIP_FUZZ=1)"
else
	mapfile -t fuzz_dirs < <(grep -rlE --include='*_test.go' '^func Fuzz' . |
		xargs -r -n1 dirname | sort -u)
	for dir in "${fuzz_dirs[@]}"; do
		pkg="./${dir#./}"
		if ! targets=$(go test -list '^Fuzz' "$pkg" 2>&1); then
			echo "$targets"
			fail "go test -list $pkg"
			fuzz_failed=$((fuzz_failed + 1))
			continue
		fi
		for name in $(grep -E '^Fuzz' <<<"$targets"); do
			step "fuzz $pkg $name for ${FUZZTIME:-15s}"
			if go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-15s}" "$pkg"; then
				fuzz_passed=$((fuzz_passed + 1))
			else
				fail "fuzz $pkg $name"
				fuzz_failed=$((fuzz_failed + 1))
			fi
		done
	done
fi

# --- allocation budgets ----------------------------------------------------------
# The race detector makes sync.Pool drop items, so the allocation budgets
# skip under -race; run them once more without it.
alloc_passed=0
alloc_failed=0
step "allocation budgets: go test -count=1 -run Alloc ./... (no -race)"
alog=$(mktemp)
set +e
go test -count=1 -v -run 'Alloc' ./... 2>&1 | tee "$alog" | grep -E '^(--- |ok|FAIL|panic)'
alloc_status=${PIPESTATUS[0]}
set -e
alloc_passed=$(grep -cE '^ *--- PASS' "$alog" || true)
alloc_failed=$(grep -cE '^ *--- FAIL' "$alog" || true)
rm -f "$alog"
if [[ $alloc_status -ne 0 ]]; then
	fail "allocation budgets"
	if [[ $alloc_failed -eq 0 ]]; then alloc_failed=1; fi
fi

# --- the conformance gate -----------------------------------------------------
# emqbench starts its own private node and runs PROTOCOL.md's eight checks.
gate_passed=0
gate_failed=0
if [[ ${SKIP_GATE:-0} == 1 ]]; then
	step "gate skipped (SKIP_GATE=1)"
else
	step "go run ./cmd/emqbench gate"
	if go run ./cmd/emqbench gate; then
		gate_passed=1
	else
		fail "emqbench gate"
		gate_failed=1
	fi
fi

# --- summary ---------------------------------------------------------------
echo
echo "tests: $passed passed, $failed failed, $skipped skipped; fuzz targets: $fuzz_passed passed, $fuzz_failed failed"
other=0
for s in "${failed_steps[@]}"; do
	[[ $s == "go vet"* ]] && other=$((other + 1))
done
if [[ ${#failed_steps[@]} -gt 0 ]]; then
	echo "failed steps: ${failed_steps[*]}"
fi
echo "summary: $((passed + alloc_passed + fuzz_passed + gate_passed)) passed, $((failed + alloc_failed + fuzz_failed + gate_failed + other)) failed, $skipped skipped"
[[ ${#failed_steps[@]} -eq 0 ]]

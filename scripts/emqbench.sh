#!/usr/bin/env bash
# emqbench in one command: installs redis-server when no server is on PATH,
# builds cmd/emqbench and runs it against a private node that emqbench starts
# on a free loopback port and stops again when it exits.
#
#   bash scripts/emqbench.sh                      # the gate, then enqueue at depth 100
#   bash scripts/emqbench.sh [flags] <workload>   # anything else: passed to emqbench
#
# Installing needs root or passwordless sudo (apt-get install -y redis-server);
# with -url emqbench targets an existing node and starts none.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

have_server() {
	command -v valkey-server >/dev/null 2>&1 || command -v redis-server >/dev/null 2>&1 ||
		[[ -x /usr/bin/redis-server || -x /usr/sbin/redis-server ]]
}
if ! have_server; then
	echo "emqbench.sh: no valkey-server or redis-server: installing redis-server" >&2
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		if command -v sudo >/dev/null 2>&1; then sudo=(sudo -n); else
			echo "emqbench.sh: not root and no sudo: install redis-server or valkey-server, or give -url" >&2
			exit 2
		fi
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi

bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
go build -o "$bin_dir/emqbench" ./cmd/emqbench

if [[ $# -eq 0 ]]; then
	"$bin_dir/emqbench" gate
	echo
	"$bin_dir/emqbench" -depth 100 -n 200000 enqueue
else
	"$bin_dir/emqbench" "$@"
fi

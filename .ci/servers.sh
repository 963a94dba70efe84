#!/usr/bin/env bash
# AWS-protocol test servers (moto) for Tributary's integration tests.
#
#   .ci/servers.sh install          create/refresh .tools/venv from .ci/requirements-moto.txt
#   .ci/servers.sh run -- CMD...    start moto on a free loopback port, run CMD, stop moto
#
# `install` also installs the pinned DuckDB (scripts/repartition-bench/install-duckdb.sh).
# `run` exports TRIBUTARY_MOTO_URL, TRIBUTARY_DUCKDB_PYTHON and
# TRIBUTARY_REQUIRE_INTEGRATION=1 for CMD and exits with CMD's status.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
VENV="$TOOLS/venv"
REQS="$ROOT/.ci/requirements-moto.txt"
STAMP="$VENV/.requirements.sha256"
LOG="$TOOLS/moto.log"
PYTHON="${PYTHON:-python3}"
STARTUP_TIMEOUT="${MOTO_STARTUP_TIMEOUT:-30}"

die() { echo "servers.sh: $*" >&2; exit 1; }

reqs_hash() { sha256sum "$REQS" | cut -d' ' -f1; }

cmd_install() {
	[[ -f "$REQS" ]] || die "missing $REQS"
	mkdir -p "$TOOLS"
	# Serialise concurrent installs (several checkouts/jobs may share .tools).
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$TOOLS/install.lock"
		flock 9
	fi
	local want
	want="$(reqs_hash)"
	if [[ -x "$VENV/bin/moto_server" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
		echo "servers.sh: $VENV is up to date"
		return 0
	fi
	echo "servers.sh: installing moto into $VENV"
	rm -rf "$VENV"
	"$PYTHON" -m venv "$VENV" || die "could not create venv with $PYTHON"
	"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
		--no-input -r "$REQS" || die "pip install -r $REQS failed"
	[[ -x "$VENV/bin/moto_server" ]] || die "moto_server missing after install"
	echo "$want" >"$STAMP"
	echo "servers.sh: installed $("$VENV/bin/python" -m pip show moto 2>/dev/null | sed -n 's/^Version: /moto /p')"
}

# The pinned DuckDB (.ci/requirements-bench.txt) the archive's tests read
# the compacted archive with, in .tools/bench-venv.
DUCKDB_PYTHON="$TOOLS/bench-venv/bin/python"
install_duckdb() { bash "$ROOT/scripts/repartition-bench/install-duckdb.sh"; }

free_port() {
	"$VENV/bin/python" - <<'EOF'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

# http_ok URL: true once anything answers HTTP at URL (any status code).
http_ok() {
	"$VENV/bin/python" - "$1" >/dev/null 2>&1 <<'EOF'
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except urllib.error.HTTPError:
    pass
EOF
}

MOTO_PID=""
stop_server() {
	if [[ -n "$MOTO_PID" ]] && kill -0 "$MOTO_PID" 2>/dev/null; then
		kill "$MOTO_PID" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$MOTO_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$MOTO_PID" 2>/dev/null || true
		wait "$MOTO_PID" 2>/dev/null || true
	fi
	MOTO_PID=""
}

cmd_run() {
	[[ "${1:-}" == "--" ]] && shift
	[[ $# -gt 0 ]] || die "usage: servers.sh run -- CMD..."
	[[ -x "$VENV/bin/moto_server" ]] || die "moto not installed; run: .ci/servers.sh install"

	mkdir -p "$TOOLS"
	local port url
	port="$(free_port)"
	url="http://127.0.0.1:$port"

	trap stop_server EXIT
	trap 'stop_server; exit 130' INT
	trap 'stop_server; exit 143' TERM

	"$VENV/bin/python" "$ROOT/.ci/moto_server.py" -H 127.0.0.1 -p "$port" >"$LOG" 2>&1 &
	MOTO_PID=$!

	local deadline=$((SECONDS + STARTUP_TIMEOUT))
	until http_ok "$url/"; do
		if ! kill -0 "$MOTO_PID" 2>/dev/null; then
			echo "servers.sh: moto_server exited during startup; last log lines:" >&2
			tail -n 40 "$LOG" >&2 || true
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			echo "servers.sh: moto_server did not answer on $url within ${STARTUP_TIMEOUT}s; last log lines:" >&2
			tail -n 40 "$LOG" >&2 || true
			exit 1
		fi
		sleep 0.2
	done
	echo "servers.sh: moto_server up at $url (pid $MOTO_PID, log $LOG)"

	export TRIBUTARY_MOTO_URL="$url"
	[[ -x "$DUCKDB_PYTHON" ]] && export TRIBUTARY_DUCKDB_PYTHON="$DUCKDB_PYTHON"
	export TRIBUTARY_REQUIRE_INTEGRATION=1
	local status=0
	"$@" || status=$?
	exit "$status"
}

case "${1:-}" in
install) shift; cmd_install "$@"; install_duckdb ;;
run) shift; cmd_run "$@" ;;
*) die "usage: $0 {install | run -- CMD...}" ;;
esac

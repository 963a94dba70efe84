#!/usr/bin/env bash
# Install the pinned DuckDB (.ci/requirements-bench.txt) into .tools/bench-venv
# for the repartition benchmark. Idempotent: does nothing when the venv
# already matches the requirements file.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.tools/bench-venv"
REQS="$ROOT/.ci/requirements-bench.txt"
STAMP="$VENV/.requirements.sha256"
PYTHON="${PYTHON:-python3}"

want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
	echo "install-duckdb: $VENV is up to date"
	exit 0
fi
echo "install-duckdb: installing $(grep -v '^#' "$REQS" | xargs) into $VENV"
rm -rf "$VENV"
mkdir -p "$ROOT/.tools"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$REQS"
"$VENV/bin/python" -c 'import duckdb; print("install-duckdb: duckdb", duckdb.__version__)'
echo "$want" >"$STAMP"

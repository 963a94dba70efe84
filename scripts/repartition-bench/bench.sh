#!/usr/bin/env bash
# Repartition benchmark: tributary vs DuckDB vs the machine's limit, in one
# run, on a generated ~2 GB (uncompressed) export of nine data files. The Go
# harness it builds and drives is scripts/repartition-bench.
#
#   scripts/repartition-bench/bench.sh [BYTES [FILES]]
#
# Installs DuckDB first if it can (.ci/requirements-bench.txt into
# .tools/bench-venv); without it the DuckDB row says it was skipped.
# The generated export is kept in .tools/bench-export-<BYTES>-<FILES> for
# reruns. Figures: docs/exports.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
BYTES="${1:-2e9}"
FILES="${2:-9}"
BIN="$ROOT/.tools/bench-bin"
DATA="$ROOT/.tools/bench-export-$BYTES-$FILES"
mkdir -p "$BIN"

bash "$HERE/install-duckdb.sh" || echo "bench: DuckDB could not be installed; its row will say skipped" >&2
go build -o "$BIN/bench" ./scripts/repartition-bench
go build -o "$BIN/tributary" ./scripts/tributary
if [[ ! -f "$DATA/.complete" ]]; then
	rm -rf "$DATA"
	"$BIN/bench" gen --dir "$DATA" --bytes "$BYTES" --files "$FILES"
	touch "$DATA/.complete"
fi
"$BIN/bench" run --export "$DATA" --tributary "$BIN/tributary" --self "$BIN/bench" \
	--python "$ROOT/.tools/bench-venv/bin/python" --duckdb-script "$HERE/duckdb_split.py"

#!/usr/bin/env bash
# The linter: golangci-lint at a pinned version, with the checked-in
# .golangci.yml, over every package.
#
#   bash .ci/lint.sh install     install the pinned golangci-lint into .tools/bin
#   bash .ci/lint.sh [run]       install if needed, then lint (non-zero on any finding)
#
# golangci-lint is built with the Go on PATH: it must be at least as new as
# the Go of the code it checks (go.mod's go line).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=.ci/gotool.sh
source "$ROOT/.ci/gotool.sh"
LINT_PACKAGE="github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
LINT_VERSION="v2.15.0"

die() { echo "lint: FAILED: $*" >&2; exit 1; }

install() {
	install_go_tool "$LINT_PACKAGE" "$LINT_VERSION" golangci-lint || die "go install $LINT_PACKAGE@$LINT_VERSION"
}

case "${1:-run}" in
install)
	install
	;;
run)
	install
	"$ROOT/.tools/bin/golangci-lint" run --config "$ROOT/.golangci.yml" ./... ||
		die "golangci-lint $LINT_VERSION reported findings"
	echo "lint: no findings (golangci-lint $LINT_VERSION)"
	;;
*) die "usage: lint.sh [install|run]" ;;
esac

#!/usr/bin/env bash
# Runs every Fuzz target of every package for FUZZTIME (default 4s).
#
#   bash .ci/fuzz.sh [FUZZTIME]
#
# A duration -fuzztime races the fuzz coordinator's deadline against its
# workers: on a loaded machine a target can end "--- FAIL ... context
# deadline exceeded" at the deadline with nothing found (go.dev/issue/75804,
# fixed in Go 1.27). Such a run — that message, and no failing input written
# — is retried once; any other failure fails at once.
set -uo pipefail

FUZZTIME="${1:-4s}"
GO="${GO:-go}"
failed=0
for pkg in $("$GO" list ./...); do
	for name in $("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		for attempt in 1 2; do
			echo "fuzz: $pkg $name ($FUZZTIME)"
			out="$("$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1)"
			rc=$?
			printf '%s\n' "$out"
			if ((rc == 0)); then
				break
			fi
			if ((attempt == 1)) && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
				echo "fuzz: $name ended at its deadline with nothing found (go.dev/issue/75804): once more"
				continue
			fi
			echo "fuzz: $pkg $name FAILED" >&2
			failed=1
			break
		done
	done
done
exit "$failed"

# Sourced by the .ci scripts: install_go_tool installs a Go command at a
# pinned version into .tools/bin, from the Go module proxy, once.
#
#   install_go_tool PACKAGE VERSION NAME
#
# The command is built outside this module, with the host's GOOS/GOARCH and
# without the functions' build flags, and stamped with its version in
# .tools/bin/.NAME.version: a changed pin reinstalls it. Concurrent installs
# (several checkouts may share .tools) are serialised; the lock is held for
# the install only.

install_go_tool() {
	local pkg="$1" version="$2" name="$3"
	local tools
	tools="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools"
	mkdir -p "$tools/bin"
	(
		if command -v flock >/dev/null 2>&1; then
			flock 7
		fi
		bin="$tools/bin/$name"
		stamp="$tools/bin/.$name.version"
		if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
			echo "$bin is up to date ($version)"
			exit 0
		fi
		echo "go install $pkg@$version"
		(cd "$tools" && GOBIN="$tools/bin" GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
			"${GO:-go}" install "$pkg@$version") || exit 1
		echo "$version" >"$stamp"
	) 7>"$tools/$name-install.lock"
}

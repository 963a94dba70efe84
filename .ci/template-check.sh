#!/usr/bin/env bash
# The SAM application, checked by the AWS toolchain and run under the Lambda
# runtime:
#
#   1. install the pinned tools: cfn-lint, aws-sam-cli, checkov into
#      .tools/sam-venv (.ci/requirements-sam.txt), and the Lambda runtime
#      interface emulator into .tools/bin (from the Go module proxy, pinned)
#   2. cfn-lint template.yaml                       (no error, no warning)
#   3. sam validate --lint                          (SAM's own cfn-lint pass)
#   4. sam build, without a container               (every function, from Go)
#   5. checkov on the template                      (no failed check; skips
#                                                    are justified beside the resource)
#   6. a team's deployment: examples/tickets/template.yaml, which nests the
#      stock template with the desk's projections layer, through steps 2-5
#   7. the Go template test, with the template as cfn-lint decodes it
#      (TestTemplate*: wiring, least privilege, filters = `tributary filters`)
#   8. the built functions under the emulator, against moto
#      (TestRuntimeEmulator*: responses, init time, binary size)
#
# Any failure stops the script with a non-zero status and says which step.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TOOLS="$ROOT/.tools"
VENV="$TOOLS/sam-venv"
REQS="$ROOT/.ci/requirements-sam.txt"
STAMP="$VENV/.requirements.sha256"
PYTHON="${PYTHON:-python3}"
GO="${GO:-go}"
# The emulator has no releases on the proxy, only pseudo-versions of its
# default branch: this one builds with Go 1.26.
RIE_MODULE="github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
RIE_VERSION="v0.0.0-20261030222936-bef5c4ba774d"
RIE="$TOOLS/bin/aws-lambda-rie"
# shellcheck source=.ci/gotool.sh
source "$ROOT/.ci/gotool.sh"

export SAM_CLI_TELEMETRY=0
# The functions as `make build` builds them: static, no RPC mode, stripped
# (-s implies -w since Go 1.22); sam build adds -trimpath (TrimGoPath).
export CGO_ENABLED=0
export GOFLAGS="-buildvcs=false -tags=lambda.norpc -ldflags=-s"

step() { printf '\n=== template-check: %s\n' "$*"; }
die() { echo "template-check: FAILED: $*" >&2; exit 1; }

install_python_tools() {
	[[ -f "$REQS" ]] || die "missing $REQS"
	mkdir -p "$TOOLS"
	if command -v flock >/dev/null 2>&1; then
		exec 8>"$TOOLS/sam-install.lock"
		flock 8
	fi
	local want
	want="$(sha256sum "$REQS" | cut -d' ' -f1)"
	if [[ -x "$VENV/bin/sam" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
		echo "$VENV is up to date"
		return 0
	fi
	echo "installing $REQS into $VENV"
	rm -rf "$VENV"
	"$PYTHON" -m venv "$VENV" || die "could not create a venv with $PYTHON"
	"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
		-r "$REQS" || die "pip install -r $REQS"
	"$VENV/bin/python" -m pip check || die "pip check: the pinned set is inconsistent"
	echo "$want" >"$STAMP"
}

install_rie() {
	install_go_tool "$RIE_MODULE" "$RIE_VERSION" aws-lambda-rie || die "go install $RIE_MODULE@$RIE_VERSION"
}

start=$SECONDS

step "install pinned tools"
install_python_tools
install_rie
echo "cfn-lint $("$VENV/bin/cfn-lint" --version | awk '{print $2}'); $("$VENV/bin/sam" --version);" \
	"checkov $("$VENV/bin/checkov" --version); aws-lambda-rie $RIE_VERSION"

step "cfn-lint template.yaml"
"$VENV/bin/cfn-lint" --format parseable template.yaml || die "cfn-lint reported errors or warnings"
echo "cfn-lint: no errors, no warnings"

step "sam validate --lint"
"$VENV/bin/sam" validate --lint --template-file template.yaml --region us-east-1 || die "sam validate --lint"

step "sam build (no container)"
rm -rf .aws-sam/build
"$VENV/bin/sam" build --template-file template.yaml --region us-east-1 || die "sam build"
for dir in .aws-sam/build/*/; do
	[[ -f "$dir/bootstrap" ]] || continue
	printf '  %-40s %10d bytes  %s\n' "$dir" "$(stat -c %s "$dir/bootstrap")" "$(file -b "$dir/bootstrap" | cut -d, -f1-2)"
done

step "checkov"
"$VENV/bin/checkov" --file template.yaml --framework cloudformation --compact --quiet \
	--skip-download || die "checkov reported failed checks"

step "a team's deployment: examples/tickets/template.yaml nests template.yaml with the desk's layer"
make -C examples/tickets layer GO="$GO" || die "make -C examples/tickets layer"
"$VENV/bin/cfn-lint" --format parseable examples/tickets/template.yaml || die "cfn-lint examples/tickets/template.yaml"
"$VENV/bin/sam" validate --lint --template-file examples/tickets/template.yaml --region us-east-1 || die "sam validate --lint (examples/tickets)"
rm -rf examples/tickets/.aws-sam
(cd examples/tickets && "$VENV/bin/sam" build --template-file template.yaml --region us-east-1) || die "sam build (examples/tickets)"
for dir in examples/tickets/.aws-sam/build/Tributary/*/; do
	[[ -f "$dir/bootstrap" ]] || die "sam build (examples/tickets): no bootstrap in $dir"
done
"$VENV/bin/checkov" --file examples/tickets/template.yaml --framework cloudformation --compact --quiet \
	--skip-download || die "checkov (examples/tickets)"

step "Go template test"
TRIBUTARY_SAM_PYTHON="$VENV/bin/python" TRIBUTARY_REQUIRE_TEMPLATE_TOOLS=1 GOFLAGS=-buildvcs=false \
	"$GO" test -count=1 -run '^TestTemplate' -v ./scripts/cli/ || die "Go template test"

step "functions under the Lambda runtime interface emulator (against moto)"
bash .ci/servers.sh install
TRIBUTARY_RIE="$RIE" TRIBUTARY_REQUIRE_TEMPLATE_TOOLS=1 GOFLAGS=-buildvcs=false \
	bash .ci/servers.sh run -- "$GO" test -count=1 -run '^TestRuntimeEmulator' -v ./scripts/cli/ \
	|| die "functions under the emulator"

echo
echo "template-check: OK in $((SECONDS - start)) s"

# Tributary — build and test entry points.
#
#   make test              everything CI runs: vet, lint, unit, integration, fuzz
#   make lint              golangci-lint (pinned, .golangci.yml) at zero findings
#   make test-unit         fast tests; integration tests skip without a server
#   make example           the worked example modules (examples/tickets, examples/ledger) against this checkout
#   make test-integration  integration tests against a local moto server
#   make build             Lambda bootstraps for functions/cmd/* into bin/<name>/
#   make template-check    the SAM template through the AWS toolchain; functions under the Lambda emulator

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
MAKEFLAGS += --no-print-directory

GO       ?= go
FUZZTIME ?= 4s
SERVERS  := .ci/servers.sh

.PHONY: test vet lint test-unit example test-integration fuzz bench build demo tidy-check template-check

## test: vet, lint, unit tests, integration tests, fuzzing and the template
## check, in that order
test:
	$(MAKE) vet
	$(MAKE) lint
	$(MAKE) tidy-check
	$(MAKE) test-unit
	$(MAKE) example
	$(MAKE) test-integration
	$(MAKE) fuzz
	$(MAKE) template-check

## vet: go vet and a gofmt check
vet:
	$(GO) vet ./...
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path './.tools/*' -not -path './bin/*' -print0 \
		| xargs -0 -r gofmt -l); \
	if [[ -n "$$unformatted" ]]; then \
		echo "gofmt: these files are not formatted (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi

## lint: golangci-lint at the version pinned in .ci/lint.sh (installed into
## .tools/bin on first use), with .golangci.yml; any finding fails
lint:
	GO=$(GO) bash .ci/lint.sh

## test-unit: all tests with the race detector, in shuffled order (-short:
## the exactly-once simulations at a tenth of their size), then the full-size
## exactly-once simulations (100,000 changes per source) without it
test-unit:
	$(GO) test -race -short -shuffle=on -count=1 ./...
	$(GO) test -count=1 -run 'TestExactlyOnce' ./internal/engine/

## example: the worked examples (EXAMPLES: examples/tickets, a support desk
## on the default attribute names; examples/ledger, a payments ledger whose
## attributes are all its own), each a module of its own that builds against
## this checkout's public API: tidy, vet, its tests; a change that breaks the
## public API, or an attribute not read from a team's environment, fails here
EXAMPLES := examples/tickets examples/ledger

example:
	@for dir in $(EXAMPLES); do \
		echo "example: $$dir"; \
		(cd "$$dir" && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -race -count=1 ./...) || exit 1; \
	done

## test-integration: tests named *Integration* against a local moto server
test-integration:
	bash $(SERVERS) install
	bash $(SERVERS) run -- $(GO) test -race -count=1 -run 'Integration' ./...

## fuzz: run every Fuzz target of every package for $(FUZZTIME); a target
## that ends at its deadline with nothing found (a Go 1.26 fuzzing race,
## go.dev/issue/75804) is run once more (.ci/fuzz.sh)
fuzz:
	GO=$(GO) bash .ci/fuzz.sh $(FUZZTIME)

## bench: all benchmarks, with allocation counts
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## build: linux/arm64 Lambda bootstraps, bin/<name>/bootstrap per functions/cmd/<name>/
build:
	@for dir in functions/cmd/*/; do \
		[[ -d "$$dir" ]] || continue; \
		name=$$(basename "$$dir"); \
		echo "build: bin/$$name/bootstrap"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc \
			-ldflags "-s -w" -o "bin/$$name/bootstrap" "./functions/cmd/$$name"; \
	done

## demo: run the end-to-end demo
demo:
	$(GO) run ./scripts/tributary demo

## template-check: the SAM application: cfn-lint, sam validate --lint, sam build
## (no container), checkov, the Go template test, and the functions under the
## Lambda runtime interface emulator against moto (pinned tools, .tools/)
template-check:
	bash .ci/template-check.sh

## tidy-check: fail if `go mod tidy` would change go.mod or go.sum
## (-diff only prints the change; go.mod and go.sum are never modified)
tidy-check:
	$(GO) mod tidy -diff

package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// The example team's files (examples/tickets), relative to the repository.
const (
	teamSpec   = "examples/tickets/projections.yaml"
	teamEvents = "examples/tickets/testdata/streams-event.json"
)

// buildTeamMain builds one of the example team's own mains, as its layer's
// Makefile does, for goarch, and returns the binary's path (bin/<name> of a new
// directory, as in the layer).
func buildTeamMain(t *testing.T, name, goarch string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bin", name)
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", out, "./functions/"+name)
	cmd.Dir = filepath.Join(repoRoot, "examples", "tickets")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the team's %s: %v\n%s", name, err, b)
	}
	return out
}

// finalItems applies a Streams event's records in order and returns the
// items they leave.
func finalItems(t *testing.T, path string) []pipeline.Item {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	changes, err := pipeline.DecodeStreamsEvent(b, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	items := map[string]pipeline.Item{}
	var order []string
	for _, c := range changes {
		k := pipeline.ItemKey(c.Keys)
		if _, seen := items[k]; !seen {
			order = append(order, k)
		}
		items[k] = c.New // nil for a removal
	}
	var out []pipeline.Item
	for _, k := range order {
		if items[k] != nil {
			out = append(out, items[k])
		}
	}
	return out
}

// TestRuntimeEmulatorTeamProjections: the stock projector serves a team's
// own projections both ways the template deploys them, under the emulator
// against moto: loading the team's spec from PROJECTIONS_FILE (the layer's
// file), and handing over to the team's own Go main (TRIBUTARY_MAIN, the
// layer's bin/projector). Both give the aggregates the team's spec
// recomputes from the final items; a filter that would drop the team's type
// stops the init.
func TestRuntimeEmulatorTeamProjections(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	event, err := os.ReadFile(filepath.Join(repoRoot, teamEvents))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.LoadFile(filepath.Join(repoRoot, teamSpec))
	if err != nil {
		t.Fatal(err)
	}
	want, err := projections.Recompute(finalItems(t, teamEvents), sp.TypeAttribute(), sp.Projections()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Aggregates) == 0 || len(want.Rows) == 0 {
		t.Fatalf("the team's events give too little to check: %v", want)
	}
	specPath, err := filepath.Abs(filepath.Join(repoRoot, teamSpec))
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := buildBootstrap(t, "projector", runtime.GOARCH)
	for _, road := range []struct {
		name  string
		env   map[string]string
		arm64 func() string // the linux/arm64 binary Lambda loads: the stock bootstrap, or the team's main
	}{
		{"spec", map[string]string{"PROJECTIONS_FILE": specPath}, func() string { return buildBootstrap(t, "projector", "arm64") }},
		{"go main", map[string]string{"TRIBUTARY_MAIN": buildTeamMain(t, "projector", runtime.GOARCH)}, func() string { return buildTeamMain(t, "projector", "arm64") }},
	} {
		t.Run(road.name, func(t *testing.T) {
			table := awstest.UniqueName(t, "team")
			if err := dynamostore.CreateTable(ctx, ddb, table); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{
				"AGGREGATE_TABLE": table, "AWS_ENDPOINT_URL": motoURL, "AWS_LAMBDA_FUNCTION_NAME": "projector",
				"TYPE_ATTRIBUTE": "EntityType", "FILTER_ENTITY_TYPES": "Ticket",
			}
			for k, v := range road.env {
				env[k] = v
			}
			var inits []time.Duration
			for i := range coldStarts {
				got, d := coldStart(t, rie, bootstrap, env, event)
				if len(got) != 1 || got[0] != `{"batchItemFailures":[]}` {
					t.Fatalf("cold start %d: %v", i+1, got)
				}
				inits = append(inits, d)
			}
			got, err := projections.ReadView(ctx, dynamostore.New(ddb, table))
			if err != nil {
				t.Fatal(err)
			}
			if d := projections.Diff(got, want); len(d) > 0 {
				t.Errorf("the table differs from the team's recomputation:\n%s", strings.Join(d, "\n"))
			}
			figures(t, "projector, team "+road.name, inits, road.arm64())
		})
	}
	t.Run("filter without the team's type", func(t *testing.T) {
		em := startEmulator(t, rie, bootstrap, map[string]string{
			"AGGREGATE_TABLE": "unused", "AWS_ENDPOINT_URL": motoURL, "AWS_LAMBDA_FUNCTION_NAME": "projector",
			"PROJECTIONS_FILE": specPath, "FILTER_ENTITY_TYPES": "Order",
		})
		em.invokeRaw(t, event)
		if out := em.out.String(); !strings.Contains(out, "init failed") || !strings.Contains(out, "also read Ticket") {
			t.Errorf("a filter without Ticket did not stop the init:\n%s", out)
		}
	})
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

const ticketsSpec = "../../examples/tickets/projections.yaml"

func TestProjectionsCheck(t *testing.T) {
	code, out, stderr := runCLI(t, "projections", "check", ticketsSpec)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "projections-check.txt", out)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nprojections:\n  - name: a\n    entityTypes: [T]\n    countrs: []\n  - name: a\n    entityTypes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "projections", "check", bad)
	for _, want := range []string{bad + ":5: projection a: countrs", bad + ":6: ", "invalid projection spec"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("a bad spec: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "projections", "check"); code != 2 || !strings.Contains(stderr, "one spec file") {
		t.Errorf("no file: exit %d %s", code, stderr)
	}
}

// TestSpecFlag: --projections runs a spec's projections instead of the
// binary's: the stock spec processes the seed events into the aggregates
// the Go set gives; the store is then the spec's, which the Go set may not
// write to (the fingerprints differ), and filters print the spec's types.
func TestSpecFlag(t *testing.T) {
	dir := t.TempDir()
	stock := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(stock, seed.SpecYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	events := []string{"--events", fixtures + "streams/event.json", "--events", fixtures + "kinesis/event-ms.json"}
	goDir, specDir := filepath.Join(dir, "go"), filepath.Join(dir, "spec")
	if code, _, stderr := runCLI(t, append([]string{"process", "--store", goDir}, events...)...); code != 0 {
		t.Fatalf("go: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, append([]string{"process", "--store", specDir, "--projections", stock}, events...)...); code != 0 {
		t.Fatalf("spec: exit %d: %s", code, stderr)
	}
	if d := projections.Diff(storeView(t, specDir), storeView(t, goDir)); len(d) > 0 {
		t.Errorf("the stock spec and the Go set differ: %v", d)
	}
	code, _, stderr := runCLI(t, append([]string{"process", "--store", specDir}, events...)...)
	if code != 1 || !strings.Contains(stderr, "projection set mismatch") || !strings.Contains(stderr, "definition changed") ||
		!strings.Contains(stderr, "a Go projection written as a spec, or the reverse") || !strings.Contains(stderr, "`tributary projections adopt` instead") {
		t.Errorf("the Go set on the spec's store (the same rules): exit %d, %s", code, stderr)
	}
	// A set with other projections is no case for adopt.
	code, _, stderr = runCLI(t, append([]string{"process", "--store", specDir, "--projections", ticketsSpec}, events...)...)
	if code != 1 || !strings.Contains(stderr, "projection set mismatch") || strings.Contains(stderr, "projections adopt") {
		t.Errorf("another set on the spec's store: exit %d, %s", code, stderr)
	}
	code, out, _ := runCLI(t, "filters", "--projections", ticketsSpec)
	if code != 0 || !strings.Contains(out, `\"EntityType\":{\"S\":[\"Ticket\"]}`) {
		t.Errorf("filters --projections: exit %d\n%s", code, out)
	}
	if code, _, stderr := runCLI(t, "filters", "--projections", ticketsSpec, "--type-attribute", "kind"); code != 2 || !strings.Contains(stderr, `--type-attribute "kind", but this table's environment reads the entity type from "EntityType"`) {
		t.Errorf("filters with another type attribute: exit %d %s", code, stderr)
	}
}

// TestCheckTemplateParameters: `projections check` prints every template
// parameter a spec implies, its attributes' among them (the defaults for
// those it does not declare).
func TestCheckTemplateParameters(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ledger.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
typeAttribute: kind
versionAttribute: rev
keyAttributes: [pk, sk]
ttlAttribute: expiresAt
projections:
  - name: transfers
    entityTypes: [Transfer]
    counters:
      - key: "ALL"
        values: {transfers: 1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "projections", "check", file)
	want := "SAM template parameters: ProjectedEntityTypes=Transfer TypeAttribute=kind VersionAttribute=rev KeyAttributes=pk,sk TTLAttribute=expiresAt\n"
	if code != 0 || !strings.HasSuffix(out, want) {
		t.Errorf("exit %d %s\n%s, want it to end with %s", code, stderr, out, want)
	}
	code, out, _ = runCLI(t, "projections", "check", ticketsSpec)
	if want := "TypeAttribute=EntityType VersionAttribute=version KeyAttributes=PK,SK TTLAttribute=ttl\n"; code != 0 || !strings.HasSuffix(out, want) {
		t.Errorf("the defaults: exit %d\n%s", code, out)
	}
}

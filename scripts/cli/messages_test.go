package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections"
)

// TestMessages pins how reports reach the terminal: a spec's problems one
// a line (escaped line by line, not as one line with literal \n), a
// record's error naming its projection once, and a binary's messages
// naming the binary.
func TestMessages(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nprojections:\n  - name: x\n    entityTypes: [T]\n    counters:\n      - key: \"K#{nope\"\n      - key: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "projections", "check", bad)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 1 || len(lines) != 5 || lines[0] != "tributary projections: invalid projection spec:" || strings.Contains(stderr, `\n`) {
		t.Errorf("exit %d, %d lines, want 5 (the heading and one a problem):\n%s", code, len(lines), stderr)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, bad+":") {
			t.Errorf("a problem's line does not start with the file: %q", l)
		}
	}

	// A record an Order projection rejects: its error names order-totals
	// once.
	data, err := os.ReadFile(fixtures + "streams/event.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string][]map[string]any
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	for _, r := range ev["Records"] {
		if img, ok := r["dynamodb"].(map[string]any)["NewImage"].(map[string]any); ok {
			if typ, _ := img["EntityType"].(map[string]any); typ["S"] == "Order" {
				img["status"] = map[string]any{"S": "LOST\x1b[2J"}
			}
		}
	}
	events := filepath.Join(dir, "bad-order.json")
	b, _ := json.Marshal(ev)
	if err := os.WriteFile(events, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "process", "--events", events, "--store", t.TempDir())
	if code != 1 || strings.Count(stderr, "order-totals") != 1 || !strings.Contains(stderr, `order-totals: item USER#u42/ORDER#2026-11-30#o1001: status:`) || strings.Contains(stderr, "\x1b") {
		t.Errorf("exit %d, want the record's error naming order-totals once, escaped:\n%s", code, stderr)
	}

	// A team's binary says its own name.
	ledger := Options{Name: "ledger", Environment: &projections.Environment{Projections: seed.Set()}}
	code, _, stderr = runWith(t, ledger, "process", "--store", t.TempDir())
	if code != 2 || !strings.HasPrefix(stderr, "ledger process: usage: no --events files") {
		t.Errorf("exit %d, want ledger's name: %s", code, stderr)
	}
	code, _, stderr = runWith(t, ledger, "nope")
	if code != 2 || !strings.HasPrefix(stderr, `ledger: unknown command "nope"`) || !strings.Contains(stderr, "Usage: ledger <command>") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

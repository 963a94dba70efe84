package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/projections/seed"
)

var update = flag.Bool("update", false, "rewrite golden files")

// stockOptions are the stock binary's (scripts/tributary).
var stockOptions = Options{Projections: seed.Set(), Commands: []Command{Demo(), Leaderboard()}}

// runCLI runs one command line in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), stockOptions, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

const fixtures = "../../pipeline/testdata/"

func TestUsage(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{nil, 2, "Usage: tributary <command>"},
		{[]string{"help"}, 0, "demo"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"decode"}, 2, "no input files"},
		{[]string{"decode", "--format", "xml", "x"}, 2, `unknown format "xml"`},
		{[]string{"decode", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"process", "--store", "x"}, 2, "no --events files"},
		{[]string{"leaderboard", "--store", "x"}, 2, "--season is required"},
		{[]string{"aggregates"}, 2, "give --store DIR or --table NAME"},
		{[]string{"aggregates", "--store", "a", "--table", "b"}, 2, "exclusive"},
		{[]string{"demo", "--fault-rate", "0.9"}, 2, "--fault-rate"},
		{[]string{"demo", "-h"}, 0, "-changes"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	code, out, stderr := runCLI(t, "decode", fixtures+"streams/event.json", fixtures+"kinesis/event-ms.json", fixtures+"export/full.json.gz")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "decode.jsonl", out)

	code, out, stderr = runCLI(t, "decode", fixtures+"malformed/streams-n-garbage.json")
	if code != 1 || strings.Count(out, "\n") != 2 || !strings.Contains(stderr, "dynamodb.NewImage.total.N") {
		t.Errorf("bad record: exit %d, %d lines out, stderr %q", code, strings.Count(out, "\n"), stderr)
	}
	code, _, stderr = runCLI(t, "decode", fixtures+"malformed/streams-truncated.json")
	if code != 1 || !strings.Contains(stderr, "invalid JSON") {
		t.Errorf("truncated: exit %d, stderr %q", code, stderr)
	}
}

func TestProcessAggregatesLeaderboard(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "process", "--store", dir, "--events", fixtures+"streams/event.json", "--events", fixtures+"kinesis/event-ms.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `event.json: 4 records, 4 applied, 0 failed; response {"batchItemFailures":[]}`) {
		t.Errorf("process output:\n%s", out)
	}
	// Processing the same events again changes nothing.
	runCLI(t, "process", "--store", dir, "--events", fixtures+"streams/event.json", "--events", fixtures+"kinesis/event-ms.json")
	code, out, _ = runCLI(t, "aggregates", "--store", dir, "--json")
	if code != 0 {
		t.Fatal(code)
	}
	golden(t, "aggregates.jsonl", out)

	code, out, _ = runCLI(t, "aggregates", "--store", dir)
	if code != 0 || !strings.Contains(out, "ORDERS#PAID") || !strings.Contains(out, "orders=1 revenue=120.50") {
		t.Errorf("text aggregates:\n%s", out)
	}
	code, _, stderr = runCLI(t, "aggregates", "--store", filepath.Join(dir, "missing"))
	if code != 1 || !strings.Contains(stderr, "no aggregate store") {
		t.Errorf("missing store: exit %d, %q", code, stderr)
	}
}

func TestLeaderboard(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "demo", "--changes", "3000", "--no-sync", "--dir", dir); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "leaderboard", "--store", dir, "--season", "2026-Q4", "--top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "season 2026-Q4, top 3") || !strings.HasPrefix(strings.TrimSpace(lines[2]), "1 ") {
		t.Fatalf("leaderboard output:\n%s", out)
	}
}

func TestDemo(t *testing.T) {
	for _, source := range []string{"streams", "kinesis"} {
		t.Run(source, func(t *testing.T) {
			code, out, stderr := runCLI(t, "demo", "--changes", "4000", "--no-sync", "--source", source, "--dir", t.TempDir(), "--fault-rate", "0.05")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			for _, want := range []string{"leaderboard, top 10", "some aggregates:", "VERDICT: exact", "injected"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// failingWriter fails every write, as stdout does when redirected to a full
// disk or a closed pipe.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestOutputErrorsFail: a report that cannot be written fails its command
// (exit 1, the error on stderr) rather than ending in a truncated file.
func TestOutputErrorsFail(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "process", "--store", dir, "--events", fixtures+"streams/event.json"); code != 0 {
		t.Fatalf("process: exit %d: %s", code, stderr)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"aggregates", []string{"aggregates", "--store", dir}},
		{"aggregates --json", []string{"aggregates", "--store", dir, "--json"}},
		{"leaderboard", []string{"leaderboard", "--store", dir, "--season", "2026-Q2"}},
		{"rows", []string{"rows", "--store", dir, "--projection", "order-totals", "--partition", "X"}},
		{"projections show", []string{"projections"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errb bytes.Buffer
			code := Run(context.Background(), stockOptions, tt.args, strings.NewReader(""), failingWriter{}, &errb)
			if code != 1 || !strings.Contains(errb.String(), "no space left on device") {
				t.Errorf("exit %d, stderr %q: want 1 and the write error", code, errb.String())
			}
		})
	}
}

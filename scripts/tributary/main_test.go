package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"os"
	"path/filepath"

	"github.com/tributary/tributary/scripts/cli"
)

// stock are the options main gives cli.Main.
var stock = options()

// run runs one command line of the stock binary in-process.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), stock, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"leaderboard", "--store", "x"}, 2, "--season is required"},
		{[]string{"leaderboard", "--season", "2026-Q2"}, 2, "give --store DIR or --table NAME"},
		{[]string{"leaderboard", "--season", "2026-Q2", "--top", "0", "--store", "x"}, 2, "--top must be at least 1"},
		{[]string{"leaderboard", "--season", "2026-Q2", "--store", "missing"}, 1, "no aggregate store at " + filepath.Join("missing", cli.StoreFile)},
		{[]string{"demo", "--fault-rate", "0.9"}, 2, "--fault-rate must be between 0 and 0.2"},
		{[]string{"demo", "--source", "sqs"}, 2, "--source must be streams or kinesis"},
		{[]string{"demo", "--bogus"}, 2, "tributary demo: usage: flag provided but not defined: -bogus"},
		{[]string{"demo", "-h"}, 0, "Usage: tributary demo [flags]"},
		{[]string{"demo", "-h"}, 0, "-changes"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
	code, out, _ := run(t, "help")
	for _, want := range []string{"\n  demo ", "\n  leaderboard "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help: exit %d, stdout lacks %q:\n%s", code, want, out)
		}
	}
}

func TestDemo(t *testing.T) {
	for _, tt := range []struct{ name, source, spec string }{
		{"streams", "streams", ""},
		{"kinesis", "kinesis", ""},
		// The seed projections written as a spec: the same aggregates and
		// rows as the Go ones, on both sources.
		{"streams spec", "streams", "../../internal/seed/seed.yaml"},
		{"kinesis spec", "kinesis", "../../internal/seed/seed.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"demo", "--changes", "4000", "--no-sync", "--source", tt.source, "--dir", t.TempDir(), "--fault-rate", "0.05"}
			if tt.spec != "" {
				args = append(args, "--projections", tt.spec)
			}
			code, out, stderr := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			want := []string{"leaderboard, top 10", "some aggregates:", "VERDICT: exact", "injected"}
			if tt.spec != "" {
				want = append(want, "checked against the Go seed projections' recomputation and the spec's")
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestLeaderboard reads the store the demo leaves with the standard
// commands' --store.
func TestLeaderboard(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "demo", "--changes", "3000", "--no-sync", "--dir", dir); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	code, out, stderr := run(t, "leaderboard", "--store", dir, "--season", "2026-Q4", "--top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "season 2026-Q4, top 3") || !strings.HasPrefix(strings.TrimSpace(lines[2]), "1 ") {
		t.Fatalf("leaderboard output:\n%s", out)
	}
	if code, out, _ := run(t, "leaderboard", "--store", dir, "--season", "1999-Q1"); code != 0 || !strings.Contains(out, "(no players)") {
		t.Errorf("a season without players: exit %d\n%s", code, out)
	}
}

// TestLeaderboardEscaped: a player's handle is an item's string, shown
// escaped, and a failed write fails the command.
func TestLeaderboardEscaped(t *testing.T) {
	const hostile = "\x1b]0;PWNED\a\x1b[2J"
	events := filepath.Join(t.TempDir(), "event.json")
	quoted, _ := json.Marshal(hostile)
	rec := fmt.Sprintf(`{"eventID":"e1","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1",`+
		`"eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000",`+
		`"dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":{"PK":{"S":"PLAYER#u1"},"SK":{"S":"PROFILE"}},`+
		`"NewImage":{"PK":{"S":"PLAYER#u1"},"SK":{"S":"PROFILE"},"EntityType":{"S":"Player"},"version":{"N":"1"},"handle":{"S":%s},"season":{"S":"2026-Q2"},"rating":{"N":"1842"}},`+
		`"SequenceNumber":"4421600000000000000000000001","StreamViewType":"NEW_AND_OLD_IMAGES"}}`, quoted)
	if err := os.WriteFile(events, []byte(`{"Records":[`+rec+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	if code, out, stderr := run(t, "process", "--store", store, events); code != 0 {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := run(t, "leaderboard", "--store", store, "--season", "2026-Q2")
	if code != 0 || !strings.Contains(out, `\x1b]0;PWNED\a\x1b[2J`) {
		t.Fatalf("exit %d, the handle not shown escaped:\n%s%s", code, out, stderr)
	}
	for i, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || r == utf8.RuneError {
			t.Fatalf("leaderboard writes %U at byte %d", r, i)
		}
	}
	var errb bytes.Buffer
	code = cli.Run(context.Background(), stock, []string{"leaderboard", "--store", store, "--season", "2026-Q2"}, strings.NewReader(""), failingWriter{}, &errb)
	if code != 1 || strings.Count(errb.String(), "no space left on device") != 1 {
		t.Errorf("a failed write: exit %d, stderr %q: want 1 and the write error, once", code, errb.String())
	}
}

// failingWriter fails every write, as stdout does on a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestDemoLeavesNoStore: without --dir the demo's store is temporary and
// gone when it ends (the output says so); with --dir it is kept.
func TestDemoLeavesNoStore(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, out, stderr := run(t, "demo", "--changes", "50")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "(temporary, removed when the demo ends; --dir DIR keeps it)") {
		t.Errorf("the output does not say the store is temporary:\n%s", out)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the demo left %d entries in TMPDIR, e.g. %s", len(left), left[0].Name())
	}
	dir := filepath.Join(t.TempDir(), "kept")
	if code, out, stderr := run(t, "demo", "--changes", "50", "--dir", dir); code != 0 {
		t.Fatalf("--dir: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, cli.StoreFile)); err != nil {
		t.Errorf("--dir: the store is not kept: %v", err)
	}
}

package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/objstore"
)

// TestProgressOffTerminal: a long command whose stderr is not a terminal
// (a script, a CI job) writes whole progress lines — count, rate, estimate
// — every progressEvery (30 s by default; here every write), with no
// carriage return or terminal escape; its stdout is what it was.
func TestProgressOffTerminal(t *testing.T) {
	old := progressEvery
	progressEvery = time.Nanosecond
	t.Cleanup(func() { progressEvery = old })
	store := filepath.Join(t.TempDir(), "store")
	arch := t.TempDir()
	makeArchive(t, objstore.NewDir(arch), "")
	tests := []struct {
		name string
		args []string
		line *regexp.Regexp
	}{
		{"backfill", []string{"backfill", "--export", fullExport, "--store", store, "--no-sync"},
			regexp.MustCompile(`(?m)^backfill: \d+ items of \d+ \(\d+%\), \d+ items/s, ETA \S+, \S+ elapsed$`)},
		{"verify", []string{"verify", "--export", fullExport, "--store", store},
			regexp.MustCompile(`(?m)^verify: \d+ MB, \d+ items of \d+ \(\d+%\), \d+ MB/s, ETA \S+, \S+ elapsed$`)},
		{"restore", []string{"restore", "--from", arch, "--to", t.TempDir()},
			regexp.MustCompile(`(?m)^restore: \d+ items of 7 \(\d+%\), \d+ items/s, ETA \S+, \S+ elapsed$`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			if !tc.line.MatchString(stderr) {
				t.Errorf("no progress line matching %s in stderr:\n%s", tc.line, stderr)
			}
			if strings.ContainsAny(stderr, "\r\033") {
				t.Errorf("stderr off a terminal holds a carriage return or an escape: %q", stderr)
			}
			if strings.Contains(out, "ETA") {
				t.Errorf("progress on stdout:\n%s", out)
			}
		})
	}
}

// TestProgressLine: the line's count, rate and estimate, worked by hand.
func TestProgressLine(t *testing.T) {
	tests := []struct {
		unit     string
		total    int64
		bytes, n int64
		elapsed  time.Duration
		tty      bool
		want     string
	}{
		{"items", 1000, 250, 250, 10 * time.Second, false, "backfill: 250 items of 1000 (25%), 25 items/s, ETA 30s, 10s elapsed"},
		{"MB", 1000, 50e6, 500, 10 * time.Second, false, "backfill: 50 MB, 500 items of 1000 (50%), 5 MB/s, ETA 10s, 10s elapsed"},
		{"WCU", 0, 300, 100, 60 * time.Second, false, "backfill: 300 WCU, 100 items, 5 WCU/s, 1m0s elapsed"},
		{"items", 1000, 250, 250, 10 * time.Second, true, "backfill: 250 items of 1000 (25%), 25 items/s, ETA 30s"},
	}
	for _, tc := range tests {
		p := &byteProgress{verb: "backfill", unit: tc.unit, total: tc.total, tty: tc.tty}
		if got := p.line(tc.bytes, tc.n, tc.elapsed); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc, got, tc.want)
		}
	}
}

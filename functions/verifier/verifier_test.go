package verifier_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/functions/verifier"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections/driver"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func vars(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestLoadConfig: every problem of the environment at once, naming the
// variable; the defaults.
func TestLoadConfig(t *testing.T) {
	_, err := verifier.LoadConfig(vars(map[string]string{"SCAN_SEGMENTS": "0", "PARTS": "3", "MAX_PRINT": "20000", "EXPORT_LOCATION": "s3://"}))
	for _, want := range []string{"AGGREGATE_TABLE is required", "WORK_LOCATION is required", "EXPORT_LOCATION", `SCAN_SEGMENTS "0"`, "PARTS 3: want a power of two", `MAX_PRINT "20000"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadConfig: %v, want it to name %q", err, want)
		}
	}
	c, err := verifier.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": "aggs", "WORK_LOCATION": "s3://work/verify", "PARTS": "8"}))
	if err != nil || c.MaxPrint != 100 || c.Parts != 8 || c.Segments != 0 || c.Work != "s3://work/verify" {
		t.Errorf("LoadConfig: %+v, %v", c, err)
	}
}

// TestRefused: events that name no step of their job, and a table of
// other projections, are refused (the state machine does not retry a
// *verifier.Refused), naming what.
func TestRefused(t *testing.T) {
	ctx := context.Background()
	full := filepath.Join(exportgen.FixtureDir(), exportgen.FixtureItems(t).Full.Dir)
	st := boltstoretest.Open(t)
	if _, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	h, err := verifier.New(verifier.Config{Table: "aggs", Work: t.TempDir(), Export: full, Parts: 2}, seed.Environment(), nil, st, nil, quiet())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := h.Handle(ctx, verifier.Event{Action: "plan", Run: "r1"})
	if err != nil || plan.Segments != 1 || plan.Parts != 2 || plan.Files == 0 {
		t.Fatalf("plan: %+v, %v", plan, err)
	}
	for _, tc := range []struct {
		ev   verifier.Event
		want string
	}{
		{verifier.Event{Action: "nonsense"}, `unknown action "nonsense"`},
		{verifier.Event{Action: "plan"}, "a plan event needs run"},
		{verifier.Event{Action: "scan"}, "a scan event needs job"},
		{verifier.Event{Action: "scan", Job: plan.Job, Segment: 1}, "has no scan segment 1 (it has 1)"},
		{verifier.Event{Action: "file", Job: plan.Job, DataFileS3Key: "data/nope.json.gz"}, `"data/nope.json.gz" is not a data file of job`},
		{verifier.Event{Action: "join", Job: plan.Job, Part: 2}, "has no part 2 (it has 2)"},
		{verifier.Event{Action: "compare", Job: plan.Job, Part: -1}, "has no part -1"},
	} {
		_, err := h.Handle(ctx, tc.ev)
		if !errors.As(err, new(*verifier.Refused)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a refusal naming %q", tc.ev, err, tc.want)
		}
	}
	// A step of a job whose earlier steps did not run fails, and is retried.
	if _, err := h.Handle(ctx, verifier.Event{Action: "join", Job: plan.Job}); err == nil || errors.As(err, new(*verifier.Refused)) || !strings.Contains(err.Error(), "is not done") {
		t.Errorf("a join before the file steps: %v", err)
	}

	// A table of another set of projections.
	other := boltstoretest.Open(t)
	sub, err := seed.Set().Select("order-totals")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Open(ctx, other, sub, engine.Config{Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	h, err = verifier.New(verifier.Config{Table: "aggs", Work: t.TempDir(), Export: full}, seed.Environment(), nil, other, nil, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, verifier.Event{Action: "plan", Run: "r1"}); !errors.As(err, new(*verifier.Refused)) {
		t.Errorf("a table of other projections: %v, want a refusal", err)
	}
}

// TestPlanSegments: without SCAN_SEGMENTS the plan scans the table in a
// segment a 512 MiB of its size, from 16 to 1,000.
func TestPlanSegments(t *testing.T) {
	ctx := context.Background()
	full := filepath.Join(exportgen.FixtureDir(), exportgen.FixtureItems(t).Full.Dir)
	st := boltstoretest.Open(t)
	if _, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	whole := func(int, int) (driver.Reader, error) { return st, nil }
	for _, tc := range []struct {
		size int64
		want int
	}{{0, 16}, {1 << 30, 16}, {10 << 30, 20}, {10<<30 + 1, 21}, {1 << 40, 1000}} {
		cfg := verifier.Config{Table: "aggs", Work: t.TempDir(), Export: full,
			TableSize: func(context.Context) (int64, error) { return tc.size, nil }}
		h, err := verifier.New(cfg, seed.Environment(), nil, st, whole, quiet())
		if err != nil {
			t.Fatal(err)
		}
		plan, err := h.Handle(ctx, verifier.Event{Action: "plan", Run: "r"})
		if err != nil || plan.Segments != tc.want {
			t.Errorf("a table of %d bytes: %d segments (%v), want %d", tc.size, plan.Segments, err, tc.want)
		}
	}
}

// TestSweep: with a directory set (Main's), each invocation first removes
// the spills older than a Lambda invocation's longest run — what a step
// stopped by the function's timeout left — and nothing else: not a young
// spill (a step may still be running), not another program's file.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	full := filepath.Join(exportgen.FixtureDir(), exportgen.FixtureItems(t).Full.Dir)
	st := boltstoretest.Open(t)
	if _, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, age time.Duration) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, "p000001"), []byte("spilled"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stale := write("tributary-spill-1", time.Hour)
	young := write("tributary-spill-2", time.Minute)
	other := write("someone-else", time.Hour)
	h, err := verifier.New(verifier.Config{Table: "aggs", Work: t.TempDir(), Export: full, Dir: dir}, seed.Environment(), nil, st, nil, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, verifier.Event{Action: "plan", Run: "r"}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{stale: false, young: true, other: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", filepath.Base(path), err == nil, want)
		}
	}
}

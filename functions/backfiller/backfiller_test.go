package backfiller_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// vars looks variables up in m, as os.LookupEnv does in a main.
func vars(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// errInjected is what failingStore's commits fail with.
var errInjected = errors.New("injected: the store stopped answering")

// failingStore is a table whose commits fail from the failAt-th on: that
// one is written and then reported failed (a lost acknowledgement), the
// later ones write nothing. So a file step over it stops half-way.
type failingStore struct {
	driver.Table
	failAt  int64
	commits atomic.Int64
}

func (s *failingStore) Commit(ctx context.Context, tx *driver.Tx) error {
	n := s.commits.Add(1)
	switch {
	case n < s.failAt:
		return s.Table.Commit(ctx, tx)
	case n == s.failAt:
		if err := s.Table.Commit(ctx, tx); err != nil {
			return err
		}
	}
	return errInjected
}

// fixtureInS3 copies the fixture export (a full export of five data files
// and an incremental one on top) into a bucket of gofakes3, and returns
// the client and the exports' locations.
func fixtureInS3(t *testing.T) (client objstore.S3API, full, incremental string) {
	t.Helper()
	ctx := context.Background()
	c := awstest.GoFakeS3(t)
	bucket := awstest.CreateBucket(ctx, t, c, "exports")
	if err := exportgen.CopyDir(ctx, objstore.NewS3(c, bucket, "exports/app", objstore.S3Options{}), exportgen.FixtureDir()); err != nil {
		t.Fatal(err)
	}
	fx := exportgen.FixtureItems(t)
	return c, "s3://" + bucket + "/exports/app/" + fx.Full.Dir, "s3://" + bucket + "/exports/app/" + fx.Incremental.Dir
}

// check fails the test unless the table holds what a recomputation of the
// seed projections from the table's final items gives.
func check(t *testing.T, stage string, st driver.Reader) {
	t.Helper()
	want, err := projections.Recompute(exportgen.FixtureItems(t).FinalItems, "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Aggregates) == 0 {
		t.Fatal("the recomputation holds no aggregate: the test checks nothing")
	}
	got, err := projections.ReadView(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if d := projections.Diff(got, want); len(d) > 0 {
		if len(d) > 20 {
			d = append(d[:20], "...")
		}
		t.Fatalf("%s: %d differences from the recomputation from the final items:\n%s", stage, len(d), strings.Join(d, "\n"))
	}
}

// TestStateMachine runs the steps the Backfill state machine runs, in
// process, against S3 (gofakes3) and an embedded aggregate store: plan,
// a round of file steps in parallel over the files the plan returned
// (bounded here to two names a round), each child in a handler of its own
// as in an execution environment of its own, plan again, … until no file is
// pending, then finish. One file step stops half-way (its store fails
// from its fourth commit, which it writes and reports failed) and runs
// again, over the healthy store, in the first round; one file runs twice at once and a third time at the
// end, when it is passed over. A finish before every file is done fails,
// naming the files. The aggregates equal the recomputation from the
// table's final items (the full export with the incremental one on top).
func TestStateMachine(t *testing.T) {
	ctx := context.Background()
	client, full, inc := fixtureInS3(t)
	st := boltstoretest.Open(t)
	cfg, err := backfiller.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": "aggregates", "EXPORT_LOCATION": full, "BATCH_SIZE": "50"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.PlanBytes = 200 // two data file names a round
	// A handler is a Lambda execution environment: each child of a round
	// gets its own, as children run in environments of their own.
	newHandler := func(t *testing.T, table driver.Table) *backfiller.Handler {
		h, err := backfiller.New(cfg, seed.Environment(), client, table, quiet())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := newHandler(t, st)
	failing := &failingStore{Table: st, failAt: 4}
	hf := newHandler(t, failing)
	job := backfiller.Event{Incrementals: []string{inc}} // the export is the configured one
	step := func(h *backfiller.Handler, action string, mod func(*backfiller.Event)) (backfiller.Response, error) {
		ev := job
		ev.Action = action
		if mod != nil {
			mod(&ev)
		}
		return h.Handle(ctx, ev)
	}

	plan, err := step(h, "plan", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := plan.Plan; p == nil || p.Total != 6 || p.Pending != 6 || len(p.Files) != 2 || p.Complete || plan.Job == "" || plan.AsOf.IsZero() {
		t.Fatalf("first plan: %+v; want 6 files (five data files and the incremental exports'), two of them this round", plan)
	}
	broken := plan.Plan.Files[0]
	_, err = step(hf, "file", func(ev *backfiller.Event) { ev.DataFileS3Key = broken })
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), broken) {
		t.Fatalf("the file step over the failing store: %v, want the injected failure naming %s", err, broken)
	}
	if n := failing.commits.Load(); n < 4 {
		t.Fatalf("the failing store saw %d commits: the step did not get half-way", n)
	}
	_, err = step(h, "finish", nil)
	var fp *backfiller.FilesPending
	if !errors.As(err, &fp) || len(fp.Pending) != 6 || !slices.Contains(fp.Pending, broken) || !strings.Contains(err.Error(), broken) {
		t.Fatalf("finish with every file pending: %v", err)
	}

	// The state machine: plan, a round of file steps, plan again, ….
	twice := ""
	rounds, pendingBefore := 0, 0
	for {
		plan, err := step(h, "plan", func(ev *backfiller.Event) { ev.PendingBefore = pendingBefore })
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Plan.Files) == 0 {
			break
		}
		rounds++
		pendingBefore = plan.Plan.Pending
		files := plan.Plan.Files
		if twice == "" && !slices.Contains(files, broken) {
			twice = files[0]
			files = append(files, twice) // the same file twice, at once
		}
		var wg sync.WaitGroup
		for _, f := range files {
			hc := newHandler(t, st)
			wg.Go(func() {
				r, err := step(hc, "file", func(ev *backfiller.Event) { ev.DataFileS3Key = f })
				if err != nil {
					t.Errorf("file %s: %v", f, err)
					return
				}
				if r.File != f || r.Job != plan.Job || r.Failed != 0 {
					t.Errorf("file %s: %+v", f, r)
				}
			})
		}
		wg.Wait()
		if t.Failed() || rounds > 6 {
			t.FailNow()
		}
	}
	if rounds != 3 || twice == "" {
		t.Errorf("%d rounds (a file twice: %q), want 3 of two files", rounds, twice)
	}
	again, err := step(h, "file", func(ev *backfiller.Event) { ev.DataFileS3Key = twice })
	if err != nil || !again.Done || again.Items != 0 {
		t.Errorf("a finished file's step again: %+v, %v; want it passed over", again, err)
	}
	fin, err := step(h, "finish", nil)
	if err != nil || !fin.Complete || fin.Files != 6 {
		t.Fatalf("finish: %+v, %v", fin, err)
	}
	check(t, "after the state machine", st)

	m, _, err := backfill.ReadMarker(ctx, st)
	if err != nil || m == nil || m.Job != plan.Job || m.Completed.IsZero() || len(m.Incrementals) != 1 || m.Files != 6 {
		t.Errorf("marker %+v, %v", m, err)
	}
	last, err := step(h, "plan", nil)
	if err != nil || last.Plan == nil || !last.Plan.Complete || len(last.Plan.Files) != 0 || last.Plan.Pending != 0 {
		t.Errorf("plan after finish: %+v, %v", last, err)
	}
	// The state machine counts the plan's files: an empty list, not none.
	if b, _ := json.Marshal(last); !strings.Contains(string(b), `"plan":{"files":[],"pending":0,"total":6,"complete":true}`) {
		t.Errorf("plan after finish, as the state machine reads it: %s", b)
	}
	check(t, "after a finished file and a plan again", st)
}

// TestPlanWithoutProgress: a plan told that the round before began with
// as many pending files as it finds fails, instead of sending the state
// machine round again.
func TestPlanWithoutProgress(t *testing.T) {
	ctx := context.Background()
	client, full, _ := fixtureInS3(t)
	h, err := backfiller.New(backfiller.Config{Table: "t", Export: full}, seed.Environment(), client, boltstoretest.Open(t), quiet())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := h.Handle(ctx, backfiller.Event{Action: "plan"})
	if err != nil || plan.Plan.Total != 5 || len(plan.Plan.Files) != 5 {
		t.Fatalf("plan: %+v, %v", plan, err)
	}
	if _, err := h.Handle(ctx, backfiller.Event{Action: "plan", PendingBefore: 5}); err == nil || !strings.Contains(err.Error(), "the round did nothing") {
		t.Errorf("a plan without progress: %v", err)
	}
}

// TestBadEvents: each is refused with an error that says what is wrong,
// before anything is written.
func TestBadEvents(t *testing.T) {
	ctx := context.Background()
	client, full, _ := fixtureInS3(t)
	st := boltstoretest.Open(t)
	h, err := backfiller.New(backfiller.Config{Table: "t"}, seed.Environment(), client, st, quiet())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ev   backfiller.Event
		want string
	}{
		{backfiller.Event{Action: "nope", Export: full}, `unknown action "nope"`},
		{backfiller.Event{Action: "plan"}, "names no export"},
		{backfiller.Event{Action: "file", Export: full}, "needs dataFileS3Key"},
		{backfiller.Event{Action: "file", Export: full, DataFileS3Key: "elsewhere/data/x.json.gz"}, `"elsewhere/data/x.json.gz" is not a data file of job`},
		{backfiller.Event{Action: "plan", Export: "s3://"}, "has no bucket"},
		{backfiller.Event{Action: "plan", Export: full + "-nope"}, "-nope"},
		{backfiller.Event{Action: "plan", Export: full, Incrementals: []string{full}}, "incremental"},
	} {
		if _, err := h.Handle(ctx, tt.ev); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error with %q", tt.ev, err, tt.want)
		}
	}
	if m, _, err := backfill.ReadMarker(ctx, st); err != nil || m != nil {
		t.Errorf("a bad event wrote the backfill marker %+v (%v)", m, err)
	}
}

// TestChainRefused: the plan of a job whose incremental exports are not
// the full export's table's history, contiguous and moving forward, or
// that holds a time after now, is refused, naming the export and the times
// or fields, before anything is written; so is a file step of such a job.
func TestChainRefused(t *testing.T) {
	ctx := context.Background()
	client, full, inc := fixtureInS3(t)
	loc, err := objstore.Parse(inc)
	if err != nil {
		t.Fatal(err)
	}
	root := objstore.NewS3(client, loc.Bucket, "exports/app", objstore.S3Options{})
	incDir := strings.TrimPrefix(loc.Prefix, "exports/app/")
	summary, err := objstore.ReadAll(ctx, root, incDir+"/manifest-summary.json")
	if err != nil {
		t.Fatal(err)
	}
	// variant writes a copy of the incremental export under id with its
	// summary edited (a field set to nil is left out), and returns its
	// location; its manifest names the shared data files.
	variant := func(id string, edit map[string]any) string {
		b := exportgen.EditSummary(t, summary, edit)
		if err := root.Put(ctx, "AWSDynamoDB/"+id+"/manifest-summary.json", b); err != nil {
			t.Fatal(err)
		}
		return "s3://" + loc.Bucket + "/exports/app/AWSDynamoDB/" + id
	}
	st := boltstoretest.Open(t)
	h, err := backfiller.New(backfiller.Config{Table: "t", Export: full}, seed.Environment(), client, st, quiet())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		incs []string
		want []string
	}{
		{"ends before the full export", []string{variant("01796032801000-000000a1", map[string]any{"exportFromTime": "2026-11-30T09:59:00.000Z", "exportToTime": "2026-11-30T10:00:01.000Z"})},
			[]string{"01796032801000-000000a1 (from 2026-11-30T09:59:00Z to 2026-11-30T10:00:01Z) ends before ", "(as of 2026-11-30T10:00:02.314Z)"}},
		{"ends before the one before it", []string{variant("01796032803000-000000a2", map[string]any{"exportFromTime": "2026-11-30T10:00:02.000Z", "exportToTime": "2026-11-30T10:00:03.000Z"}), inc},
			[]string{"01796032803000-000000a2 (from 2026-11-30T10:00:02Z to 2026-11-30T10:00:03Z) ends before ", "e675cc21 (to 2026-11-30T10:00:04.099Z)"}},
		{"no exportFromTime", []string{variant("01796032804099-000000a3", map[string]any{"exportFromTime": nil})},
			[]string{"01796032804099-000000a3 has no exportFromTime"}},
		{"another table", []string{variant("01796032804099-000000a4", map[string]any{"tableArn": "arn:aws:dynamodb:eu-west-1:111122223333:table/other"})},
			[]string{"01796032804099-000000a4 is of another table than ", "tableArn arn:aws:dynamodb:eu-west-1:111122223333:table/other, not arn:aws:dynamodb:eu-west-1:111122223333:table/app"}},
		{"a time after now", []string{variant("01796032804099-000000a5", map[string]any{"exportToTime": "2072-01-01T00:00:00.000Z"})},
			[]string{"01796032804099-000000a5: exportToTime 2072-01-01T00:00:00Z is after now"}},
	} {
		for _, action := range []string{"plan", "file"} {
			_, err := h.Handle(ctx, backfiller.Event{Action: action, Incrementals: tc.incs, DataFileS3Key: backfill.OverlayFile})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s, %s: %v, want an error with %q", tc.name, action, err, w)
				}
			}
		}
	}
	if m, _, err := backfill.ReadMarker(ctx, st); err != nil || m != nil {
		t.Errorf("a refused chain wrote the backfill marker %+v (%v)", m, err)
	}
}

func TestLoadConfig(t *testing.T) {
	_, err := backfiller.LoadConfig(vars(map[string]string{"EXPORT_LOCATION": "s3://", "BATCH_SIZE": "0"}))
	for _, want := range []string{"AGGREGATE_TABLE", "EXPORT_LOCATION", "BATCH_SIZE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config error %v does not mention %s", err, want)
		}
	}
	c, err := backfiller.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": " aggregates ", "BATCH_SIZE": "250", "PROJECTIONS": "order-totals, player-season-stats",
		"TYPE_ATTRIBUTE": "kind", "KEY_ATTRIBUTES": "Id"}))
	if err != nil || c.Table != "aggregates" || c.BatchSize != 250 || strings.Join(c.Projections, ",") != "order-totals,player-season-stats" ||
		c.Schema.TypeAttribute != "kind" || strings.Join(c.Schema.KeyAttributes, ",") != "Id" {
		t.Errorf("config %+v, %v", c, err)
	}
	// Attributes that differ from those the environment declares, and
	// projections it does not have, are refused by New.
	env := seed.Environment()
	env.Schema.TypeAttribute = "EntityType"
	if _, err := backfiller.New(c, env, nil, boltstoretest.Open(t), quiet()); err == nil || !strings.Contains(err.Error(), "TYPE_ATTRIBUTE") {
		t.Errorf("New with TYPE_ATTRIBUTE against the environment's: %v", err)
	}
	if _, err := backfiller.New(backfiller.Config{Table: "t", Projections: []string{"nope"}}, seed.Environment(), nil, boltstoretest.Open(t), quiet()); err == nil || !strings.Contains(err.Error(), "PROJECTIONS") {
		t.Errorf("New with an unknown projection: %v", err)
	}
}

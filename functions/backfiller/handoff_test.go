package backfiller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/projections/driver"
)

// streamARN is a DynamoDB stream's ARN, as the template gives REPLAY_FROM.
const streamARN = "streams://arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2026-11-01T00:00:00.000"

// recentExport writes an export taken two hours ago (a simulated table
// over the seed domains, four data files) into a directory, and returns
// its location.
func recentExport(t *testing.T) string {
	t.Helper()
	start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	h, err := sim.Workload{Seed: 29, Changes: 400, Skew: 1.0, Start: start}.Run()
	if err != nil {
		t.Fatal(err)
	}
	items, _, _ := exportgen.FromHistory(h, 400)
	at := h.Records[399].Time.Add(time.Millisecond)
	root := t.TempDir()
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(root).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(at, 3), Time: at, Files: 4}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, filepath.FromSlash(res.Dir))
}

// startedAgo rewrites st's backfill marker as begun d ago: a job that has
// run that long in steps.
func startedAgo(t *testing.T, st driver.Store, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	m, rev, err := backfill.ReadMarker(ctx, st)
	if err != nil || m == nil {
		t.Fatalf("marker %v, %v", m, err)
	}
	m.Started = time.Now().Add(-d).UTC()
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: backfill.MarkerKey, ExpectRev: rev, Body: body}}}); err != nil {
		t.Fatal(err)
	}
}

// TestHandoffSteps: with REPLAY_FROM, the plan and file steps run the
// hand-off guard on a table with nothing attached before the export.
//
//   - A DynamoDB stream keeps 24 hours: the fixture export, days old, is
//     refused by the plan at once, with the error the state machine
//     matches (HandoffError), before the table's backfill marker is
//     written; into a table a shadow marked before the export the same
//     plan is taken.
//   - A Kinesis stream's retention is read (Config.Retention): a job
//     begun ten minutes ago with one file of four done would finish in
//     about half an hour; a stream that trims the export's second in five
//     minutes refuses the next file step, which backfills nothing, and
//     the finish the state machine then runs (refused) fails with that
//     refusal, which the table recorded; a stream that keeps a day takes
//     the file. Each check emits HandoffHeadroom and EstimatedRemaining
//     with the function's dimension.
func TestHandoffSteps(t *testing.T) {
	ctx := context.Background()
	t.Run("streams, trimmed already", func(t *testing.T) {
		client, full, _ := fixtureInS3(t)
		cfg, err := backfiller.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": "aggregates", "EXPORT_LOCATION": full, "REPLAY_FROM": streamARN}))
		if err != nil || cfg.ReplayFrom != streamARN {
			t.Fatalf("%+v, %v", cfg, err)
		}
		st := boltstoretest.Open(t)
		h, err := backfiller.New(cfg, seed.Environment(), client, st, quiet())
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Handle(ctx, backfiller.Event{Action: "plan"})
		var he *backfill.HandoffError
		if !errors.As(err, &he) || reflect.TypeOf(err).Elem().Name() != "HandoffError" ||
			!strings.Contains(err.Error(), "but "+streamARN+" keeps its records 24h0m0s") || !strings.Contains(err.Error(), "Attach a shadow") {
			t.Fatalf("plan: %v, want the hand-off refusal, of the error type HandoffError", err)
		}
		if m, _, err := backfill.ReadMarker(ctx, st); m != nil || err != nil {
			t.Errorf("a refused plan wrote the backfill marker: %+v, %v", m, err)
		}

		attached := boltstoretest.Open(t)
		before := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) // the export is 10:00:02
		if _, err := engine.Open(ctx, attached, seed.Set(), engine.Config{Now: func() time.Time { return before }}); err != nil {
			t.Fatal(err)
		}
		h, err = backfiller.New(cfg, seed.Environment(), client, attached, quiet())
		if err != nil {
			t.Fatal(err)
		}
		if plan, err := h.Handle(ctx, backfiller.Event{Action: "plan"}); err != nil || plan.Plan.Pending != 5 {
			t.Errorf("plan into a shadow's table: %+v, %v", plan.Plan, err)
		}
	})

	t.Run("kinesis, the estimate", func(t *testing.T) {
		exp := recentExport(t)
		st, err := boltstore.Open(filepath.Join(t.TempDir(), "aggregates.db"), boltstore.WithoutSync())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		var metrics bytes.Buffer
		handler := func(retention time.Duration) *backfiller.Handler {
			cfg, err := backfiller.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": "aggregates", "EXPORT_LOCATION": exp, "REPLAY_FROM": "kinesis://changes", "BATCH_SIZE": "50"}))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Retention = func(context.Context) (time.Duration, error) { return retention, nil }
			cfg.Metrics = &metrics
			h, err := backfiller.New(cfg, seed.Environment(), nil, st, quiet())
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		day := handler(24 * time.Hour)
		plan, err := day.Handle(ctx, backfiller.Event{Action: "plan"})
		if err != nil || len(plan.Plan.Files) != 4 {
			t.Fatalf("plan: %+v, %v", plan.Plan, err)
		}
		files := plan.Plan.Files
		if r, err := day.Handle(ctx, backfiller.Event{Action: "file", DataFileS3Key: files[0]}); err != nil || r.Items == 0 {
			t.Fatalf("file step: %+v, %v", r, err)
		}
		startedAgo(t, st, 10*time.Minute)
		// The second is trimmed two hours and five minutes after the export.
		short := handler(time.Since(plan.AsOf.Truncate(time.Second)) + 5*time.Minute)
		r, err := short.Handle(ctx, backfiller.Event{Action: "file", DataFileS3Key: files[1]})
		var he *backfill.HandoffError
		if !errors.As(err, &he) || !strings.Contains(err.Error(), "items/s, ") || r.File != files[1] || r.Items != 0 {
			t.Fatalf("file step on a stream that trims the second in 5 minutes: %+v, %v", r, err)
		}
		t.Log(err)
		if he.Headroom > -20*time.Minute || he.Done == 0 || he.Finish.Before(time.Now().Add(25*time.Minute)) {
			t.Errorf("the estimate %+v: want one file of four done in ten minutes, the rest about half an hour", he.Estimate)
		}
		// The state machine then runs finish, told of the refusal: it
		// fails with the refusal the file step recorded, in another
		// environment; a finish not told fails naming the files.
		_, err = handler(24*time.Hour).Handle(ctx, backfiller.Event{Action: "finish", Refused: true})
		var recorded *backfill.HandoffError
		if !errors.As(err, &recorded) || err.Error() != he.Error() || reflect.TypeOf(err).Elem().Name() != "HandoffError" {
			t.Fatalf("finish after the refusal: %v\nwant %v", err, he)
		}
		if _, err := handler(24*time.Hour).Handle(ctx, backfiller.Event{Action: "finish"}); !errors.As(err, new(*backfiller.FilesPending)) {
			t.Errorf("finish: %v, want files pending", err)
		}
		if r, err := handler(24*time.Hour).Handle(ctx, backfiller.Event{Action: "file", DataFileS3Key: files[1]}); err != nil || r.Items == 0 {
			t.Fatalf("file step on a stream that keeps a day: %+v, %v", r, err)
		}
		for _, want := range []string{`"Function":"backfiller"`, `"HandoffHeadroom"`, `"EstimatedRemaining"`, `"Dimensions":[["Function"]]`} {
			if !strings.Contains(metrics.String(), want) {
				t.Errorf("the metrics lack %s:\n%s", want, metrics.String())
			}
		}
	})
}

// TestLoadConfigReplayFrom: REPLAY_FROM takes replay's --from syntax; a
// Kinesis stream needs the means to read its retention (Main's).
func TestLoadConfigReplayFrom(t *testing.T) {
	for _, bad := range []string{"s3://bucket/x", "kinesis://", "streams://", "arn:aws:kinesis:eu-west-1:1:stream/x"} {
		if _, err := backfiller.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": "t", "REPLAY_FROM": bad})); err == nil || !strings.Contains(err.Error(), "REPLAY_FROM") {
			t.Errorf("REPLAY_FROM %q: %v", bad, err)
		}
	}
	cfg, err := backfiller.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": "t", "REPLAY_FROM": " kinesis://arn:aws:kinesis:eu-west-1:1:stream/x "}))
	if err != nil || cfg.ReplayFrom != "kinesis://arn:aws:kinesis:eu-west-1:1:stream/x" {
		t.Fatalf("%+v, %v", cfg, err)
	}
	if _, err := backfiller.New(cfg, seed.Environment(), nil, boltstoretest.Open(t), quiet()); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Errorf("a Kinesis REPLAY_FROM without Retention: %v", err)
	}
}

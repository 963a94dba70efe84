package remodel_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
)

// live is a simulated table's history with an export taken part-way, and
// the stream's tail that overlaps it.
type live struct {
	h       *sim.History
	k       int // the export holds the table after the first k records
	overlap int // the tail starts that many records before the export
	full    *export.Export
}

// newLive simulates n changes over the seed domains and exports the table
// after 60 % of them, at a millisecond boundary (the export's time is its
// last change's).
func newLive(t *testing.T, seed uint64, n, overlap int) *live {
	t.Helper()
	h, err := sim.Workload{Seed: seed, Changes: n, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	root := objstore.NewDir(t.TempDir()).WithoutSync()
	k, res, err := exportgen.PartWay(context.Background(), root, h, 0.6, seed, "", "exports/app", 3)
	if err != nil {
		t.Fatal(err)
	}
	full, err := export.OpenExport(context.Background(), root, filepath.ToSlash(res.Dir), export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &live{h: h, k: k, overlap: overlap, full: full}
}

func (l *live) tail() []sim.Record { return l.h.Records[l.k-l.overlap:] }

// exercises counts what the tail holds that a remodel must get right,
// and fails t when something is missing from it: key-moving updates (an
// order's status, a player's season, a match's result), removals, TTL
// removals, re-creations, type changes, and updates of one item in one
// second (which DynamoDB Streams' times cannot order).
func (l *live) exercises(t *testing.T) {
	t.Helper()
	var moves, removes, ttl, recreates, retypes, sameSecond int
	removed := map[string]bool{}
	last := map[string]time.Time{}
	for _, r := range l.tail() {
		key := pipeline.ItemKey(r.Keys)
		if prev, ok := last[key]; ok && prev.Truncate(time.Second).Equal(r.Time.Truncate(time.Second)) {
			sameSecond++
		}
		last[key] = r.Time
		switch r.Kind {
		case pipeline.Remove:
			removes++
			removed[key] = true
			if r.TTL {
				ttl++
			}
		case pipeline.Insert:
			if removed[key] {
				recreates++
			}
		case pipeline.Modify:
			for _, a := range []string{"status", "season", "result"} {
				if str(r.Old, a) != str(r.New, a) && str(r.Old, "EntityType") == str(r.New, "EntityType") {
					moves++
				}
			}
		}
		if r.Old != nil && r.New != nil && str(r.Old, "EntityType") != str(r.New, "EntityType") {
			retypes++
		}
	}
	t.Logf("the tail: %d records, %d key-moving updates, %d removals (%d by TTL), %d re-creations, %d type changes, %d updates in the second of the item's previous one",
		len(l.tail()), moves, removes, ttl, recreates, retypes, sameSecond)
	if moves == 0 || removes == 0 || ttl == 0 || recreates == 0 || retypes == 0 || sameSecond == 0 {
		t.Fatal("the tail exercises too little")
	}
}

// form is how the tail reaches the function: Lambda on DynamoDB Streams,
// or on the Kinesis stream (duplicates, local reordering).
type form struct {
	name    string
	kinesis bool
}

func (f form) deliver(ctx context.Context, t *testing.T, l *live, e *engine.Engine) sim.Stats {
	t.Helper()
	cfg := pipeline.Config{Logger: quiet()}
	p := pipeline.NewStreamsProcessor(e, cfg)
	shards := sim.StreamsShards(l.tail())
	if f.kinesis {
		p = pipeline.NewKinesisProcessor(e, cfg)
		shards = sim.KinesisShards(sim.ToKinesis(l.tail(), 0.05, 8, sim.NewKinesisRand(l.h.Workload.Seed)))
	}
	invoke := &sim.FlakyInvoke{Invoke: p.Invoke, Seed: 23, FailBefore: 0.02, FailAfter: 0.02}
	esm := &sim.ESM{BatchSize: 40, Bisect: true, RedeliverRate: 0.05, MaxAttempts: 1000, Seed: 29}
	stats, err := esm.Run(ctx, shards, invoke.Call)
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

// backfillUntilDone runs the remodel's backfill of the export until it
// completes; store faults stop some runs, and each rerun resumes.
func backfillUntilDone(ctx context.Context, t *testing.T, l *live, r *remodel.Remodel, e *engine.Engine, st driver.Store) backfill.Summary {
	t.Helper()
	for attempt := 1; ; attempt++ {
		job, err := backfill.Open(l.full, nil, e, st, r.Set(), backfill.Options{BatchSize: 200})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := job.Run(ctx, 3)
		if err == nil {
			if !sum.Complete || sum.Failed > 0 {
				t.Fatalf("backfill: %+v", sum)
			}
			return sum
		}
		if attempt == 50 {
			t.Fatalf("backfill still failing after %d runs: %v", attempt, err)
		}
	}
}

// TestRemodelThenStream: a live table remodelled into a new key design.
// Its export, taken part-way through its history, is backfilled into the
// target; then the stream's tail — from 500 changes before the export to
// the end: key-moving updates, removals, TTL removals, re-creations, type
// changes, updates within one second — is delivered with Lambda's
// retries, bisection and redeliveries (and in the Kinesis form duplicates
// and reordering), with faults in the store throughout. The target then
// holds exactly the transform of the table's final items, and still does
// after the whole tail is delivered again; the gate agrees.
func TestRemodelThenStream(t *testing.T) {
	n := 8000
	if testing.Short() {
		n = 3000
	}
	l := newLive(t, 53, n, 500)
	l.exercises(t)
	r := mustRemodel(t, newDesign())
	want := expected(t, r, l.h.Table.Items())
	for _, f := range []form{{name: "streams"}, {name: "kinesis", kinesis: true}} {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			ts := openTarget(t, r)
			faulty := (&sim.FaultyStore{Store: ts, Seed: 31, CommitFailBefore: 0.02, CommitFailAfter: 0.02, ReadFail: 0.01}).Table(ts)
			e := openEngine(t, r, faulty, engine.Config{Logger: quiet()})
			sum := backfillUntilDone(ctx, t, l, r, e, faulty)
			first := f.deliver(ctx, t, l, e)
			sameTarget(t, "backfill, then the tail", ts, want)
			again := f.deliver(ctx, t, l, e)
			sameTarget(t, "the tail again", ts, want)
			if faulty.Faults().Total() == 0 || first.Retries+again.Retries == 0 || first.Redeliveries+again.Redeliveries == 0 {
				t.Fatalf("the delivery exercised too little: store %+v, ESM %+v %+v", faulty.Faults(), first, again)
			}
			s := e.Stats()
			t.Logf("%s: backfill %d items; engine %+v; %d target items", f.name, sum.Items, s, len(want))

			res, err := r.Check(ctx, l.full, nil, ts, remodel.CheckOptions{Now: l.h.Workload.Start.Add(-15 * 24 * time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			if !agreeButSecond(res) || res.Changed == 0 || res.Expected == 0 {
				t.Fatalf("the gate: %+v", res)
			}
		})
	}
}

package backfill_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// history is a simulated table's history, with an export taken part-way.
type history struct {
	h    *sim.History
	k    int // the export holds the table after the first k records
	dir  string
	want *projections.View // the recomputation from the final items
}

// newHistory simulates n changes over the seed domains and exports the
// table after about 70 % of them, at a millisecond boundary: the export's
// point in time is the time of its last change, and the next change comes
// later.
func newHistory(t *testing.T, n int) *history {
	t.Helper()
	h, err := sim.Workload{Seed: 41, Changes: n, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	k := n * 7 / 10
	for k < n && !h.Records[k].Time.After(h.Records[k-1].Time) {
		k++
	}
	full, _, _ := exportgen.FromHistory(h, k)
	at := h.Records[k-1].Time
	dir := t.TempDir()
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(dir).WithoutSync(),
		exportgen.Export{ID: exportgen.ExportID(at, 3), Prefix: "exports/app", Time: at, Files: 4}, func(yield func(pipeline.Item) bool) {
			for _, it := range full {
				if !yield(it) {
					return
				}
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	want, err := projections.Recompute(h.Table.Items(), "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	return &history{h: h, k: k, dir: filepath.Join(dir, filepath.FromSlash(res.Dir)), want: want}
}

// overlap is how many records before the export the stream's tail starts.
const overlap = 400

// tail returns the records the stream still holds: from overlap records
// before the export to the end.
func (hs *history) tail() []sim.Record { return hs.h.Records[hs.k-overlap:] }

// checkOverlap fails the test unless the tail's overlap with the export
// and the records after it hold what the guarantee must survive: deletes,
// re-creations, TTL removals and type changes.
func (hs *history) checkOverlap(t *testing.T) {
	t.Helper()
	var removes, ttl, recreates, retypes int
	removed := map[string]bool{}
	for _, r := range hs.h.Records[hs.k-overlap : hs.k+overlap] {
		key := pipeline.ItemKey(r.Keys)
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
		}
		if r.Old != nil && r.New != nil && typeOf(r.Old) != typeOf(r.New) {
			retypes++
		}
	}
	if removes == 0 || ttl == 0 || recreates == 0 || retypes == 0 {
		t.Fatalf("the overlap exercises too little: %d removals (%d by TTL), %d re-creations, %d type changes", removes, ttl, recreates, retypes)
	}
}

func typeOf(it pipeline.Item) string {
	v, _ := it["EntityType"].(interface{ String() string })
	if v == nil {
		return fmt.Sprint(it["EntityType"])
	}
	return v.String()
}

// delivery is how the tail reaches the store: Lambda on DynamoDB Streams or
// on the Kinesis stream, with or without the version attribute.
type delivery struct {
	name      string
	kinesis   bool
	noVersion bool
}

func (d delivery) decode() pipeline.Options {
	if d.noVersion {
		// An attribute no item has: every change is ordered without a
		// version.
		return pipeline.Options{Schema: pipeline.Schema{VersionAttribute: "noSuchVersion"}}
	}
	return pipeline.Options{}
}

func (d delivery) shards(hs *history) [][]sim.Event {
	if d.kinesis {
		return sim.KinesisShards(sim.ToKinesis(hs.tail(), 0.05, 8, sim.NewKinesisRand(hs.h.Workload.Seed)))
	}
	return sim.StreamsShards(hs.tail())
}

// stream delivers the tail into the engine through the event source
// mapping's simulation: retries, bisection, redelivered batches, failed
// invocations.
func (d delivery) stream(ctx context.Context, t *testing.T, hs *history, e *engine.Engine) sim.Stats {
	t.Helper()
	cfg := pipeline.Config{Logger: quiet(), Options: d.decode()}
	p := pipeline.NewStreamsProcessor(e, cfg)
	if d.kinesis {
		p = pipeline.NewKinesisProcessor(e, cfg)
	}
	invoke := &sim.FlakyInvoke{Invoke: p.Invoke, Seed: 13, FailBefore: 0.02, FailAfter: 0.02}
	esm := &sim.ESM{BatchSize: 50, Bisect: true, RedeliverRate: 0.05, MaxAttempts: 1000, Seed: 17}
	stats, err := esm.Run(ctx, d.shards(hs), invoke.Call)
	if err != nil {
		t.Error(err)
	}
	return stats
}

// exercised fails the test unless the deliveries retried batches and
// redelivered them.
func exercised(t *testing.T, stats ...sim.Stats) {
	t.Helper()
	var all sim.Stats
	for _, s := range stats {
		all.Add(s)
	}
	t.Logf("deliveries: %+v", all)
	if all.Retries == 0 || all.Redeliveries == 0 {
		t.Errorf("the delivery exercised too little: %+v", all)
	}
}

// backfillUntilDone runs the backfill until it completes: store faults
// fail some runs, and each rerun resumes (as a retried Lambda child, or
// an operator running the command again, would).
func backfillUntilDone(ctx context.Context, t *testing.T, hs *history, e *engine.Engine, st driver.Store, opts backfill.Options) backfill.Summary {
	t.Helper()
	full, err := export.OpenExport(ctx, objstore.NewDir(filepath.Dir(filepath.Dir(hs.dir))), "AWSDynamoDB/"+filepath.Base(hs.dir), export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		job, err := backfill.Open(full, nil, e, st, seed.Set(), opts)
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

func check(t *testing.T, stage string, st driver.Reader, want *projections.View) {
	t.Helper()
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

// TestBackfillThenStream: a table older than its stream. Its export, taken
// part-way through its history, is backfilled; then the stream's tail —
// from 400 changes before the export to the end, with deletes,
// re-creations, TTL removals and type changes inside the overlap — is
// delivered with Lambda's retries, bisection and redeliveries (and, in the
// Kinesis form, duplicates and reordering), with faults in the store
// during both. The aggregates equal the recomputation from the final
// items; so they do after the tail is delivered again. For DynamoDB
// Streams this holds without a version attribute too; for Kinesis the
// version is what orders an item's changes within a millisecond
// (TestKinesisWithoutVersionWeakSpot).
func TestBackfillThenStream(t *testing.T) {
	n := 8000
	if testing.Short() {
		n = 3000
	}
	hs := newHistory(t, n)
	hs.checkOverlap(t)
	for _, d := range []delivery{
		{name: "streams"},
		{name: "streams without version", noVersion: true},
		{name: "kinesis", kinesis: true},
	} {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			st := boltstoretest.Open(t)
			faulty := (&sim.FaultyStore{Store: st, Seed: 5, CommitFailBefore: 0.02, CommitFailAfter: 0.02, ReadFail: 0.01}).Table(st)
			e, err := faulty.Open(ctx, seed.Set(), engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}})
			if err != nil {
				t.Fatal(err)
			}
			backfillUntilDone(ctx, t, hs, e, faulty, backfill.Options{Decode: d.decode(), BatchSize: 250})
			first := d.stream(ctx, t, hs, e)
			check(t, "backfill, then the tail", st, hs.want)
			if f := faulty.Faults(); f.Total() == 0 {
				t.Fatalf("no store fault: %+v", f)
			}
			again := d.stream(ctx, t, hs, e)
			check(t, "the tail again", st, hs.want)
			exercised(t, first, again)
		})
	}
}

// TestBackfillBesideStream: the road with a shadow. The tail is delivered
// (as a shadow projector fills its table from the stream) while the
// backfill runs into the same store; then the backfill runs once more.
// Whatever the interleaving, neither overwrites what is newer.
func TestBackfillBesideStream(t *testing.T) {
	n := 8000
	if testing.Short() {
		n = 3000
	}
	hs := newHistory(t, n)
	for _, d := range []delivery{
		{name: "streams"},
		{name: "streams without version", noVersion: true},
		{name: "kinesis", kinesis: true},
	} {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			st := boltstoretest.Open(t)
			faulty := (&sim.FaultyStore{Store: st, Seed: 9, CommitFailBefore: 0.02, CommitFailAfter: 0.02, ReadFail: 0.01}).Table(st)
			e, err := faulty.Open(ctx, seed.Set(), engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}})
			if err != nil {
				t.Fatal(err)
			}
			var (
				wg    sync.WaitGroup
				stats sim.Stats
			)
			wg.Go(func() { stats = d.stream(ctx, t, hs, e) })
			backfillUntilDone(ctx, t, hs, e, faulty, backfill.Options{Decode: d.decode(), BatchSize: 100})
			wg.Wait()
			check(t, "the tail beside the backfill", st, hs.want)
			exercised(t, stats)
			backfillUntilDone(ctx, t, hs, e, faulty, backfill.Options{Decode: d.decode(), BatchSize: 100})
			check(t, "the backfill again", st, hs.want)
		})
	}
}

// TestWindowGap: which replay windows leave a gap after a backfill.
func TestWindowGap(t *testing.T) {
	asOf := time.Date(2026, 12, 1, 10, 0, 2, 314e6, time.UTC)
	now := asOf.Add(3 * time.Hour)
	m := &backfill.Marker{AsOf: asOf}
	caught := &backfill.Marker{AsOf: asOf, CaughtUp: now}
	for _, tt := range []struct {
		name      string
		m         *backfill.Marker
		start     time.Time
		retention time.Duration
		want      string
	}{
		{"no backfill", nil, asOf.Add(time.Hour), 24 * time.Hour, ""},
		{"trim horizon", m, time.Time{}, 24 * time.Hour, ""},
		{"the export's second", m, asOf.Truncate(time.Second), 24 * time.Hour, ""},
		{"before", m, asOf.Add(-time.Minute), 24 * time.Hour, ""},
		{"a second later", m, asOf.Truncate(time.Second).Add(time.Second), 24 * time.Hour, "would leave out the changes in between"},
		{"later, caught up", caught, asOf.Add(time.Hour), 24 * time.Hour, ""},
		{"stream too short", m, time.Time{}, 2 * time.Hour, "the stream keeps only 2h0m0s"},
		{"stream too short, from a time", m, asOf.Add(-time.Minute), 2 * time.Hour, "the stream keeps only 2h0m0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := backfill.WindowGap(tt.m, tt.start, tt.retention, now)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%v, want an error saying %q", err, tt.want)
			}
		})
	}
}

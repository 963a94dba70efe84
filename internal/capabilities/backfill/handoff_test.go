package backfill_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/spec"
)

// slowStore reads ledgers slowly on the job's clock: once the clock runs
// (from the guard's first reading of it), each read takes it readTime, and at every tick it passes it hands the
// guard the time, waiting until the guard takes it (or the job ends). A
// backfill on it would take longer than the stream keeps the export's
// second, on every machine alike.
type slowStore struct {
	*boltstore.Store
	CommitGroup struct{} // commit one by one, as DynamoDB does
	clock       *jobClock
}

func (s slowStore) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	if at, tick := s.clock.advance(); tick {
		select {
		case s.clock.ticks <- at:
		case <-ctx.Done():
		}
	}
	return s.Store.ReadLedgers(ctx, keys)
}

// jobClock is a backfill's time: it stands still until the guard first
// reads it (its start), then moves readTime at each ledger read and ticks
// every every after that.
type jobClock struct {
	mu        sync.Mutex
	now, next time.Time // next: the next tick
	running   bool
	readTime  time.Duration
	every     time.Duration
	ticks     chan time.Time
}

func newJobClock(readTime, every time.Duration) *jobClock {
	now := time.Now()
	return &jobClock{now: now, next: now.Add(every), readTime: readTime, every: every, ticks: make(chan time.Time)}
}

// start is the clock's time before it runs, for the test's deadline.
func (c *jobClock) start() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Now is the guard's clock: its first reading starts the clock.
func (c *jobClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running = true
	return c.now
}

// advance moves the clock by one read, and says whether it passed a tick.
func (c *jobClock) advance() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return c.now, false
	}
	c.now = c.now.Add(c.readTime)
	if c.now.Before(c.next) {
		return c.now, false
	}
	for !c.now.Before(c.next) {
		c.next = c.next.Add(c.every)
	}
	return c.now, true
}

// paymentsExport writes a payments-ledger export of n items taken at
// asOf, in files data files, and returns it opened, and the payments
// spec's set.
func paymentsExport(t *testing.T, asOf time.Time, n int, seed uint64, files int) (*export.Export, *projections.Set) {
	t.Helper()
	ctx := context.Background()
	src := objstore.NewDir(t.TempDir()).WithoutSync()
	res, err := exportgen.WriteFull(ctx, src, exportgen.Export{ID: exportgen.ExportID(asOf, seed), Time: asOf, Files: files}, exportgen.Payments(n, seed))
	if err != nil {
		t.Fatal(err)
	}
	full, err := export.OpenExport(ctx, src, res.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Parse("payments.yaml", exportgen.PaymentsSpec)
	if err != nil {
		t.Fatal(err)
	}
	set, err := sp.Set()
	if err != nil {
		t.Fatal(err)
	}
	return full, set
}

// TestHandoffGuard: on the road that catches up by replay (nothing
// attached to the store before the export), a backfill is refused when
// the stream has trimmed the export's second already, or when, at the
// rate it runs, it would finish after that; with a projector attached
// before the export the stream's trimming does not matter. While it runs
// the estimate and the headroom are emitted as metrics.
func TestHandoffGuard(t *testing.T) {
	ctx := context.Background()
	asOf := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond).UTC()
	full, set := paymentsExport(t, asOf, 3000, 5, 2)
	for _, tt := range []struct {
		name      string
		retention time.Duration
		attached  bool
		slow      bool
		slack     time.Duration // retention: the export's age and this
		refused   string        // "" : completes
	}{
		{name: "stream keeps it", retention: 24 * time.Hour},
		{name: "trimmed already", retention: time.Hour, refused: "keeps its records 1h0m0s"},
		{name: "trimmed already, shadow attached before the export", retention: time.Hour, attached: true},
		// 3,000 items, 100 a batch, at least one ledger read of 15 ms
		// a batch: 450 ms at the least, past the deadline at 350 ms; the
		// rate is sampled after 150 ms, and the estimate refuses then,
		// long before the deadline passes.
		{name: "would finish too late", slack: 350 * time.Millisecond, slow: true, refused: "items/s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := newJobClock(15*time.Millisecond, 50*time.Millisecond)
			if tt.slack > 0 {
				tt.retention = clock.start().Sub(asOf.Truncate(time.Second)) + tt.slack
			}
			bs, err := boltstore.Open(t.TempDir()+"/aggregates.db", boltstore.WithoutSync())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = bs.Close() }()
			var st driver.Table = bs
			if tt.slow {
				st = slowStore{Store: bs, clock: clock}
			}
			e, err := engine.Open(ctx, st, set, engine.Config{Logger: quiet(), Ignore: []string{"Audit"}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.attached {
				attachBefore(t, bs, asOf.Add(-time.Minute))
			}
			var metrics bytes.Buffer
			handoff := &backfill.Handoff{Retention: tt.retention, Stream: "the table's stream", Metrics: &metrics,
				Every: 50 * time.Millisecond, MinSample: 150 * time.Millisecond}
			if tt.slow {
				handoff.WithClock(clock.Now, clock.ticks)
			}
			job, err := backfill.Open(full, nil, e, st, set, backfill.Options{
				Decode: pipeline.Options{Schema: exportgen.PaymentsSchema()}, BatchSize: 100, Handoff: handoff,
			})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := job.Run(ctx, 1)
			if tt.refused == "" {
				if err != nil || !sum.Complete {
					t.Fatalf("%+v: %v", sum, err)
				}
				return
			}
			var he *backfill.HandoffError
			if !errors.As(err, &he) || !errors.Is(err, backfill.ErrRefused) || !strings.Contains(err.Error(), tt.refused) ||
				!strings.Contains(err.Error(), "Attach a shadow") || he.Headroom >= 0 {
				t.Fatalf("want a hand-off refusal saying %q, got %v", tt.refused, err)
			}
			if sum.Complete {
				t.Error("a refused job completed")
			}
			if tt.slow && he.Done*2 > he.Items {
				t.Errorf("refused with %d of %d items read: not on the estimate, sampled after 150 ms of 450, but once the deadline had passed", he.Done, he.Items)
			}
			t.Log(err)
			if !strings.Contains(metrics.String(), `"HandoffHeadroom"`) {
				t.Errorf("no HandoffHeadroom metric: %q", metrics.String())
			}
			if tt.slow && !strings.Contains(metrics.String(), `"EstimatedRemaining"`) {
				t.Errorf("no EstimatedRemaining metric: %q", metrics.String())
			}
		})
	}
}

// attachBefore rewrites st's projection-set marker as written at since:
// a shadow attached then.
func attachBefore(t *testing.T, st *boltstore.Store, since time.Time) {
	t.Helper()
	ctx := context.Background()
	const markerKey = "#tributary/projection-set" // the table layout's projection-set marker
	got, err := st.ReadLedgers(ctx, []string{markerKey})
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(got[markerKey].Body, &body); err != nil {
		t.Fatal(err)
	}
	body["since"] = since.UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(body)
	if err := st.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: markerKey, ExpectRev: got[markerKey].Rev, Body: b}}}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckHandoff: the guard of a job run in steps (the Backfill state
// machine's), from what the store records: before the job begins only the
// stream's trimming is known, and a second trimmed already refuses at
// once; once files are done, the rate is the items of the files done since
// the marker's Started, and the job is refused when, sampled long enough,
// it would finish after the trimming — not before. The estimate is emitted
// with the dimensions given. A projector attached before the export, or
// every file done, and the guard does not apply.
func TestCheckHandoff(t *testing.T) {
	ctx := context.Background()
	asOf := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond).UTC()
	full, set := paymentsExport(t, asOf, 3000, 6, 4)
	second := asOf.Truncate(time.Second)
	// open opens the job on st with a stream that keeps the export's
	// second until deadline.
	open := func(t *testing.T, st *boltstore.Store, deadline time.Time, metrics *bytes.Buffer) *backfill.Job {
		t.Helper()
		e, err := engine.Open(ctx, st, set, engine.Config{Logger: quiet(), Ignore: []string{"Audit"}})
		if err != nil {
			t.Fatal(err)
		}
		h := &backfill.Handoff{Retention: deadline.Sub(second), Stream: "kinesis://changes", Function: "backfiller"}
		if metrics != nil {
			h.Metrics = metrics
		}
		job, err := backfill.Open(full, nil, e, st, set, backfill.Options{Decode: pipeline.Options{Schema: exportgen.PaymentsSchema()}, BatchSize: 100, Handoff: h})
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	newStore := func(t *testing.T) *boltstore.Store {
		bs, err := boltstore.Open(t.TempDir()+"/aggregates.db", boltstore.WithoutSync())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bs.Close() })
		return bs
	}

	t.Run("before the job begins", func(t *testing.T) {
		now := time.Now()
		est, err := open(t, newStore(t), now.Add(time.Hour), nil).CheckHandoff(ctx, now)
		if err != nil || est == nil || est.Rate != 0 || est.Headroom != time.Hour || est.Items != 3000 {
			t.Fatalf("a stream that keeps the second an hour more: %+v, %v", est, err)
		}
		_, err = open(t, newStore(t), now.Add(-time.Minute), nil).CheckHandoff(ctx, now)
		var he *backfill.HandoffError
		if !errors.As(err, &he) || !errors.Is(err, backfill.ErrRefused) || !strings.Contains(err.Error(), "and now, 1m0s too late") {
			t.Fatalf("a second trimmed a minute ago: %v", err)
		}
	})

	t.Run("in steps", func(t *testing.T) {
		st := newStore(t)
		var metrics bytes.Buffer
		far := open(t, st, time.Now().Add(24*time.Hour), &metrics)
		if err := far.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		m, _, err := backfill.ReadMarker(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		started := m.Started
		r, err := far.File(ctx, far.Files()[0])
		if err != nil || r.Items == 0 {
			t.Fatalf("%+v, %v", r, err)
		}
		// At 2 minutes, one file of four done: the rest takes 3 times as long.
		now := started.Add(2 * time.Minute)
		est, err := far.CheckHandoff(ctx, now)
		if err != nil || est == nil || est.Done != r.Items || est.Rate != float64(r.Items)/120 {
			t.Fatalf("%+v, %v", est, err)
		}
		finish := now.Add(time.Duration(float64(3000-r.Items) / est.Rate * float64(time.Second)))
		if !est.Finish.Equal(finish) || est.Headroom != est.Deadline.Sub(finish) || est.Headroom <= 0 {
			t.Fatalf("finish %s, want %s; headroom %s", est.Finish, finish, est.Headroom)
		}
		for _, want := range []string{`"Function":"backfiller"`, `"HandoffHeadroom"`, `"EstimatedRemaining"`} {
			if !strings.Contains(metrics.String(), want) {
				t.Errorf("metrics lack %s: %s", want, metrics.String())
			}
		}
		// The same store, a stream that trims the second a minute before
		// the estimated finish: refused once the job has run a minute
		// (MinSample), not on 30 seconds' rate; none is recorded before.
		if got, err := far.Refusal(ctx); got != nil || err != nil {
			t.Fatalf("a refusal recorded before any: %v, %v", got, err)
		}
		for _, tt := range []struct {
			at      time.Duration
			refused bool
		}{{30 * time.Second, false}, {2 * time.Minute, true}} {
			now := started.Add(tt.at)
			rate := float64(r.Items) / tt.at.Seconds()
			finish := now.Add(time.Duration(float64(3000-r.Items) / rate * float64(time.Second)))
			late := open(t, st, finish.Add(-time.Minute), nil)
			est, err := late.CheckHandoff(ctx, now)
			var he *backfill.HandoffError
			if got := errors.As(err, &he); got != tt.refused || est == nil || est.Headroom >= 0 {
				t.Fatalf("at %s: refused %v, want %v: %+v, %v", tt.at, got, tt.refused, est, err)
			}
			if tt.refused && !strings.Contains(err.Error(), "items/s, ") {
				t.Errorf("the refusal does not give the estimate: %v", err)
			}
			// A refusal is recorded, for a later step to fail with.
			if got, rerr := late.Refusal(ctx); tt.refused && (rerr != nil || got == nil || got.Error() != err.Error()) {
				t.Errorf("recorded refusal %v, %v; want %v", got, rerr, err)
			}
		}
		for _, f := range far.Files()[1:] {
			if _, err := far.File(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		if est, err := open(t, st, time.Now().Add(-time.Minute), nil).CheckHandoff(ctx, time.Now()); est != nil || err != nil {
			t.Errorf("every file done: %+v, %v", est, err)
		}
	})

	t.Run("attached before the export", func(t *testing.T) {
		st := newStore(t)
		job := open(t, st, time.Now().Add(-time.Minute), nil)
		attachBefore(t, st, asOf.Add(-time.Minute))
		if est, err := job.CheckHandoff(ctx, time.Now()); est != nil || err != nil {
			t.Errorf("%+v, %v", est, err)
		}
	})
}

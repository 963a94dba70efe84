package engine_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

var update = flag.Bool("update", false, "rewrite golden files")

// scripts are per-projection histories: inserts, updates that move
// aggregates, deletes, TTL expiry, type changes and re-creations.
var scripts = map[string]func(s *stream){
	"season-standings": func(s *stream) {
		m1, m2, m3 := match("u1", "m1", "2026-Q2", "WIN", "10", 1), match("u1", "m2", "2026-Q2", "LOSS", "5", 1), match("u2", "m3", "2026-Q3", "DRAW", "7.5", 1)
		s.write(nil, m1)
		s.write(nil, m2)
		s.write(nil, m3)
		m1b := with(m1, "result", "DRAW", "score", "N:12", "version", "N:2")
		s.write(m1, m1b)
		s.write(m2, nil)
		s.write(m3, with(m3, "EntityType", "Replay", "version", "N:2")) // type change: retracted
	},
	"season-leaderboard": func(s *stream) {
		p1, p2, p3 := player("u1", "2026-Q2", "1500", 1), player("u2", "2026-Q2", "1842", 1), player("u3", "", "900", 1)
		s.write(nil, p1)
		s.write(nil, p2)
		s.write(nil, p3)
		p1b := with(p1, "rating", "N:1900", "version", "N:2")
		s.write(p1, p1b)
		s.write(p2, nil)
		s.write(p1b, with(p1b, "season", "2026-Q3", "version", "N:3"))
		s.write(p3, with(p3, "season", "2026-Q2", "version", "N:2"))
	},
	"workspace-activity": func(s *stream) {
		d1, d2 := doc("acme", "d1", 1), doc("acme", "d2", 1)
		c1, c2, c3 := comment("acme", "d1", "c1", 1), comment("acme", "d1", "c2", 1), comment("acme", "d2", "c3", 1)
		s.write(nil, d1)
		s.write(nil, d2)
		s.write(nil, c1)
		s.write(nil, c2)
		s.write(nil, c3)
		s.expire(c1)
		s.write(d2, nil)
		s.write(c3, with(c3, "EntityType", "Note", "version", "N:2"))
		s.write(nil, attrs("PK", "WS#acme", "SK", "WS#acme", "EntityType", "Workspace", "version", "N:1"))
	},
	"order-totals": func(s *stream) {
		o1, o2 := order("u1", "o1", "PENDING", "120.50", 1), order("u2", "o2", "PAID", "10.00", 1)
		s.write(nil, o1)
		s.write(nil, o2)
		o1b := with(o1, "status", "PAID", "version", "N:2")
		s.write(o1, o1b)
		o1c := with(o1b, "status", "SHIPPED", "version", "N:3")
		s.write(o1b, o1c)
		s.write(o2, nil)
		o2again := order("u2", "o2", "PENDING", "33.33", 1) // re-created: version restarts
		s.write(nil, o2again)
		s.write(o1c, with(o1c, "EntityType", "ArchivedOrder", "version", "N:4"))
	},
	"cart-contents": func(s *stream) {
		a, b := cartItem("c1", "p1", "1", 1), cartItem("c1", "p2", "2", 1)
		s.write(nil, a)
		s.write(nil, b)
		s.write(a, with(a, "quantity", "N:3", "version", "N:2"))
		s.write(b, nil)
		s.write(nil, cartItem("c2", "p1", "5", 1))
	},
}

// TestGoldenProjections applies each projection's history twice through the
// Lambda handler path and expects the golden aggregates, equal to a
// recomputation from the final items, both times.
func TestGoldenProjections(t *testing.T) {
	for _, p := range seed.All() {
		t.Run(p.Name(), func(t *testing.T) {
			s := newStream()
			scripts[p.Name()](s)
			st := boltstoretest.Open(t)
			e := newEngine(st)
			event := s.event()

			res := process(t, e, event)
			if res.Report != "" || len(res.Failed) != 0 {
				t.Fatalf("first delivery failed: %+v", res)
			}
			first := mustView(t, st)
			written := e.Stats().Items
			res = process(t, e, event)
			if res.Report != "" {
				t.Fatalf("second delivery failed: %+v", res)
			}
			if e.Stats().Items != written {
				t.Errorf("second delivery wrote %d item states, want 0", e.Stats().Items-written)
			}
			second := mustView(t, st)
			if d := projections.Diff(second, first); len(d) > 0 {
				t.Errorf("second delivery changed the aggregates:\n%s", strings.Join(d, "\n"))
			}
			want, err := projections.Recompute(s.finalItems(), "", seed.All()...)
			if err != nil {
				t.Fatal(err)
			}
			if d := projections.Diff(second, want); len(d) > 0 {
				t.Errorf("aggregates differ from the recomputation:\n%s", strings.Join(d, "\n"))
			}
			got := second.AppendJSONLines(nil)
			path := filepath.Join("testdata", "golden", p.Name()+".jsonl")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, golden) {
				t.Errorf("aggregates differ from %s:\n got:\n%s\nwant:\n%s", path, got, golden)
			}
		})
	}
}

// TestOneBatchPerChange delivers the same history one record at a time and
// in one batch: the same aggregates.
func TestOneBatchPerChange(t *testing.T) {
	s := newStream()
	for _, name := range []string{"order-totals", "season-leaderboard", "workspace-activity"} {
		scripts[name](s)
	}
	whole, single := boltstoretest.Open(t), boltstoretest.Open(t)
	process(t, newEngine(whole), s.event())
	e := newEngine(single)
	for _, r := range s.recs {
		process(t, e, []byte(`{"Records":[`+r+`]}`))
	}
	if d := projections.Diff(mustView(t, single), mustView(t, whole)); len(d) > 0 {
		t.Fatalf("record-at-a-time differs from one batch:\n%s", strings.Join(d, "\n"))
	}
}

// TestOutOfOrderAndTombstones feeds Kinesis-style deliveries: newer before
// older, duplicates, and an insert arriving after the item's deletion.
func TestOutOfOrderAndTombstones(t *testing.T) {
	ctx := context.Background()
	s := newStream()
	o1 := order("u1", "o1", "PENDING", "50", 1)
	o1b := with(o1, "status", "PAID", "version", "N:2")
	s.write(nil, o1)
	s.write(o1, o1b)
	s.write(o1b, nil)
	changes, err := pipeline.DecodeStreamsEvent(s.event(), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// As if read from Kinesis: no DynamoDB sequence numbers, ms times.
	for i := range changes {
		changes[i].Position.Source = pipeline.SourceKinesis
		changes[i].Precision = pipeline.Millisecond
	}
	st := boltstoretest.Open(t)
	e := newEngine(st)
	for _, order := range [][]int{{1}, {0}, {1, 0}, {2}, {0, 1}} {
		batch := make([]pipeline.Change, len(order))
		for i, j := range order {
			batch[i] = changes[j]
		}
		if err := e.HandleBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if v := mustView(t, st); len(v.Aggregates) != 0 {
		t.Fatalf("deleted order still counted: %s", v.AppendJSONLines(nil))
	}
	// {0} is older than the applied v2; {1,0} coalesces to v2, already
	// applied (the one repeated: its ledger entry is this very change);
	// {0,1} coalesces to v2, older than the tombstone.
	if st := e.Stats(); st.Stale != 3 || st.Superseded != 2 || st.Repeated != 1 {
		t.Errorf("stale %d superseded %d repeated %d, want 3, 2 and 1", st.Stale, st.Superseded, st.Repeated)
	}
}

type failing struct{ projections.Projection }

func (f failing) Contribute(item pipeline.Item) (projections.Contribution, error) {
	if s, ok := item["status"]; ok && string(pipeline.AppendValue(nil, s)) == `{"S":"BROKEN"}` {
		panic("projection bug")
	}
	return f.Projection.Contribute(item)
}

// TestPoisonStopsAtTheRecord checks that an item a projection cannot handle
// stops the batch at that record, with everything before it applied.
func TestPoisonStopsAtTheRecord(t *testing.T) {
	s := newStream()
	s.write(nil, order("u1", "o1", "PAID", "1", 1))
	s.write(nil, order("u2", "o2", "PAID", "2", 1))
	s.write(nil, order("u3", "o3", "BROKEN", "3", 1))
	s.write(nil, order("u4", "o4", "PAID", "4", 1))
	st := boltstoretest.Open(t)
	e := engine.New(st, engine.Config{Logger: quiet()}, failing{seed.All()[3]})
	res := process(t, e, s.event())
	if len(res.Failed) != 1 || res.Report != "4421584500000000017450000300" {
		t.Fatalf("result %+v, want the third record reported", res)
	}
	if !errors.Is(res.Failed[0].Err, pipeline.ErrPermanent) {
		t.Errorf("a projection panic should be permanent: %v", res.Failed[0].Err)
	}
	v := mustView(t, st)
	if got := v.Aggregates[projections.AggregateKey{Projection: "order-totals", Key: "ORDERS#PAID"}]["orders"].String(); got != "2" {
		t.Errorf("orders before the poison = %s, want 2", got)
	}
}

// staleReads returns no ledger entries on its first read, as an eventually
// consistent read may: the commit's conditions must catch it.
type staleReads struct {
	driver.Store
	reads int
}

func (s *staleReads) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	s.reads++
	if s.reads == 2 {
		return map[string]driver.LedgerEntry{}, nil
	}
	return s.Store.ReadLedgers(ctx, keys)
}

func TestStaleReadIsCaughtByTheLedgerCondition(t *testing.T) {
	s := newStream()
	o := order("u1", "o1", "PENDING", "10", 1)
	s.write(nil, o)
	first := s.event()
	s.recs = nil
	s.write(o, with(o, "status", "PAID", "version", "N:2"))
	st := boltstoretest.Open(t)
	e := newEngine(&staleReads{Store: st})
	process(t, e, first)
	process(t, e, s.event())
	if e.Stats().Conflicts != 1 {
		t.Errorf("conflicts = %d, want 1", e.Stats().Conflicts)
	}
	want, _ := projections.Recompute(s.finalItems(), "", seed.All()...)
	if d := projections.Diff(mustView(t, st), want); len(d) > 0 {
		t.Fatalf("after a stale read:\n%s", strings.Join(d, "\n"))
	}
}

// contended refuses the first n commits with projections.ErrContention.
type contended struct {
	driver.Store
	n, commits int
}

func (s *contended) Commit(ctx context.Context, tx *driver.Tx) error {
	if s.commits++; s.commits <= s.n {
		return fmt.Errorf("commit %d: %w", s.commits, driver.ErrContention)
	}
	return s.Store.Commit(ctx, tx)
}

// TestContentionBacksOff: a commit refused for contention is retried after
// an exponential wait with equal jitter (20 ms doubling to 2 s: each wait in
// [c/2, c] under its ceiling c), up to MaxAttempts commits; a Sleep that
// fails ends the retries with its error, unchanged.
func TestContentionBacksOff(t *testing.T) {
	s := newStream()
	s.write(nil, order("u1", "o1", "PAID", "10", 1))
	tests := []struct {
		name      string
		refusals  int
		sleepErr  error
		wantWaits int // no wait after the last attempt
		wantErr   error
		// wantContention counts the refusals the engine saw.
		wantContention int64
	}{
		{"applied after seven refusals", 7, nil, 7, nil, 7},
		{"gives up after eight", 8, nil, 7, driver.ErrContention, 8},
		{"stops at a canceled sleep", 3, context.Canceled, 1, context.Canceled, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Many runs: a wait outside the range shows up in some draw.
			for run := range 50 {
				var waits []time.Duration
				st := &contended{Store: boltstoretest.Open(t), n: tt.refusals}
				e := engine.New(st, engine.Config{Logger: quiet(), MaxAttempts: 8, Sleep: func(ctx context.Context, d time.Duration) error {
					waits = append(waits, d)
					return tt.sleepErr
				}}, seed.All()...)
				changes, err := pipeline.DecodeStreamsEvent(s.event(), pipeline.Options{})
				if err != nil {
					t.Fatal(err)
				}
				err = e.HandleBatch(context.Background(), changes)
				if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("run %d: err = %v, want %v", run, err, tt.wantErr)
				}
				if tt.sleepErr != nil && !errors.Is(err, tt.sleepErr) {
					t.Fatalf("run %d: err = %v, want the sleep's own error", run, err)
				}
				if len(waits) != tt.wantWaits {
					t.Fatalf("run %d: %d waits %v, want %d", run, len(waits), waits, tt.wantWaits)
				}
				for i, d := range waits {
					c := min(2*time.Second, 20*time.Millisecond<<i)
					if d < c/2 || d > c {
						t.Fatalf("run %d: wait %d = %v, want in [%v, %v] (all: %v)", run, i, d, c/2, c, waits)
					}
				}
				if got := e.Stats().Contention; got != tt.wantContention {
					t.Errorf("run %d: Stats.Contention = %d, want %d", run, got, tt.wantContention)
				}
			}
		})
	}
}

// billed is a store that estimates every commit at 2.5 write units.
type billed struct {
	driver.Store
	estimates int
}

func (b *billed) WriteUnits(tx *driver.Tx) float64 {
	b.estimates++
	return 2.5
}

// bare hides every capability of a store but the Store interface.
type bare struct{ driver.Store }

// TestWriteUnitsComeFromTheStore: the engine counts the write units its
// store estimates for each commit it attempts (projections.WriteUnitEstimator),
// and none for a store that makes no estimate.
func TestWriteUnitsComeFromTheStore(t *testing.T) {
	s := newStream()
	s.write(nil, order("u1", "o1", "PAID", "10", 1))
	s.write(nil, order("u2", "o2", "PENDING", "5", 1))
	s.write(nil, player("p1", "2026-Q2", "1500", 1))
	tests := []struct {
		name  string
		store func(driver.Store) driver.Store
		want  func(st driver.Store) float64
	}{
		{"estimating store", func(st driver.Store) driver.Store { return &billed{Store: st} },
			func(st driver.Store) float64 { return 2.5 * float64(st.(*billed).estimates) }},
		{"store without an estimate", func(st driver.Store) driver.Store { return bare{st} },
			func(driver.Store) float64 { return 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.store(boltstoretest.Open(t))
			e := newEngine(st)
			process(t, e, s.event())
			stats := e.Stats()
			if stats.Transactions == 0 {
				t.Fatal("nothing committed")
			}
			if want := tt.want(st); stats.WriteUnits != want {
				t.Errorf("Stats.WriteUnits = %v, want %v", stats.WriteUnits, want)
			}
			if b, ok := st.(*billed); ok && int64(b.estimates) != stats.Transactions {
				t.Errorf("%d estimates for %d commits", b.estimates, stats.Transactions)
			}
		})
	}
}

// An insert or a modify without a new image (from a record that does not
// say its view type) is refused as permanent: applied, it would retract
// what the item contributes. The engine says it needs new images.
func TestChangeWithoutNewImage(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	e := newEngine(st)
	if need := e.ImageNeed(); need.Images != pipeline.NewImages || need.Why == "" {
		t.Fatalf("ImageNeed = %+v", need)
	}
	o := order("u1", "o1", "PAID", "120.50", 1)
	insert := pipeline.Change{Kind: pipeline.Insert, Keys: keysOf(o), New: o, NewType: "Order", Version: 1, HasVersion: true}
	if err := e.HandleBatch(ctx, []pipeline.Change{insert}); err != nil {
		t.Fatal(err)
	}
	before := mustView(t, st)
	modify := pipeline.Change{Kind: pipeline.Modify, Keys: keysOf(o), Version: 2, HasVersion: true}
	err := e.HandleBatch(ctx, []pipeline.Change{modify})
	var be *pipeline.BatchError
	if !errors.As(err, &be) || be.Index != 0 || !errors.Is(err, pipeline.ErrPermanent) || !strings.Contains(err.Error(), "no new image") {
		t.Fatalf("err = %v; want a permanent failure of change 0 saying it has no new image", err)
	}
	if d := projections.Diff(mustView(t, st), before); len(d) > 0 {
		t.Errorf("the refused change moved aggregates: %v", d)
	}
}

package replay_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/internal/capabilities/replay"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
	"github.com/tributary/tributary/pipeline/shardread/shardreadtest"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var ignored = []string{"User", "Workspace", "Cart"}

// newEngine opens an engine of ps (default the seed projections) over st;
// a failure is a mistake in the test's wiring.
func newEngine(st driver.Table, ps ...projections.Projection) *engine.Engine {
	if ps == nil {
		ps = seed.All()
	}
	e, err := engine.Open(context.Background(), st, projections.MustSet(ps...), engine.Config{Logger: quiet(), Ignore: ignored})
	if err != nil {
		panic(err)
	}
	return e
}

func history(t testing.TB, seedN uint64, n int) *sim.History {
	t.Helper()
	h, err := sim.Workload{Seed: seedN, Changes: n, Skew: 1.0, Shards: 3}.Run()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// kinesisMem writes records into an in-memory stream as DynamoDB's
// streaming destination would, each arriving at its Kinesis arrival time.
func kinesisMem(recs []sim.KinesisRecord, shards int) *shardreadtest.Mem {
	m := shardreadtest.NewMem("app-changes", shards)
	var now time.Time
	m.Now = func() time.Time { return now }
	for i := range recs {
		now = recs[i].Arrival
		m.Put(recs[i].PartitionKey, sim.AppendKinesisPayload(nil, &recs[i].Record))
	}
	m.Now = time.Now
	return m
}

func mustView(t testing.TB, r driver.Reader) *projections.View {
	t.Helper()
	v, err := projections.ReadView(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func checkExact(t *testing.T, stage string, st driver.Reader, want *projections.View) {
	t.Helper()
	if d := projections.Diff(mustView(t, st), want); len(d) > 0 {
		t.Fatalf("%s: %d differences from the recomputation:\n%s", stage, len(d), strings.Join(d[:min(len(d), 15)], "\n"))
	}
}

func run(t *testing.T, cfg replay.Config) replay.Summary {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	if cfg.Reader.Logger == nil {
		cfg.Reader.Logger = quiet()
	}
	sum, err := replay.New(cfg).Run(context.Background())
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return sum
}

// counting counts the aggregate and row writes that reach a store.
type counting struct {
	driver.Table
	writes atomic.Int64
}

func (c *counting) Commit(ctx context.Context, tx *driver.Tx) error {
	err := c.Table.Commit(ctx, tx)
	if err == nil {
		c.writes.Add(int64(len(tx.Adds) + len(tx.Puts) + len(tx.Deletes)))
	}
	return err
}

// TestReplayIsExactAndIdempotent replays a Kinesis stream with duplicated
// and reordered records, and the clean stream, into two stores: both equal
// the recomputation from the final items. The same window again writes
// nothing; an overlapping window (from a time in the middle) writes no
// aggregate or row either. (It may move a ledger entry forward: an item
// whose last change is to a type no projection reads, met in one batch with
// an earlier change that was projected, records the newer token.)
func TestReplayIsExactAndIdempotent(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1500
	}
	h := history(t, 3, n)
	want, err := projections.Recompute(h.Table.Items(), "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	clean := sim.ToKinesis(h.Records, 0, 1, sim.NewKinesisRand(3))
	messy := sim.ToKinesis(h.Records, 0.1, 12, sim.NewKinesisRand(3))
	for _, tc := range []struct {
		name string
		recs []sim.KinesisRecord
	}{{"clean", clean}, {"duplicated-reordered", messy}} {
		t.Run(tc.name, func(t *testing.T) {
			m := kinesisMem(tc.recs, 3)
			st := boltstoretest.Open(t)
			cs := &counting{Table: st}
			e := newEngine(cs)
			cfg := replay.Config{Source: m, Handler: e, Reader: shardread.Config{BatchSize: 250}}
			sum := run(t, cfg)
			checkExact(t, "first replay", st, want)
			if sum.Read.Records != int64(len(tc.recs)) || sum.Failed != 0 || !sum.CaughtUp {
				t.Fatalf("summary %+v: want %d records, none failed, caught up", sum, len(tc.recs))
			}
			before, writes := e.Stats(), cs.writes.Load()

			run(t, cfg) // the same window again
			checkExact(t, "same window again", st, want)
			if after := e.Stats(); after.Items != before.Items || after.Stale == before.Stale {
				t.Errorf("the same window again wrote %d item states (want none), skipped %d as applied", after.Items-before.Items, after.Stale-before.Stale)
			}
			mid := tc.recs[len(tc.recs)/2].Arrival
			cfg.Reader.Start = shardread.Start{Type: shardread.AtTimestamp, Time: mid}
			sum = run(t, cfg) // an overlapping window
			checkExact(t, "overlapping window", st, want)
			if w := cs.writes.Load() - writes; w != 0 {
				t.Errorf("replaying again wrote %d aggregates or rows; want none", w)
			}
			if sum.Read.Records >= int64(len(tc.recs)) || sum.Read.Records == 0 {
				t.Errorf("overlapping window read %d of %d records", sum.Read.Records, len(tc.recs))
			}
		})
	}
}

// TestInterruptedReplayResumes stops replays in the middle — a cancelled
// context, then a record limit — and resumes each from its checkpoint: the
// records read add up to the stream, and the aggregates are exact.
func TestInterruptedReplayResumes(t *testing.T) {
	h := history(t, 5, 3000)
	want, _ := projections.Recompute(h.Table.Items(), "", seed.All()...)
	recs := sim.ToKinesis(h.Records, 0.05, 8, sim.NewKinesisRand(5))
	m := kinesisMem(recs, 3)
	st := boltstoretest.Open(t)
	e := newEngine(st)
	cps := checkpoint.NewDir(t.TempDir())
	job := checkpoint.JobID("mem", "TRIM_HORIZON")

	ctx, cancel := context.WithCancel(context.Background())
	var handled atomic.Int64
	stopping := pipeline.BatchHandlerFunc(func(ctx context.Context, changes []pipeline.Change) error {
		if err := e.HandleBatch(ctx, changes); err != nil {
			return err
		}
		if handled.Add(int64(len(changes))) > 700 {
			cancel()
		}
		return nil
	})
	cfg := replay.Config{Source: m, Handler: stopping, Checkpoints: cps, Job: job, Logger: quiet(), Reader: shardread.Config{BatchSize: 100, Logger: quiet()}}
	sum1, err := replay.New(cfg).Run(ctx)
	if !errors.Is(err, context.Canceled) || sum1.Resumed || sum1.Finished || sum1.CaughtUp {
		t.Fatalf("first run: %+v, %v; want cancelled", sum1, err)
	}
	cp, err := cps.Load(context.Background(), job)
	if err != nil || len(cp.Shards) == 0 {
		t.Fatalf("checkpoint after the interruption: %+v, %v", cp, err)
	}

	cfg.Handler = e
	cfg.Reader.MaxRecords = 900
	sum2 := run(t, cfg)
	if !sum2.Resumed || !sum2.Read.Limited || sum2.Read.Records != 900 {
		t.Fatalf("second run: %+v; want resumed and stopped at 900 records", sum2)
	}
	cfg.Reader.MaxRecords = 0
	sum3 := run(t, cfg)
	if !sum3.Resumed || !sum3.CaughtUp {
		t.Fatalf("third run: %+v", sum3)
	}
	checkExact(t, "after resuming", st, want)
	if total := sum1.Read.Records + sum2.Read.Records + sum3.Read.Records; total != int64(len(recs)) {
		t.Errorf("records read over the three runs: %d + %d + %d = %d, want %d (each once)",
			sum1.Read.Records, sum2.Read.Records, sum3.Read.Records, total, len(recs))
	}
	// Caught up, run again: nothing new.
	if sum4 := run(t, cfg); sum4.Read.Records != 0 {
		t.Errorf("a fourth run read %d records", sum4.Read.Records)
	}
	// --restart reads everything again (and changes nothing).
	cfg.Restart = true
	if sum5 := run(t, cfg); sum5.Resumed || sum5.Read.Records != int64(len(recs)) {
		t.Errorf("restart: %+v", sum5)
	}
	checkExact(t, "after a restart", st, want)
}

// outage fails every commit while down is set.
type outage struct {
	driver.Table
	down    atomic.Bool
	commits atomic.Int64
	after   int64 // goes down at this commit
}

var errOutage = errors.New("store unavailable")

func (o *outage) Commit(ctx context.Context, tx *driver.Tx) error {
	if o.commits.Add(1) == o.after {
		o.down.Store(true)
	}
	if o.down.Load() {
		return errOutage
	}
	return o.Table.Commit(ctx, tx)
}

// TestStoreFailuresStopAndResume: commits that fail now and then (before
// or after they are written) are absorbed by bisecting the batch; an outage
// stops the replay at the last batch applied; after it, the replay resumes.
// The aggregates are exact.
func TestStoreFailuresStopAndResume(t *testing.T) {
	h := history(t, 9, 2000)
	want, _ := projections.Recompute(h.Table.Items(), "", seed.All()...)
	m := kinesisMem(sim.ToKinesis(h.Records, 0.05, 8, sim.NewKinesisRand(9)), 2)
	st := boltstoretest.Open(t)
	out := &outage{Table: st, after: 60}
	faulty := &sim.FaultyStore{Store: out, Seed: 4, CommitFailBefore: 0.02, CommitFailAfter: 0.02}
	e, err := engine.Open(context.Background(), faulty.Table(st), seed.Set(), engine.Config{Logger: quiet(), Ignore: ignored, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	cfg := replay.Config{Source: m, Handler: e, Checkpoints: checkpoint.NewDir(t.TempDir()), Job: "replay-faulty", Logger: quiet(),
		Reader: shardread.Config{BatchSize: 50, Logger: quiet()}}
	// A change whose commit fails on its own stops a replay, as it should;
	// when that failure is an injected one, rerunning resumes past it. Which
	// commits the dice fail depends on how the two shards interleave, so
	// such stops come now and then, before or after the outage.
	var bisections, read int64
	runThroughFaults := func() (replay.Summary, error) {
		for range 20 {
			sum, err := replay.New(cfg).Run(context.Background())
			bisections += sum.Bisections
			read += sum.Read.Records
			if !errors.Is(err, sim.ErrInjected) {
				return sum, err
			}
		}
		t.Fatal("stopped by injected faults 20 times in a row")
		return replay.Summary{}, nil
	}
	first, err := runThroughFaults()
	if !errors.Is(err, errOutage) || read == 0 {
		t.Fatalf("during the outage (%d records read before it): %+v, %v", read, first.Read, err)
	}
	out.down.Store(false)
	sum, err := runThroughFaults()
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !sum.Resumed || !sum.CaughtUp {
		t.Fatalf("after the outage: %+v", sum)
	}
	if f := faulty.Faults(); f.Total() == 0 || bisections == 0 {
		t.Fatalf("no fault injected or absorbed: %+v, %d bisections", f, bisections)
	}
	checkExact(t, "after the faults", st, want)
}

// TestPoisonRecordsArePassedOverAndListed: an undecodable record and an
// item a projection rejects are failures, listed with their positions; the
// rest is applied and the checkpoint moves past them.
func TestPoisonRecordsArePassedOverAndListed(t *testing.T) {
	m := shardreadtest.NewMem("s", 1)
	m.Put("A", shardreadtest.Payload("A", 1, time.Now()))
	m.Put("X", []byte(`{"eventName":"INSERT","dynamodb":`)) // truncated
	bad := sim.Record{Kind: pipeline.Insert, Time: time.Now(), EventID: "0123456789abcdef0123456789abcdef",
		Keys: pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "USER#u1"}, "SK": &types.AttributeValueMemberS{Value: "ORDER#2026-11-30#o1"}},
		New: pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "USER#u1"}, "SK": &types.AttributeValueMemberS{Value: "ORDER#2026-11-30#o1"},
			"EntityType": &types.AttributeValueMemberS{Value: "Order"}, "status": &types.AttributeValueMemberS{Value: "LOST"},
			"total": &types.AttributeValueMemberN{Value: "1"}, "orderDate": &types.AttributeValueMemberS{Value: "2026-11-30"},
			"version": &types.AttributeValueMemberN{Value: "1"}}}
	m.Put("USER#u1", sim.AppendKinesisPayload(nil, &bad))
	good := bad
	good.New = pipeline.Item{}
	for k, v := range bad.New {
		good.New[k] = v
	}
	good.Keys = pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "USER#u2"}, "SK": bad.Keys["SK"]}
	good.New["PK"], good.New["status"] = good.Keys["PK"], &types.AttributeValueMemberS{Value: "PAID"}
	m.Put("USER#u2", sim.AppendKinesisPayload(nil, &good))

	st := boltstoretest.Open(t)
	cps := checkpoint.NewDir(t.TempDir())
	sum := run(t, replay.Config{Source: m, Handler: newEngine(st), Checkpoints: cps, Job: "replay-poison"})
	if sum.Failed != 2 || len(sum.Failures) != 2 || sum.Read.Records != 4 {
		t.Fatalf("summary %+v: want 2 of 4 records failed", sum)
	}
	if f := sum.Failures[0]; f.Seq == "" || f.Shard == "" || !errors.Is(f.Err, pipeline.ErrPermanent) {
		t.Errorf("undecodable record: %+v", f)
	}
	if f := sum.Failures[1]; f.EntityType != "Order" || !strings.Contains(f.Item, "USER#u1") || !strings.Contains(f.Err.Error(), "LOST") {
		t.Errorf("rejected record: %+v", f)
	}
	v := mustView(t, st)
	if got := v.Aggregates[projections.AggregateKey{Projection: "order-totals", Key: "ORDERS#PAID#DAY#2026-11-30"}]; got["orders"].String() != "1" {
		t.Errorf("the good order was not applied: %v", v.Aggregates)
	}
	cp, _ := cps.Load(context.Background(), "replay-poison")
	for _, p := range cp.Shards {
		if p.Seq != sum.Shards["shardId-000000000000"].Seq || p.Seq == "" {
			t.Errorf("checkpoint %+v does not pass the failures", cp.Shards)
		}
	}
}

// TestDryRunWritesNothing: a dry run decides as a replay would — items to
// write, changes already applied — and leaves the store and the checkpoint
// as they were.
func TestDryRunWritesNothing(t *testing.T) {
	h := history(t, 11, 1500)
	m := kinesisMem(sim.ToKinesis(h.Records, 0.05, 8, sim.NewKinesisRand(11)), 2)
	st := boltstoretest.Open(t)
	cps := checkpoint.NewDir(t.TempDir())
	dry := engine.NewDryRun(st)
	e := newEngine(dry)
	sum := run(t, replay.Config{Source: m, Handler: e, Checkpoints: cps, Job: "replay-dry", ReadOnly: true})
	if v := mustView(t, st); len(v.Aggregates) != 0 || len(v.Rows) != 0 {
		t.Fatalf("a dry run wrote %d aggregates", len(v.Aggregates))
	}
	if _, err := cps.Load(context.Background(), "replay-dry"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("a dry run saved a checkpoint: %v", err)
	}
	txs, actions := dry.Counts()
	if s := e.Stats(); s.Items == 0 || txs == 0 || actions < txs || sum.Read.Records == 0 {
		t.Errorf("engine %+v, %d txs, %d actions: the dry run decided nothing", s, txs, actions)
	}
	// The real run writes what the dry run said it would (same batches).
	real := newEngine(st)
	run(t, replay.Config{Source: m, Handler: real})
	if a, b := real.Stats().Items, e.Stats().Items; a != b {
		t.Errorf("the replay wrote %d item states, the dry run predicted %d", a, b)
	}
	// And costs what the dry run estimated: DryRun passes on the store's
	// write-unit estimate.
	if a, b := real.Stats().WriteUnits, e.Stats().WriteUnits; a != b || b == 0 {
		t.Errorf("the replay cost %v write units, the dry run estimated %v", a, b)
	}
}

// limited refuses transactions over DynamoDB's 100 actions, as
// TransactWriteItems does.
type limited struct {
	driver.Table
	refused atomic.Int64
}

func (l *limited) Commit(ctx context.Context, tx *driver.Tx) error {
	if tx.Len() > driver.MaxTxActions {
		l.refused.Add(1)
		return errors.New("transaction over 100 actions refused")
	}
	return l.Table.Commit(ctx, tx)
}

// TestFailedBatchesAreBisected: a batch the store refuses is applied in
// halves, as Lambda bisects; the replay completes and is exact. (The
// engine's chunking can still plan a transaction over 100 actions when an
// item's aggregates were counted against the previous chunk; this keeps
// replays going meanwhile.)
func TestFailedBatchesAreBisected(t *testing.T) {
	h := history(t, 31, 8000)
	want, _ := projections.Recompute(h.Table.Items(), "", seed.All()...)
	m := kinesisMem(sim.ToKinesis(h.Records, 0.02, 8, sim.NewKinesisRand(31)), 4)
	st := boltstoretest.Open(t)
	ls := &limited{Table: st}
	sum := run(t, replay.Config{Source: m, Handler: newEngine(ls), Reader: shardread.Config{BatchSize: 1000}})
	checkExact(t, "bisected replay", st, want)
	if ls.refused.Load() > 0 && sum.Bisections == 0 {
		t.Errorf("%d transactions refused, no bisection", ls.refused.Load())
	}
	t.Logf("%d oversized transactions refused, %d bisections", ls.refused.Load(), sum.Bisections)
}

package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// simChanges is the size of the exactly-once simulations. -short runs a
// tenth of it.
const simChanges = 100_000

// source is one way changes reach the engine: Lambda on DynamoDB Streams, or
// Lambda on the Kinesis stream DynamoDB's destination feeds.
type source struct {
	name      string
	shards    func(h *sim.History) [][]sim.Event
	processor func(h pipeline.BatchHandler, cfg pipeline.Config) *pipeline.Processor
}

var sources = []source{
	{"streams", func(h *sim.History) [][]sim.Event { return sim.StreamsShards(h.Records) }, pipeline.NewStreamsProcessor},
	{"kinesis", func(h *sim.History) [][]sim.Event {
		// Duplicates and local reordering, as the streaming destination may produce.
		return sim.KinesisShards(sim.ToKinesis(h.Records, 0.05, 8, sim.NewKinesisRand(h.Workload.Seed)))
	}, pipeline.NewKinesisProcessor},
}

// TestExactlyOnce drives a seeded workload over the seed domains (hot and
// cold keys, status changes, deletes and re-creations, TTL expiries, type
// changes) through a simulation of Lambda's event source mapping — batches
// per shard, partial-batch resumption, bisection, whole-batch redelivery —
// with faults injected into the store (failed commits, commits applied whose
// acknowledgement is lost, failed reads) and into invocations. Then it
// replays the whole history twice and a window once. After each stage the
// aggregates must equal a recomputation from the table's final items.
func TestExactlyOnce(t *testing.T) {
	h, want := exactlyOnceWorkload(t)
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) { deliverExactlyOnce(t, src, h, want, seed.All()...) })
	}
}

// exactlyOnceWorkload returns TestExactlyOnce's history and the seed
// projections' recomputation from its final items.
func exactlyOnceWorkload(t *testing.T) (*sim.History, *projections.View) {
	t.Helper()
	n := simChanges
	if testing.Short() {
		n /= 10
	}
	h, err := sim.Workload{Seed: 7, Changes: n, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	want, err := projections.Recompute(h.Table.Items(), "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Aggregates) < 100 || len(want.Rows) < 10 {
		t.Fatalf("workload too thin to prove anything: %d aggregates, %d rows", len(want.Aggregates), len(want.Rows))
	}
	return h, want
}

// deliverExactlyOnce runs TestExactlyOnce's delivery of h from src into a
// fresh store for an engine of ps — the same faults, retries, replays and
// checks against want after each stage, whatever the projections — and
// returns the store.
func deliverExactlyOnce(t *testing.T, src source, h *sim.History, want *projections.View, ps ...projections.Projection) driver.Reader {
	t.Helper()
	ctx := context.Background()
	st := boltstoretest.Open(t)
	faulty := &sim.FaultyStore{Store: st, Seed: 11, CommitFailBefore: 0.02, CommitFailAfter: 0.02, ReadFail: 0.01}
	e := engine.New(faulty, engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}}, ps...)
	p := src.processor(e, pipeline.Config{Logger: quiet()})
	invoke := &sim.FlakyInvoke{Invoke: p.Invoke, Seed: 13, FailBefore: 0.01, FailAfter: 0.01}
	esm := &sim.ESM{BatchSize: 100, Bisect: true, RedeliverRate: 0.05, MaxAttempts: 1000, Seed: 17}
	shards := src.shards(h)

	check := func(stage string) {
		t.Helper()
		if d := projections.Diff(mustView(t, st), want); len(d) > 0 {
			if len(d) > 20 {
				d = append(d[:20], "...")
			}
			t.Fatalf("%s: aggregates differ from the recomputation:\n%s", stage, strings.Join(d, "\n"))
		}
	}
	stats, err := esm.Run(ctx, shards, invoke.Call)
	if err != nil {
		t.Fatal(err)
	}
	check("first delivery")
	f := faulty.Faults()
	if f.Total() == 0 || stats.Retries == 0 || stats.Bisections == 0 || stats.Redeliveries == 0 || stats.PartialFailures == 0 {
		t.Fatalf("the simulation exercised too little: faults %+v, ESM %+v", f, stats)
	}
	t.Logf("%s: %d records, ESM %+v, store faults %+v, engine %+v", src.name, len(h.Records), stats, f, e.Stats())

	for i := 1; i <= 2; i++ {
		if _, err := esm.Replay(ctx, shards, invoke.Call); err != nil {
			t.Fatal(err)
		}
		check("full replay")
	}
	if _, err := esm.ReplayWindow(ctx, shards, len(shards[0])/3, len(shards[0])/2, invoke.Call); err != nil {
		t.Fatal(err)
	}
	check("window replay")
	return st
}

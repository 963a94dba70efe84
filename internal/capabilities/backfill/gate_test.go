package backfill_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/capabilities/verify/verifytest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// TestGateWhileWritesGoOn: the gate compares a store with the
// recomputation from an export while the stream goes on changing it. A
// store backfilled from the export and then fed part of the stream's tail
// agrees, with the items changed since the export told apart by their
// state; a delta lost or added twice on an aggregate is a difference
// naming it; a backfill whose partials are not folded is not ready.
func TestGateWhileWritesGoOn(t *testing.T) {
	ctx := context.Background()
	hs := newHistory(t, 3000)
	st := boltstoretest.Open(t)
	e, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}})
	if err != nil {
		t.Fatal(err)
	}
	backfillUntilDone(ctx, t, hs, e, st, backfill.Options{BatchSize: 200})
	// The stream from before the export to 300 changes after it.
	part := hs.h.Records[hs.k-overlap : hs.k+300]
	p := pipeline.NewStreamsProcessor(e, pipeline.Config{Logger: quiet()})
	esm := &sim.ESM{BatchSize: 100, MaxAttempts: 10, Seed: 3}
	if _, err := esm.Run(ctx, sim.StreamsShards(part), p.Invoke); err != nil {
		t.Fatal(err)
	}

	full, err := export.OpenExport(ctx, objstore.NewDir(filepath.Dir(filepath.Dir(hs.dir))), "AWSDynamoDB/"+filepath.Base(hs.dir), export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gate := func() *verify.Result {
		t.Helper()
		res, err := verify.AsOf(ctx, full, nil, st, pipeline.Options{}, false, seed.All()...)
		if err != nil {
			t.Fatal(err)
		}
		// The same check with the keys of the items changed since spilled
		// and joined, and every partition cut smaller before it is read,
		// finds the same.
		cut, err := verify.Check(ctx, full, nil, st, verify.Options{NewerInMemory: -1, PartitionBytes: 4 << 10, Dir: t.TempDir()}, seed.All()...)
		if err != nil {
			t.Fatal(err)
		}
		if cut.Spilled == 0 {
			t.Errorf("spilled %d bytes", cut.Spilled)
		}
		cut.Spilled = res.Spilled
		if !reflect.DeepEqual(cut, res) {
			t.Errorf("spilled and cut:\n%+v\nheld:\n%+v", cut, res)
		}
		// The same check cut into the Verify state machine's steps, the
		// table read in three segments, finds the same.
		parted := verifytest.RunParted(ctx, t, full, nil, st, verify.Options{PartitionBytes: 4 << 10, Dir: t.TempDir()}, 3, 4, seed.All()...)
		parted.Spilled = res.Spilled
		if !reflect.DeepEqual(parted, res) {
			t.Errorf("parted:\n%+v\nheld:\n%+v", parted, res)
		}
		return res
	}
	res := gate()
	if len(res.Differences) > 0 || res.Changed == 0 || len(res.Unfolded) > 0 || res.Items == 0 {
		t.Fatalf("gate: %d differences (%v), %d changed, %d unfolded, %d items", len(res.Differences), res.Differences[:min(len(res.Differences), 5)], res.Changed, len(res.Unfolded), res.Items)
	}
	// A plain recomputation from the export sees the changes as drift.
	want, _, err := verify.Recompute(ctx, full, nil, pipeline.Options{}, false, seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := projections.ReadView(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(projections.Diff(got, want)) == 0 {
		t.Fatal("the tail changed nothing the projections read: the test proves nothing")
	}

	// A delta that no ledger entry accounts for.
	ref := driver.AggregateRef{Projection: "order-totals", Key: "ORDERS#PAID#DAY#2026-11-30"}
	if err := st.Commit(ctx, &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: map[string]decimal.Decimal{"orders": decimal.FromInt(1)}}}}); err != nil {
		t.Fatal(err)
	}
	res = gate()
	if len(res.Differences) != 1 || !strings.HasPrefix(res.Differences[0], "order-totals ORDERS#PAID#DAY#2026-11-30 orders: got") {
		t.Errorf("a lost or doubled delta: %v", res.Differences)
	}
	if err := st.Commit(ctx, &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: map[string]decimal.Decimal{"orders": decimal.FromInt(-1)}}}}); err != nil {
		t.Fatal(err)
	}

	// Sums deferred to a partial, not folded: not ready.
	partial, err := e.OpenPartial(ctx, engine.PartialPrefix+"test/unfolded")
	if err != nil {
		t.Fatal(err)
	}
	more := hs.h.Records[hs.k+300:]
	var changes []pipeline.Change
	for _, ev := range sim.StreamsShards(more)[0] {
		cs, err := pipeline.DecodeStreamsEvent(sim.Payload([]sim.Event{ev}), pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, cs...)
	}
	if err := e.HandleBatchInto(ctx, changes, partial); err != nil {
		t.Fatal(err)
	}
	if partial.Pending() == 0 {
		t.Fatal("nothing was deferred: the test proves nothing")
	}
	if res := gate(); len(res.Unfolded) != 1 {
		t.Errorf("an unfolded partial: %+v", res.Unfolded)
	}
	if err := e.Fold(ctx, partial); err != nil {
		t.Fatal(err)
	}
	if res := gate(); len(res.Unfolded) != 0 || len(res.Differences) != 0 {
		t.Errorf("after the fold: %v, %v", res.Unfolded, res.Differences)
	}
}

package projector_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/redrive"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// The road, in the fault-injection simulation: a table whose projector runs
// two of the seed projections (the live set) gains the other three (the
// new set, a shadow of all five). The shadow is attached to the projector;
// an export is taken after; the shadow's table is backfilled from it while
// the stream goes on; the gate agrees; the projector is switched over (the
// new set live, the old one kept as the shadow, for rollback); the rest of
// the stream goes through. Store faults hit both tables, invocations fail
// and batches are redelivered; the shadow's failed batches are kept and
// redriven. After every stage each table equals the recomputation of its
// set from the table's items at that point, and at the end from the final
// items.
func TestShadowRoad(t *testing.T) {
	for _, src := range []struct {
		name    string
		kinesis bool
	}{{"streams", false}, {"kinesis", true}} {
		t.Run(src.name, func(t *testing.T) { shadowRoad(t, src.kinesis) })
	}
}

func shadowRoad(t *testing.T, kinesis bool) {
	ctx := context.Background()
	n := 6000
	if testing.Short() {
		n = 2500
	}
	h, err := sim.Workload{Seed: 71, Changes: n, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	oldSet, err := seed.Set().Select("order-totals", "season-standings")
	if err != nil {
		t.Fatal(err)
	}
	newSet := seed.Set()
	attach, exportAt, gateAt := n/5, n*2/5, n*3/5
	for !h.Records[exportAt].Time.After(h.Records[exportAt-1].Time) {
		exportAt++
	}

	liveStore, shadowStore := boltstoretest.Open(t), boltstoretest.Open(t)
	faultyLive := (&sim.FaultyStore{Store: liveStore, Seed: 3, CommitFailBefore: 0.02, CommitFailAfter: 0.02, ReadFail: 0.01}).Table(liveStore)
	faultyShadow := (&sim.FaultyStore{Store: shadowStore, Seed: 4, CommitFailBefore: 0.03, CommitFailAfter: 0.03, ReadFail: 0.02}).Table(shadowStore)
	kept := objstore.NewDir(t.TempDir()).WithoutSync()
	env := &projections.Environment{Projections: newSet}
	cfg := projector.Config{Table: "live", Projections: oldSet.Names(), Ignore: []string{"User", "Workspace", "Cart"}}
	build := func(cfg projector.Config, live, shadow driver.Table) *projector.Handler {
		t.Helper()
		var opts []projector.Option
		if shadow != nil {
			opts = append(opts, projector.WithShadow(shadow, kept))
		}
		var (
			h   *projector.Handler
			err error
		)
		if kinesis {
			h, err = kinesisprojector.New(ctx, cfg, env, live, quiet(), nil, opts...)
		} else {
			h, err = projector.New(ctx, cfg, env, live, quiet(), nil, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	deliver := func(h *projector.Handler, records []sim.Record, seed uint64) sim.Stats {
		t.Helper()
		shards := sim.StreamsShards(records)
		if kinesis {
			shards = sim.KinesisShards(sim.ToKinesis(records, 0.05, 8, sim.NewKinesisRand(seed)))
		}
		invoke := &sim.FlakyInvoke{Invoke: h.Invoke, Seed: seed, FailBefore: 0.02, FailAfter: 0.02}
		esm := &sim.ESM{BatchSize: 50, Bisect: true, RedeliverRate: 0.05, MaxAttempts: 1000, Seed: seed}
		stats, err := esm.Run(ctx, shards, invoke.Call)
		if err != nil {
			t.Fatal(err)
		}
		return stats
	}
	// The table's items after its first k records, and each set's
	// recomputation from them.
	check := func(stage string, st driver.Reader, set *projections.Set, k int) {
		t.Helper()
		items, _, _ := exportgen.FromHistory(h, k)
		want, err := projections.Recompute(items, "", set.Projections()...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := projections.ReadView(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if d := projections.Diff(got, want); len(d) > 0 {
			t.Fatalf("%s: %d differences, e.g.:\n%s", stage, len(d), strings.Join(d[:min(len(d), 10)], "\n"))
		}
	}
	redriveKept := func(st sim.FaultyTable, set *projections.Set) {
		t.Helper()
		e, err := st.Open(ctx, set, engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}})
		if err != nil {
			t.Fatal(err)
		}
		// A store fault may fail a redrive too: run it until every kept
		// batch is applied, as an operator would run the command again.
		for attempt := 1; ; attempt++ {
			rep, err := redrive.Run(ctx, kept, redrive.Config{Handler: e, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Done == rep.Objects {
				return
			}
			if attempt == 20 {
				t.Fatalf("redrive: %+v", rep)
			}
		}
	}

	// Live only, then with the shadow attached.
	var all sim.Stats
	all.Add(deliver(build(cfg, faultyLive, nil), h.Records[:attach], 1))
	check("live, before the shadow", liveStore, oldSet, attach)
	cfg.ShadowTable, cfg.ShadowFailures = "shadow", "kept"
	// The shadow's table is marked when the shadow starts, at the
	// simulated time it is attached (the projector marks it with the
	// clock's time: the backfill refuses an export older than that).
	attached := h.Records[attach-1].Time
	if _, err := engine.Open(ctx, shadowStore, newSet, engine.Config{Now: func() time.Time { return attached }}); err != nil {
		t.Fatal(err)
	}
	withShadow := build(cfg, faultyLive, faultyShadow)
	all.Add(deliver(withShadow, h.Records[attach:exportAt], 2))

	// The export, at exportAt; the backfill of the shadow's table while the
	// stream goes on to gateAt.
	items, _, _ := exportgen.FromHistory(h, exportAt)
	at := h.Records[exportAt-1].Time
	dir := t.TempDir()
	res, err := exportgen.WriteFull(ctx, objstore.NewDir(dir).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(at, 7), Time: at, Files: 3}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	full, err := export.OpenExport(ctx, objstore.NewDir(dir), res.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan sim.Stats)
	go func() { done <- deliver(withShadow, h.Records[exportAt:gateAt], 3) }()
	be, err := faultyShadow.Open(ctx, newSet, engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		job, err := backfill.Open(full, nil, be, faultyShadow, newSet, backfill.Options{BatchSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		_, err = job.Run(ctx, 2)
		if err == nil {
			break
		}
		if attempt == 50 {
			t.Fatalf("backfill: %v", err)
		}
	}
	all.Add(<-done)
	if withShadow.ShadowFailures() == 0 {
		t.Fatal("no shadow batch failed: the test proves nothing of keeping them")
	}
	redriveKept(faultyShadow, newSet)
	check("live, with the shadow beside it", liveStore, oldSet, gateAt)

	// The gate: the shadow agrees with the export, the changes since told
	// apart; and with the export and an incremental export up to the gate
	// on top, which holds what the stream should have brought: a change
	// the shadow missed would show.
	g, err := verify.AsOf(ctx, full, nil, shadowStore, pipeline.Options{}, false, newSet.Projections()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Differences) > 0 || len(g.Unfolded) > 0 || g.Changed == 0 {
		t.Fatalf("gate: %d differences (%v), %d unfolded, %d changed", len(g.Differences), g.Differences[:min(len(g.Differences), 5)], len(g.Unfolded), g.Changed)
	}
	upToGate := *h
	upToGate.Records = h.Records[:gateAt]
	_, changes, _ := exportgen.FromHistory(&upToGate, exportAt)
	to := h.Records[gateAt-1].Time.Add(time.Millisecond)
	incRes, err := exportgen.WriteIncremental(ctx, objstore.NewDir(dir).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(to, 8), From: at, Time: to, Files: 2}, changes)
	if err != nil {
		t.Fatal(err)
	}
	inc, err := export.OpenExport(ctx, objstore.NewDir(dir), incRes.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := export.LoadOverlay(ctx, full, []*export.Export{inc}, pipeline.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	g, err = verify.AsOf(ctx, full, ov, shadowStore, pipeline.Options{}, false, newSet.Projections()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Differences) > 0 || len(g.Unfolded) > 0 {
		t.Fatalf("gate with the incremental export: %d differences (%v), %d unfolded", len(g.Differences), g.Differences[:min(len(g.Differences), 5)], len(g.Unfolded))
	}
	check("shadow, at the gate", shadowStore, newSet, gateAt)

	// The switch: the new set live on its table, the old kept as the shadow.
	kept = objstore.NewDir(t.TempDir()).WithoutSync()
	switched := projector.Config{Table: "shadow", Projections: newSet.Names(), Ignore: cfg.Ignore, ShadowTable: "live", ShadowProjections: oldSet.Names(), ShadowFailures: "kept"}
	all.Add(deliver(build(switched, faultyShadow, faultyLive), h.Records[gateAt:], 4))
	redriveKept(faultyLive, oldSet)
	check("the new set, live after the switch", shadowStore, newSet, n)
	check("the old set, the shadow after the switch", liveStore, oldSet, n)
	if all.Retries == 0 || all.Redeliveries == 0 || faultyLive.Faults().Total() == 0 || faultyShadow.Faults().Total() == 0 {
		t.Fatalf("the simulation exercised too little: %+v, live faults %+v, shadow faults %+v", all, faultyLive.Faults(), faultyShadow.Faults())
	}
}

// TestShadowNeverFailsLive: a shadow that cannot start (its table is
// another set's) or cannot write does not touch the live response: the
// live set applies the event, and every batch the shadow could not apply
// is kept as an invocation record that redrive reads.
func TestShadowNeverFailsLive(t *testing.T) {
	ctx := context.Background()
	event, err := os.ReadFile(streamsEvent)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := seed.Set().Select("cart-contents")
	for _, tt := range []struct {
		name   string
		shadow func(t *testing.T) driver.Table
	}{
		{"another set's table", func(t *testing.T) driver.Table {
			st := boltstoretest.Open(t)
			if _, err := engine.Open(ctx, st, other, engine.Config{}); err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"every write fails", func(t *testing.T) driver.Table {
			st := boltstoretest.Open(t)
			return (&sim.FaultyStore{Store: st, Seed: 1, CommitFailBefore: 1}).Table(st)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live := boltstoretest.Open(t)
			keep := t.TempDir()
			cfg := projector.Config{Table: "live", ShadowTable: "shadow", ShadowFailures: keep}
			h, err := projector.New(ctx, cfg, seed.Environment(), live, quiet(), io.Discard, projector.WithShadow(tt.shadow(t), objstore.NewDir(keep)))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if out, err := h.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
					t.Fatalf("live response %s %v", out, err)
				}
			}
			if v := mustView(t, live); len(v.Aggregates) == 0 {
				t.Fatal("the live set applied nothing")
			}
			if h.ShadowFailures() != 2 {
				t.Errorf("%d shadow failures counted, want 2", h.ShadowFailures())
			}
			files, _ := filepath.Glob(filepath.Join(keep, "*.json"))
			if len(files) != 1 {
				t.Fatalf("kept %v, want one record (the same batch twice keeps one)", files)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			inv, err := redrive.Parse(files[0], b)
			if err != nil || inv.Condition != "ShadowFailed" || string(inv.Payload) != string(event) || inv.Batch.BatchSize != 4 {
				t.Errorf("kept record: %+v %v", inv, err)
			}
		})
	}
}

package verify_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// BenchmarkGateHeap runs the gate (verify.Check) on payments-ledger
// exports (exportgen.Payments) ten times apart in size, each against a
// store backfilled from it, and reports its peak heap beside that of the
// recomputation held whole in memory (verify.Recompute: what the gate
// held, twice, before it spilled): the gate's stays flat, the
// recomputation's grows with the table. Also its speed and the bytes it
// spills per item. The collector runs at GOGC=25 for both, so that the
// peaks are what is live rather than garbage awaiting collection (at the
// default 100 the gate's peak is about twice its live heap).
//
//	go test -run '^$' -bench GateHeap -benchtime 1x ./internal/capabilities/verify/
func BenchmarkGateHeap(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	sizes := []int{20_000, 200_000}
	peaks := map[int]uint64{}
	defer func() {
		// Flat: the larger export's peak within half again the smaller's
		// (and 8 MiB of noise), where the held view's grows tenfold.
		if a, z := peaks[sizes[0]], peaks[sizes[1]]; a > 0 && z > 0 && z > a*3/2+8<<20 {
			b.Errorf("the gate's peak heap grew from %d MiB to %d MiB with the export", a>>20, z>>20)
		}
	}()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			ctx := context.Background()
			full, set, st := paymentsStore(b, n)
			decode := pipeline.Options{Schema: exportgen.PaymentsSchema()}
			var items, spilled int64
			stop := exportgen.PeakHeap()
			for b.Loop() {
				res, err := verify.Check(ctx, full, nil, st, verify.Options{Decode: decode, Dir: b.TempDir(), MaxNamed: 100}, set.Projections()...)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Differences) > 0 || res.More > 0 || res.Items != int64(n) {
					b.Fatalf("the gate does not agree: %d items, %v (%d more)", res.Items, res.Differences, res.More)
				}
				items += res.Items
				spilled = res.Spilled
			}
			took := b.Elapsed()
			peak := stop()
			peaks[n] = peak
			stop = exportgen.PeakHeap()
			if _, _, err := verify.Recompute(ctx, full, nil, decode, false, set.Projections()...); err != nil {
				b.Fatal(err)
			}
			held := stop()
			b.ReportMetric(float64(items)/took.Seconds(), "items/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(held)/(1<<20), "held-view-heap-MB")
			b.ReportMetric(float64(spilled)/float64(n), "spill-B/item")
		})
	}
}

// paymentsStore writes a payments-ledger export of n items and backfills
// an embedded store (no fsync) from it.
func paymentsStore(b *testing.B, n int) (*export.Export, *projections.Set, *boltstore.Store) {
	b.Helper()
	ctx := context.Background()
	sp, err := spec.Parse("payments.yaml", exportgen.PaymentsSpec)
	if err != nil {
		b.Fatal(err)
	}
	set, err := sp.Set()
	if err != nil {
		b.Fatal(err)
	}
	src := objstore.NewDir(b.TempDir()).WithoutSync()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(ctx, src, exportgen.Export{ID: exportgen.ExportID(at, 7), Time: at, Files: 4}, exportgen.Payments(n, 7))
	if err != nil {
		b.Fatal(err)
	}
	full, err := export.OpenExport(ctx, src, res.Dir, export.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := boltstore.Open(b.TempDir()+"/aggregates.db", boltstore.WithoutSync())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	e, err := engine.Open(ctx, st, set, engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	decode := pipeline.Options{Schema: exportgen.PaymentsSchema()}
	job, err := backfill.Open(full, nil, e, st, set, backfill.Options{Decode: decode})
	if err != nil {
		b.Fatal(err)
	}
	if sum, err := job.Run(ctx, 2); err != nil || !sum.Complete {
		b.Fatalf("backfill: %+v %v", sum, err)
	}
	return full, set, st
}

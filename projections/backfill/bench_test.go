package backfill_test

import (
	"context"
	"encoding/base64"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/export"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/backfill"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/verify"
)

// Published prices, us-east-1, on-demand (the DynamoDB pricing page):
// write request units, and ImportTable per GB of uncompressed source.
const (
	dollarsPerMillionWRU = 0.625
	dollarsPerImportGB   = 0.15
)

// benchmarkExport is a generated export of the seed domains' items, about
// 48 MB of lines in four data files: the same bytes for every benchmark.
func benchmarkExport(b *testing.B) (*export.Export, int64) {
	return exportgen.Generated(b, 31, 5000, 48<<20, 4)
}

// BenchmarkBackfill backfills the generated export into an embedded store
// (no fsync), two data files at a time, and reports the throughput, the
// write units the engine's commits would cost in DynamoDB (the store's
// estimate, dynamostore.WriteUnits) and their price per million items, the
// bytes a precomputed table of the same content would hand ImportTable
// (DynamoDB JSON lines of its ledger entries, aggregates and rows) and
// that price, and the peak heap. BenchmarkVerifyExport reads and
// recomputes the same export without writing: the baseline.
func BenchmarkBackfill(b *testing.B) {
	ctx := context.Background()
	full, size := benchmarkExport(b)
	var items int64
	var wu float64
	stop := exportgen.PeakHeap()
	var last *boltstore.Store
	for b.Loop() {
		// The store's opening and closing are not the backfill's.
		b.StopTimer()
		if last != nil {
			if err := last.Close(); err != nil {
				b.Fatal(err)
			}
		}
		st, err := boltstore.Open(b.TempDir()+"/aggregates.db", boltstore.WithoutSync())
		if err != nil {
			b.Fatal(err)
		}
		last = st
		b.StartTimer()
		e, err := projections.Open(ctx, st, seed.Set(), projections.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}})
		if err != nil {
			b.Fatal(err)
		}
		job, err := backfill.Open(full, nil, e, st, seed.Set(), backfill.Options{})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := job.Run(ctx, 2)
		if err != nil || !sum.Complete {
			b.Fatalf("%+v %v", sum, err)
		}
		items += sum.Items
		wu += e.Stats().WriteUnits
	}
	took := b.Elapsed()
	peak := stop()
	importBytes := tableBytes(ctx, b, last)
	if err := last.Close(); err != nil {
		b.Fatal(err)
	}
	perItem := wu / float64(items)
	n := float64(items) / float64(b.N)
	b.ReportMetric(float64(items)/took.Seconds(), "items/s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/took.Seconds(), "MB/s")
	b.ReportMetric(perItem, "WU/item")
	b.ReportMetric(perItem*dollarsPerMillionWRU, "$/M-items-engine")
	b.ReportMetric(float64(importBytes)/n*1e6/1e9*dollarsPerImportGB, "$/M-items-import")
	b.ReportMetric(float64(importBytes)/n, "import-B/item")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkVerifyExport recomputes every projection from the same export
// (reading and checking every data file, folding every item into the
// view): what a backfill does but the writes.
func BenchmarkVerifyExport(b *testing.B) {
	ctx := context.Background()
	full, size := benchmarkExport(b)
	var items int64
	stop := exportgen.PeakHeap()
	for b.Loop() {
		_, n, err := verify.Recompute(ctx, full, nil, pipeline.Options{}, false, seed.All()...)
		if err != nil {
			b.Fatal(err)
		}
		items += n
	}
	took := b.Elapsed()
	peak := stop()
	b.ReportMetric(float64(items)/took.Seconds(), "items/s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/took.Seconds(), "MB/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// tableBytes is the size of a DynamoDB JSON export of the aggregate table
// st holds, laid out as infra/dynamostore lays it out (docs/engine.md):
// what ImportTable would bill for a table precomputed from the export.
func tableBytes(ctx context.Context, b *testing.B, st *boltstore.Store) int64 {
	var n int64
	line := func(it pipeline.Item) { n += int64(len(`{"Item":}`) + len(pipeline.AppendItem(nil, it)) + 1) }
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	err := st.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		line(pipeline.Item{driver.AttrPK: s(driver.PrefixLedger + key), driver.AttrSK: s(driver.SortLedger), driver.AttrRev: num("1"),
			driver.AttrLedger: s(base64.StdEncoding.EncodeToString(e.Body))})
		return nil
	})
	if err == nil {
		err = st.ScanAggregates(ctx, func(ref driver.AggregateRef, values map[string]decimal.Decimal) error {
			it := pipeline.Item{driver.AttrPK: s(driver.AggregatePartitionKey(ref)), driver.AttrSK: s(driver.SortAggregate),
				driver.AttrProjection: s(ref.Projection), driver.AttrKey: s(ref.Key), driver.AttrShard: num(strconv.Itoa(ref.Shard))}
			for k, v := range values {
				it[k] = num(v.String())
			}
			line(it)
			return nil
		})
	}
	if err == nil {
		err = st.ScanRows(ctx, func(r driver.StoredRow) error {
			it := pipeline.Item{driver.AttrPK: s(driver.RowPartitionKey(r.Ref.Projection, r.Ref.Partition)), driver.AttrSK: s(r.Ref.Sort),
				driver.AttrProjection: s(r.Ref.Projection), driver.AttrPartition: s(r.Ref.Partition), driver.AttrSort: s(r.Ref.Sort), driver.AttrOwner: s(r.Owner)}
			for k, v := range r.Attrs {
				it[k] = v
			}
			line(it)
			return nil
		})
	}
	if err != nil {
		b.Fatal(err)
	}
	return n
}

package backfill_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
	"github.com/tributary/tributary/projections/spec"
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

// ledgerItems is the size of the payments-ledger export the benchmarks
// use: big enough that the accounts' days repeat as they do in a table.
const ledgerItems = 200_000

// ledgerExport is a generated export of the payments-ledger mix
// (exportgen.Payments), ledgerItems items in four data files, and its
// projection set and schema.
func ledgerExport(b testing.TB) (*export.Export, int64, *projections.Set, pipeline.Options) {
	b.Helper()
	ctx := context.Background()
	src := objstore.NewDir(b.TempDir()).WithoutSync()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(ctx, src, exportgen.Export{ID: exportgen.ExportID(at, 7), Time: at, Files: 4}, exportgen.Payments(ledgerItems, 7))
	if err != nil {
		b.Fatal(err)
	}
	full, err := export.OpenExport(ctx, src, res.Dir, export.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	sp, err := spec.Parse("payments.yaml", exportgen.PaymentsSpec)
	if err != nil {
		b.Fatal(err)
	}
	set, err := sp.Set()
	if err != nil {
		b.Fatal(err)
	}
	return full, res.UncompressedBytes, set, pipeline.Options{Schema: exportgen.PaymentsSchema()}
}

// BenchmarkBackfill backfills a generated export into an embedded store,
// two data files at a time, for each mix: the seed domains' (about 186,000
// items) and the payments ledger's (ledgerItems items: 60 % of transfers
// settled, each adding to three aggregates and writing a row; the rest,
// and the audit entries, nothing). Each runs without fsync and with it
// (the store's default, what `backfill` runs). It reports the throughput,
// the write units the engine's commits would cost in DynamoDB (the store's
// estimate, layout.WriteUnits) per item read and their price per million
// items; the floor for the mix (floor-WU/item: every ledger entry,
// aggregate and row the finished table holds written once, at the single
// rate, with no transaction — what no road can go below — and
// tx-floor-WU/item, the same in transactions, tableBytes); the commits per
// item; the bytes a precomputed table of the same content would hand
// ImportTable (DynamoDB JSON lines) and that price; and the peak heap.
// BenchmarkVerifyExport reads and recomputes the seed export without
// writing: the baseline.
func BenchmarkBackfill(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "durable"
		}
		b.Run("seed/"+name, func(b *testing.B) {
			full, size := benchmarkExport(b)
			benchBackfill(b, full, size, seed.Set(), pipeline.Options{}, []string{"User", "Workspace", "Cart"}, sync)
		})
		b.Run("ledger/"+name, func(b *testing.B) {
			full, size, set, opts := ledgerExport(b)
			benchBackfill(b, full, size, set, opts, []string{"Audit"}, sync)
		})
	}
}

func benchBackfill(b *testing.B, full *export.Export, size int64, set *projections.Set, decode pipeline.Options, ignore []string, sync bool) {
	ctx := context.Background()
	var items int64
	var wu float64
	var txs int64
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
		var opts []boltstore.Option
		if !sync {
			opts = append(opts, boltstore.WithoutSync())
		}
		st, err := boltstore.Open(b.TempDir()+"/aggregates.db", opts...)
		if err != nil {
			b.Fatal(err)
		}
		last = st
		b.StartTimer()
		e, err := engine.Open(ctx, st, set, engine.Config{Logger: quiet(), Ignore: ignore})
		if err != nil {
			b.Fatal(err)
		}
		job, err := backfill.Open(full, nil, e, st, set, backfill.Options{Decode: decode})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := job.Run(ctx, 2)
		if err != nil || !sum.Complete {
			b.Fatalf("%+v %v", sum, err)
		}
		items += sum.Items
		wu += e.Stats().WriteUnits
		txs += e.Stats().Transactions
	}
	took := b.Elapsed()
	peak := stop()
	importBytes, floor, txFloor, kinds := tableBytes(ctx, b, last)
	if err := last.Close(); err != nil {
		b.Fatal(err)
	}
	perItem := wu / float64(items)
	n := float64(items) / float64(b.N)
	b.ReportMetric(float64(items)/took.Seconds(), "items/s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/took.Seconds(), "MB/s")
	b.ReportMetric(perItem, "WU/item")
	b.ReportMetric(floor/n, "floor-WU/item")
	b.ReportMetric(txFloor/n, "tx-floor-WU/item")
	b.ReportMetric(float64(txs)/float64(items), "commits/item")
	b.ReportMetric(perItem*dollarsPerMillionWRU, "$/M-items-engine")
	b.ReportMetric(float64(importBytes)/n*1e6/1e9*dollarsPerImportGB, "$/M-items-import")
	b.ReportMetric(float64(importBytes)/n, "import-B/item")
	for i, name := range []string{"ledger-B", "aggregate-B", "row-B"} {
		b.ReportMetric(kinds[i].average(), name)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// stored counts one kind of the table's items (ledger entries, aggregate
// shards, rows) and their size in DynamoDB (pipeline.ItemSize), as
// infra/dynamostore writes them.
type stored struct{ items, bytes int64 }

func (s *stored) add(it pipeline.Item) {
	s.items++
	s.bytes += int64(pipeline.ItemSize(it))
}

// average is the kind's mean size in bytes (0 without items).
func (s stored) average() float64 {
	if s.items == 0 {
		return 0
	}
	return float64(s.bytes) / float64(s.items)
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
// what ImportTable would bill for a table precomputed from the export;
// and the floor, the write units of writing each of those items once,
// at the single rate: a unit per started kilobyte of the item
// (pipeline.ItemSize, DynamoDB's rule).
//
// txFloor is the floor of a road that writes each item's effects in one
// transaction with its ledger entry (the transactional road): the same
// items, at the double rate of a transaction, but for the ledger entries
// of items that move nothing, each a single conditional put.
//
// kinds are the table's ledger entries, aggregate shards and rows as
// DynamoDB holds them (a ledger entry's body binary, not the base64 of
// the export's JSON): what a Scan of the table reads.
func tableBytes(ctx context.Context, b *testing.B, st *boltstore.Store) (n int64, floor, txFloor float64, kinds [3]stored) {
	factor := 2.0
	line := func(it pipeline.Item) {
		n += int64(len(`{"Item":}`) + len(pipeline.AppendItem(nil, it)) + 1)
		u := float64((pipeline.ItemSize(it) + 1023) / 1024)
		floor += u
		txFloor += factor * u
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	err := st.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		if strings.HasPrefix(key, "#tributary/") {
			return nil // the job's own entries: markers, partials
		}
		var l struct {
			C struct {
				A []json.RawMessage `json:"a"`
				R []json.RawMessage `json:"r"`
			} `json:"c"`
		}
		if err := json.Unmarshal(e.Body, &l); err != nil {
			return err
		}
		factor = 2
		if len(l.C.A) == 0 && len(l.C.R) == 0 {
			factor = 1
		}
		line(pipeline.Item{layout.AttrPK: s(layout.PrefixLedger + key), layout.AttrSK: s(layout.SortLedger), layout.AttrRev: num("1"),
			layout.AttrLedger: s(base64.StdEncoding.EncodeToString(e.Body))})
		kinds[0].add(pipeline.Item{layout.AttrPK: s(layout.PrefixLedger + key), layout.AttrSK: s(layout.SortLedger), layout.AttrRev: num("1"),
			layout.AttrLedger: &types.AttributeValueMemberB{Value: e.Body}})
		return nil
	})
	factor = 2
	if err == nil {
		err = st.ScanAggregates(ctx, func(ref driver.AggregateRef, values map[string]decimal.Decimal) error {
			it := pipeline.Item{layout.AttrPK: s(layout.AggregatePartitionKey(ref)), layout.AttrSK: s(layout.SortAggregate),
				layout.AttrProjection: s(ref.Projection), layout.AttrKey: s(ref.Key), layout.AttrShard: num(strconv.Itoa(ref.Shard))}
			for k, v := range values {
				it[k] = num(v.String())
			}
			line(it)
			kinds[1].add(it)
			return nil
		})
	}
	if err == nil {
		err = st.ScanRows(ctx, func(r driver.StoredRow) error {
			it := pipeline.Item{layout.AttrPK: s(layout.RowPartitionKey(r.Ref.Projection, r.Ref.Partition)), layout.AttrSK: s(r.Ref.Sort),
				layout.AttrProjection: s(r.Ref.Projection), layout.AttrPartition: s(r.Ref.Partition), layout.AttrSort: s(r.Ref.Sort), layout.AttrOwner: s(r.Owner)}
			for k, v := range r.Attrs {
				it[k] = v
			}
			line(it)
			kinds[2].add(it)
			return nil
		})
	}
	if err != nil {
		b.Fatal(err)
	}
	return n, floor, txFloor, kinds
}

package remodel_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/spec"
)

// Published price, us-east-1, on-demand (the DynamoDB pricing page): write
// request units.
const dollarsPerMillionWRU = 0.625

// benchDesign is the declared new-design transform (projections/spec's
// test spec): orders keyed by status, players by season, every other item
// copied, so that every item of the seed domains makes a target item.
func benchDesign(b *testing.B) *remodel.Remodel {
	b.Helper()
	sp, err := spec.LoadFile(filepath.Join("..", "..", "..", "projections", "spec", "testdata", "transforms", "new-design.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return mustRemodel(b, sp.Transforms()[0])
}

// benchExport is a generated export of the seed domains' items, about
// 48 MB of lines in four data files: the same bytes for both roads.
func benchExport(b *testing.B) (*export.Export, int64) {
	return exportgen.Generated(b, 31, 5000, 48<<20, 4)
}

// BenchmarkRemodelBackfill backfills the generated export through the
// transform into an embedded target (no fsync), two data files at a time
// — the road that leaves the per-item state later key moves need — and
// reports its throughput, the write units its commits would cost in
// DynamoDB (the store's estimate, layout.TargetWriteUnits: each target
// item, its claim and its source item's ledger entry, in transactions)
// and their price per million items, and the peak heap.
// BenchmarkRemodelReimport runs the other road on the same export.
func BenchmarkRemodelBackfill(b *testing.B) {
	ctx := context.Background()
	full, size := benchExport(b)
	r := benchDesign(b)
	var items int64
	var wu float64
	stop := exportgen.PeakHeap()
	start := time.Now()
	for b.Loop() {
		ts, err := boltstore.OpenTarget(filepath.Join(b.TempDir(), "target.db"), r.Name(), r.Key(), boltstore.WithoutSync())
		if err != nil {
			b.Fatal(err)
		}
		e, err := r.Open(ctx, ts, engine.Config{Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		job, err := backfill.Open(full, nil, e, ts, r.Set(), backfill.Options{})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := job.Run(ctx, 2)
		if err != nil || !sum.Complete {
			b.Fatalf("%+v %v", sum, err)
		}
		items += sum.Items
		wu += e.Stats().WriteUnits
		if err := ts.Close(); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	heap := stop()
	b.ReportMetric(float64(items)/took.Seconds(), "items/s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/took.Seconds(), "MB/s")
	b.ReportMetric(wu/float64(items), "WU/item")
	b.ReportMetric(wu/float64(items)*dollarsPerMillionWRU, "$/M-items")
	b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB")
}

// BenchmarkRemodelReimport runs the offline road on the same export and
// transform: repartition --transform (two data files at a time, gzip)
// then the reimport loader (BatchWriteItem, 25 items a request, two parts
// at a time) into a sink that takes every request at once and bills it as
// DynamoDB would (one write unit per started kilobyte of each item). It
// leaves no per-item state: a later stream change that moves an item's
// target key could not remove the old target item, so it is the
// baseline, not a road the remodel can take.
func BenchmarkRemodelReimport(b *testing.B) {
	ctx := context.Background()
	full, size := benchExport(b)
	r := benchDesign(b)
	var items int64
	sink := &billingSink{}
	stop := exportgen.PeakHeap()
	start := time.Now()
	for b.Loop() {
		out := objstore.NewDir(b.TempDir()).WithoutSync()
		rp, err := repartition.NewRepartitioner(full, nil, out, repartition.Options{Transform: r.Transform()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rp.Run(ctx, 2, false); err != nil {
			b.Fatal(err)
		}
		o, err := reimport.OpenOutput(ctx, out)
		if err != nil {
			b.Fatal(err)
		}
		st, err := reimport.Load(ctx, sink, o, reimport.LoadOptions{Table: "target", Workers: 2})
		if err != nil {
			b.Fatal(err)
		}
		items += st.Items
	}
	took := time.Since(start)
	heap := stop()
	b.ReportMetric(float64(items)/took.Seconds(), "items/s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/took.Seconds(), "MB/s")
	b.ReportMetric(sink.units.Load()/float64(items), "WU/item")
	b.ReportMetric(sink.units.Load()/float64(items)*dollarsPerMillionWRU, "$/M-items")
	b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB")
}

// billingSink is a DynamoDB that takes every BatchWriteItem at once and
// counts the write units it would bill.
type billingSink struct {
	units atomicFloat
}

type atomicFloat struct{ tenths atomic.Int64 }

func (f *atomicFloat) Add(v float64) { f.tenths.Add(int64(v * 10)) }
func (f *atomicFloat) Load() float64 { return float64(f.tenths.Load()) / 10 }

func (s *billingSink) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	for _, reqs := range in.RequestItems {
		for _, w := range reqs {
			if w.PutRequest != nil {
				s.units.Add(float64((pipeline.ItemSize(w.PutRequest.Item) + 1023) / 1024))
			}
		}
	}
	return &dynamodb.BatchWriteItemOutput{}, nil
}

func (s *billingSink) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.units.Add(float64((pipeline.ItemSize(in.Item) + 1023) / 1024))
	return &dynamodb.PutItemOutput{}, nil
}

func (s *billingSink) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{KeySchema: []types.KeySchemaElement{
		{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
	}}}, nil
}

// BenchmarkRemodelCatchUp applies a simulated table's stream (20,000
// changes over the seed domains, hot and cold keys) to an embedded target
// through the remodeler's processor, one shard's batches of 100 after
// another: what one stream shard's consumer does. It reports the changes
// per second of one shard, the write units per change (the store's
// DynamoDB estimate) and the transactions per batch; the "naive" WU/change
// is what one unconditional PutItem or DeleteItem per change costs (the
// non-exact road's bill). /decode-transform is the baseline in the same
// run: decoding the same batches and running the transform on them,
// writing nothing.
func BenchmarkRemodelCatchUp(b *testing.B) {
	ctx := context.Background()
	h, err := sim.Workload{Seed: 97, Changes: 20_000, Skew: 1.0, Shards: 1}.Run()
	if err != nil {
		b.Fatal(err)
	}
	r := benchDesign(b)
	var batches [][]byte
	for _, shard := range sim.StreamsShards(h.Records) {
		for i := 0; i < len(shard); i += 100 {
			batches = append(batches, sim.Payload(shard[i:min(len(shard), i+100)]))
		}
	}
	naive := 0.0
	for i := range h.Records {
		img := h.Records[i].New
		if img == nil {
			naive++
			continue
		}
		outs, err := r.Apply(img)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			naive += float64((pipeline.ItemSize(o) + 1023) / 1024)
		}
	}
	b.Run("engine", func(b *testing.B) {
		var changes, txs int64
		var wu float64
		start := time.Now()
		for b.Loop() {
			ts, err := boltstore.OpenTarget(filepath.Join(b.TempDir(), "target.db"), r.Name(), r.Key(), boltstore.WithoutSync())
			if err != nil {
				b.Fatal(err)
			}
			e, err := r.Open(ctx, ts, engine.Config{Logger: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			p := pipeline.NewStreamsProcessor(r.Handler(e), pipeline.Config{Logger: quiet()})
			for _, ev := range batches {
				res, err := p.Process(ctx, ev)
				if err != nil || res.Report != "" {
					b.Fatalf("%v %+v", err, res.Failed)
				}
			}
			s := e.Stats()
			changes += s.Changes
			txs += s.Transactions
			wu += s.WriteUnits
			if err := ts.Close(); err != nil {
				b.Fatal(err)
			}
		}
		took := time.Since(start)
		b.ReportMetric(float64(changes)/took.Seconds(), "changes/s/shard")
		b.ReportMetric(wu/float64(changes), "WU/change")
		b.ReportMetric(naive/float64(len(h.Records)), "naive-WU/change")
		b.ReportMetric(float64(txs)/float64(b.N)/float64(len(batches)), "commits/batch")
	})
	b.Run("decode-transform", func(b *testing.B) {
		var changes int64
		start := time.Now()
		for b.Loop() {
			for _, ev := range batches {
				cs, err := pipeline.DecodeStreamsEvent(ev, pipeline.Options{})
				if err != nil {
					b.Fatal(err)
				}
				for i := range cs {
					if cs[i].New != nil {
						if _, err := r.Apply(cs[i].New); err != nil {
							b.Fatal(err)
						}
					}
				}
				changes += int64(len(cs))
			}
		}
		b.ReportMetric(float64(changes)/time.Since(start).Seconds(), "changes/s/shard")
	})
}

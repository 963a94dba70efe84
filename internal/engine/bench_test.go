package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// workloads for the cost benchmarks: the same seed domains with keys drawn
// uniformly, and with a Zipf law (hot players, hot orders, a hot season).
var workloads = []struct {
	name string
	skew float64
}{{"uniform", 0}, {"skewed", 1.2}}

const costChanges = 20_000

// naiveWriteUnits is what the common non-idempotent path pays for one
// record: one UpdateItem ADD (1 unit for a small item) per aggregate whose
// value the record changes, and one PutItem or DeleteItem per row it
// changes. Deltas that net to zero are not written (in the naive path's favour).
func naiveWriteUnits(ps []projections.Projection, r *sim.Record) float64 {
	contrib := func(img pipeline.Item, p projections.Projection) projections.Contribution {
		if img == nil {
			return projections.Contribution{}
		}
		c, err := p.Contribute(img)
		if err != nil {
			panic(err)
		}
		return c
	}
	typeOf := func(img pipeline.Item) string {
		if img == nil {
			return ""
		}
		s, _ := img["EntityType"].(interface{ String() string })
		_ = s
		return string(pipeline.AppendValue(nil, img["EntityType"]))
	}
	units := 0.0
	for _, p := range ps {
		reads := map[string]bool{}
		for _, t := range p.EntityTypes() {
			reads[`{"S":"`+t+`"}`] = true
		}
		var oldImg, newImg pipeline.Item
		if reads[typeOf(r.Old)] {
			oldImg = r.Old
		}
		if reads[typeOf(r.New)] {
			newImg = r.New
		}
		o, n := contrib(oldImg, p), contrib(newImg, p)
		delta := map[string]map[string]decimal.Decimal{}
		for sign, c := range []projections.Contribution{o, n} {
			for _, ctr := range c.Counters {
				d := delta[ctr.Key]
				if d == nil {
					d = map[string]decimal.Decimal{}
					delta[ctr.Key] = d
				}
				for k, v := range ctr.Values {
					if sign == 0 {
						v = v.Neg()
					}
					d[k] = d[k].Add(v)
				}
			}
		}
		for _, d := range delta {
			for _, v := range d {
				if !v.IsZero() {
					units++
					break
				}
			}
		}
		rows := map[string]string{}
		for _, row := range o.Rows {
			rows[row.Partition+"/"+row.Sort] = string(pipeline.AppendItem(nil, row.Attrs))
		}
		for _, row := range n.Rows {
			k := row.Partition + "/" + row.Sort
			if old, ok := rows[k]; !ok || old != string(pipeline.AppendItem(nil, row.Attrs)) {
				units++ // put
			}
			delete(rows, k)
		}
		units += float64(len(rows)) // deletes
	}
	return units
}

// BenchmarkWriteUnits measures DynamoDB write units per 1,000 source changes,
// the engine (exactly once: ledger + coalesced transactional deltas) against
// the naive path (one UpdateItem per record per aggregate; not idempotent),
// on the same records delivered once, in batches of 100 (Lambda's default),
// 1,000 and 10,000 (the Streams maximum; reached with a batching window).
func BenchmarkWriteUnits(b *testing.B) {
	ps := seed.All()
	for _, w := range workloads {
		h, err := sim.Workload{Seed: 3, Changes: costChanges, Skew: w.skew}.Run()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(w.name+"/naive", func(b *testing.B) {
			var units float64
			for b.Loop() {
				units = 0
				for i := range h.Records {
					units += naiveWriteUnits(ps, &h.Records[i])
				}
			}
			b.ReportMetric(units*1000/float64(len(h.Records)), "WU/1k-changes")
		})
		for _, batch := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/engine/batch=%d", w.name, batch), func(b *testing.B) {
				engineUnits(b, ps, h, batch)
			})
		}
	}
}

// engineUnits runs the history once through the Lambda handler path in
// batches of the given size and reports the engine's write units.
func engineUnits(b *testing.B, ps []projections.Projection, h *sim.History, batch int) {
	var units float64
	for b.Loop() {
		st, err := boltstore.Open(filepath.Join(b.TempDir(), "s.db"), boltstore.WithoutSync())
		if err != nil {
			b.Fatal(err)
		}
		e := engine.New(st, engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}}, ps...)
		p := pipeline.NewStreamsProcessor(e, pipeline.Config{Logger: quiet()})
		esm := &sim.ESM{BatchSize: batch}
		if _, err := esm.Run(context.Background(), sim.StreamsShards(h.Records), p.Invoke); err != nil {
			b.Fatal(err)
		}
		units = e.Stats().WriteUnits
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(units*1000/float64(len(h.Records)), "WU/1k-changes")
}

// BenchmarkHandler measures the whole Lambda handler — decode, dispatch,
// projections, ledger, embedded store with fsync on every commit — in
// changes per second, on batches of 100 Streams records.
func BenchmarkHandler(b *testing.B) {
	h, err := sim.Workload{Seed: 5, Changes: 20_000, Skew: 1.0}.Run()
	if err != nil {
		b.Fatal(err)
	}
	var batches [][]byte
	for _, shard := range sim.StreamsShards(h.Records) {
		for i := 0; i < len(shard); i += 100 {
			batches = append(batches, sim.Payload(shard[i:min(i+100, len(shard))]))
		}
	}
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", sync), func(b *testing.B) {
			var opts []boltstore.Option
			if !sync {
				opts = append(opts, boltstore.WithoutSync())
			}
			st, err := boltstore.Open(filepath.Join(b.TempDir(), "s.db"), opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				if err := st.Close(); err != nil {
					b.Error(err)
				}
			})
			e := engine.New(st, engine.Config{Logger: quiet()}, seed.All()...)
			p := pipeline.NewStreamsProcessor(e, pipeline.Config{Logger: quiet()})
			n := 0
			for b.Loop() {
				for _, ev := range batches {
					if _, err := p.Invoke(context.Background(), ev); err != nil {
						b.Fatal(err)
					}
				}
				n += len(h.Records)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}

package spec

import (
	"maps"
	"slices"
)

// CounterInfo describes one counter of a spec projection.
type CounterInfo struct {
	// Key is the key template in its canonical form, e.g.
	// "ORDERS#{status}#DAY#{orderDate}".
	Key string
	// Shards is the write-shard count (0: unsharded).
	Shards int
	// Values are the names of the values it adds, sorted.
	Values []string
}

// RowInfo describes one row of a spec projection.
type RowInfo struct {
	// Partition and Sort are the key templates in their canonical form.
	Partition, Sort string
	// Attributes are the names of the row's attributes, sorted.
	Attributes []string
	// KeyHolds are the item attributes whose whole values the row's keys
	// hold, KeyParts those they hold only a segment of, each sorted. Unless
	// KeyHolds include every key attribute of the table, two items may
	// give one row: the engine refuses the second, as a permanent failure
	// naming both (docs/projections-spec.md, "Rows").
	KeyHolds, KeyParts []string
}

// Counters describes the projection's counters, in the spec's order.
func (p *Projection) Counters() []CounterInfo {
	out := make([]CounterInfo, len(p.counters))
	for i, c := range p.counters {
		info := CounterInfo{Key: c.key.canonical(p.vars), Shards: c.shards}
		for _, v := range c.values {
			info.Values = append(info.Values, v.name)
		}
		out[i] = info
	}
	return out
}

// Rows describes the projection's rows, in the spec's order.
func (p *Projection) Rows() []RowInfo {
	out := make([]RowInfo, len(p.rows))
	for i, r := range p.rows {
		info := RowInfo{Partition: r.partition.canonical(p.vars), Sort: r.sort.canonical(p.vars)}
		for _, a := range r.attrs {
			info.Attributes = append(info.Attributes, a.name)
		}
		holds := map[string]bool{}
		r.partition.holds(p.vars, holds)
		r.sort.holds(p.vars, holds)
		for _, attr := range slices.Sorted(maps.Keys(holds)) {
			if holds[attr] {
				info.KeyHolds = append(info.KeyHolds, attr)
			} else {
				info.KeyParts = append(info.KeyParts, attr)
			}
		}
		out[i] = info
	}
	return out
}

// SpecProjections returns the spec's projections as *Projection, in the
// order the file lists them, for tools that describe them.
func (s *Spec) SpecProjections() []*Projection {
	out := make([]*Projection, len(s.projections))
	copy(out, s.projections)
	return out
}

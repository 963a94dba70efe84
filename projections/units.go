package projections

import "github.com/tributary/tributary/pipeline"

// WriteUnits is what DynamoDB bills for committing tx with the physical
// layout of infra/dynamostore: each write costs one unit per started
// kilobyte of the item, and transactions cost double (prepare and commit).
// A transaction of a single ledger entry is written by the store as one
// conditional PutItem, at the single rate. Sizes follow DynamoDB's rules
// (attribute names plus values); an aggregate item's size counts its key
// attributes and the values being added, a lower bound when it holds more.
func WriteUnits(tx *Tx) float64 {
	factor := 2.0
	if tx.Len() == 1 && len(tx.Ledgers) == 1 {
		factor = 1
	}
	var units float64
	for _, l := range tx.Ledgers {
		size := len("PK") + 2 + len(l.Key) + len("SK") + 1 + len("rev") + 8 + len("ledger") + len(l.Body)
		if l.ExpiresAt != 0 {
			size += len("ttl") + 8
		}
		units += kb(size)
	}
	for _, a := range tx.Adds {
		size := len("PK") + 2 + len(a.Ref.Projection) + len(a.Ref.Key) + 4 + len("SK") + 1 +
			len("projection") + len(a.Ref.Projection) + len("key") + len(a.Ref.Key) + len("shard") + 2
		for k, v := range a.Values {
			size += len(k) + len(v.String())
		}
		units += kb(size)
	}
	for _, p := range tx.Puts {
		size := len("PK") + 2 + len(p.Ref.Projection) + len(p.Ref.Partition) + len("SK") + len(p.Ref.Sort) +
			len("projection") + len(p.Ref.Projection) + len("partition") + len(p.Ref.Partition) + len("sort") + len(p.Ref.Sort) +
			pipeline.ItemSize(p.Attrs)
		units += kb(size)
	}
	units += float64(len(tx.Deletes)) // a delete is billed on the deleted item's size; rows are small
	return units * factor
}

func kb(size int) float64 { return float64((size + 1023) / 1024) }

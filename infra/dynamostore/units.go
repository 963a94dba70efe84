package dynamostore

import (
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// numberSize is the size counted for a small number attribute's value (rev,
// ttl): DynamoDB stores a number in about one byte per two significant
// digits plus one; 8 bytes covers any revision and epoch time.
const numberSize = 8

// WriteUnits is what DynamoDB bills for committing tx in this package's
// table layout: each write costs one write request unit per started
// kilobyte of the item, and a transaction costs double (prepare and
// commit). A transaction of a single ledger entry is written as one
// conditional PutItem (Commit), at the single rate. Sizes follow DynamoDB's
// rules (attribute names plus values); an aggregate item's size counts its
// key attributes and the values being added, a lower bound when it holds
// more, and a delete is counted as one unit (rows are small).
func WriteUnits(tx *projections.Tx) float64 {
	factor := 2.0
	if tx.Len() == 1 && len(tx.Ledgers) == 1 {
		factor = 1
	}
	var units float64
	for _, l := range tx.Ledgers {
		size := len(attrPK) + len(prefixLedger) + len(l.Key) + len(attrSK) + len(skLedger) +
			len(attrRev) + numberSize + len(attrLedger) + len(l.Body)
		if l.ExpiresAt != 0 {
			size += len(attrTTL) + numberSize
		}
		units += kb(size)
	}
	for _, a := range tx.Adds {
		// PK is "A#" projection "#" key "#" shard: 4 for the separators and a
		// shard of one or two digits; the shard attribute's number, 2.
		size := len(attrPK) + len(prefixAggregate) + len(a.Ref.Projection) + len(a.Ref.Key) + 4 + len(attrSK) + len(skAggregate) +
			len(attrProjection) + len(a.Ref.Projection) + len(attrKey) + len(a.Ref.Key) + len(attrShard) + 2
		for k, v := range a.Values {
			size += len(k) + len(v.String())
		}
		units += kb(size)
	}
	for _, p := range tx.Puts {
		size := len(attrPK) + len(prefixRow) + len(p.Ref.Projection) + len(p.Ref.Partition) + len(attrSK) + len(p.Ref.Sort) +
			len(attrProjection) + len(p.Ref.Projection) + len(attrPartition) + len(p.Ref.Partition) + len(attrSort) + len(p.Ref.Sort) +
			pipeline.ItemSize(p.Attrs)
		units += kb(size)
	}
	units += float64(len(tx.Deletes))
	return units * factor
}

// WriteUnits implements projections.WriteUnitEstimator with the package's
// WriteUnits.
func (s *Store) WriteUnits(tx *projections.Tx) float64 { return WriteUnits(tx) }

// kb is the number of started kilobytes in size bytes.
func kb(size int) float64 { return float64((size + 1023) / 1024) }

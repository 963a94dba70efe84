package driver

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tributary/tributary/pipeline"
)

// The aggregate table's layout, which infra/dynamostore writes and both
// stores keep the limits and the billing of (docs/engine.md). The table has
// a string partition key PK and a string sort key SK and holds three kinds
// of item, told apart by the prefix of PK:
//
//	ledger entry  PK = "L#" + itemKey                               SK = "L"
//	              rev (N)      revision, 1 for the first write
//	              ledger (B)   the engine's encoded entry (absent when empty)
//	              ttl (N)      epoch seconds; only on entries that may expire
//
//	aggregate     PK = "A#" + projection + "#" + key + "#" + shard   SK = "A"
//	              projection (S), key (S), shard (N, decimal)
//	              one N attribute per value name, e.g. count, amount
//
//	row           PK = "R#" + projection + "#" + partition          SK = sort
//	              projection (S), partition (S), sort (S), rowOwner (S)
//	              plus the row's own attributes
//
// Logical keys, partitions and sort keys are used as they are, '#' and all.
// So that PK stays unambiguous, a projection name is escaped in PK: '%'
// becomes "%25" and '#' becomes "%23" (names without either, the usual kind,
// appear unchanged). Every attribute name of the layout is one of
// ReservedNames.
const (
	AttrPK         = "PK"
	AttrSK         = "SK"
	AttrRev        = "rev"
	AttrLedger     = "ledger"
	AttrTTL        = "ttl"
	AttrProjection = "projection"
	AttrKey        = "key"
	AttrShard      = "shard"
	AttrPartition  = "partition"
	AttrSort       = "sort"
	AttrOwner      = "rowOwner"

	PrefixLedger    = "L#"
	PrefixAggregate = "A#"
	PrefixRow       = "R#"
	SortLedger      = "L"
	SortAggregate   = "A"
)

// AggregatePartitionKey is the PK of one stored aggregate item.
func AggregatePartitionKey(ref AggregateRef) string {
	return PrefixAggregate + escapeProjection(ref.Projection) + "#" + ref.Key + "#" + strconv.Itoa(ref.Shard)
}

// RowPartitionKey is the PK of the rows of one projection's partition.
func RowPartitionKey(projection, partition string) string {
	return PrefixRow + escapeProjection(projection) + "#" + partition
}

// projectionEscaper escapes a projection name for PK, so that the first '#'
// after the prefix ends it.
var projectionEscaper = strings.NewReplacer("%", "%25", "#", "%23")

func escapeProjection(name string) string {
	if !strings.ContainsAny(name, "%#") {
		return name
	}
	return projectionEscaper.Replace(name)
}

// DynamoDB's limits on a key attribute's value, in bytes of UTF-8.
const (
	MaxPartitionKeyBytes = 2048
	MaxSortKeyBytes      = 1024
)

// CheckAggregate reports whether ref's aggregate item fits DynamoDB's
// keys in the layout: its partition key, A#<projection>#<key>#<shard>, at
// most 2,048 bytes of valid UTF-8. Both stores keep this limit
// (KeyLimiter), so that what runs on the embedded store runs on DynamoDB.
func CheckAggregate(ref AggregateRef) error {
	return checkKey("aggregate partition key", AggregatePartitionKey(ref), MaxPartitionKeyBytes)
}

// CheckRow reports whether ref's row fits DynamoDB's keys in the layout:
// its partition key, R#<projection>#<partition>, at most 2,048 bytes and
// its sort key at most 1,024, of valid UTF-8, neither empty.
func CheckRow(ref RowRef) error {
	if err := checkKey("row partition key", RowPartitionKey(ref.Projection, ref.Partition), MaxPartitionKeyBytes); err != nil {
		return err
	}
	return checkKey("row sort key", ref.Sort, MaxSortKeyBytes)
}

func checkKey(what, key string, limit int) error {
	switch {
	case key == "":
		return &KeyError{What: what, Key: key, Reason: "empty"}
	case !utf8.ValidString(key):
		return &KeyError{What: what, Key: key, Reason: "not valid UTF-8"}
	case len(key) > limit:
		return &KeyError{What: what, Key: key, Size: len(key), Limit: limit}
	}
	return nil
}

// numberSize is the size counted for a small number attribute's value (rev,
// ttl): DynamoDB stores a number in about one byte per two significant
// digits plus one; 8 bytes covers any revision and epoch time.
const numberSize = 8

// WriteUnits is what DynamoDB bills for committing tx in the layout: each
// write costs one write request unit per started kilobyte of the item, and
// a transaction costs double (prepare and commit). A transaction of a
// single ledger entry is written as one conditional PutItem, at the single
// rate. Sizes follow DynamoDB's rules (attribute names plus values); an
// aggregate item's size counts its key attributes and the values being
// added, a lower bound when it holds more, and a delete is counted as one
// unit (rows are small). Both stores estimate their commits with it
// (WriteUnitEstimator).
func WriteUnits(tx *Tx) float64 {
	factor, units := ledgerUnits(tx)
	for _, a := range tx.Adds {
		// PK is "A#" projection "#" key "#" shard: 4 for the separators and a
		// shard of one or two digits; the shard attribute's number, 2.
		size := len(AttrPK) + len(PrefixAggregate) + len(a.Ref.Projection) + len(a.Ref.Key) + 4 + len(AttrSK) + len(SortAggregate) +
			len(AttrProjection) + len(a.Ref.Projection) + len(AttrKey) + len(a.Ref.Key) + len(AttrShard) + 2
		for k, v := range a.Values {
			size += len(k) + len(v.String())
		}
		units += kb(size)
	}
	for _, p := range tx.Puts {
		size := len(AttrPK) + len(PrefixRow) + len(p.Ref.Projection) + len(p.Ref.Partition) + len(AttrSK) + len(p.Ref.Sort) +
			len(AttrProjection) + len(p.Ref.Projection) + len(AttrPartition) + len(p.Ref.Partition) + len(AttrSort) + len(p.Ref.Sort) +
			pipeline.ItemSize(p.Attrs)
		if p.Owner != "" {
			size += len(AttrOwner) + len(p.Owner)
		}
		units += kb(size)
	}
	units += float64(len(tx.Deletes))
	return units * factor
}

// ledgerUnits returns what a transaction's cost is multiplied by (2, or
// 1 for a single ledger entry, written as one conditional PutItem) and
// the units of its ledger entries.
func ledgerUnits(tx *Tx) (factor, units float64) {
	factor = 2
	if tx.Len() == 1 && len(tx.Ledgers) == 1 {
		factor = 1
	}
	for _, l := range tx.Ledgers {
		units += kb(ledgerSize(l))
	}
	return factor, units
}

// ledgerSize is a ledger entry's size in the layout.
func ledgerSize(l LedgerPut) int {
	size := len(AttrPK) + len(PrefixLedger) + len(l.Key) + len(AttrSK) + len(SortLedger) +
		len(AttrRev) + numberSize + len(AttrLedger) + len(l.Body)
	if l.ExpiresAt != 0 {
		size += len(AttrTTL) + numberSize
	}
	return size
}

// kb is the number of started kilobytes in size bytes.
func kb(size int) float64 { return float64((size + 1023) / 1024) }

// Package layout is DynamoDB's side of the store contract that both
// stores keep (infra/dynamostore writes it, infra/boltstore keeps its
// limits and its billing): the aggregate table's layout (docs/engine.md),
// its key limits, where a target store keeps its claims, and the
// write-unit model of a commit (WriteUnits, TargetWriteUnits).
package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
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
// driver.ReservedNames.
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
func AggregatePartitionKey(ref driver.AggregateRef) string {
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
// (driver.KeyLimiter), so that what runs on the embedded store runs on DynamoDB.
func CheckAggregate(ref driver.AggregateRef) error {
	return checkKey("aggregate partition key", AggregatePartitionKey(ref), MaxPartitionKeyBytes)
}

// CheckRow reports whether ref's row fits DynamoDB's keys in the layout:
// its partition key, R#<projection>#<partition>, at most 2,048 bytes and
// its sort key at most 1,024, of valid UTF-8, neither empty.
func CheckRow(ref driver.RowRef) error {
	if err := checkKey("row partition key", RowPartitionKey(ref.Projection, ref.Partition), MaxPartitionKeyBytes); err != nil {
		return err
	}
	return checkKey("row sort key", ref.Sort, MaxSortKeyBytes)
}

func checkKey(what, key string, limit int) error {
	switch {
	case key == "":
		return &driver.KeyError{What: what, Key: key, Reason: "empty"}
	case !utf8.ValidString(key):
		return &driver.KeyError{What: what, Key: key, Reason: "not valid UTF-8"}
	case len(key) > limit:
		return &driver.KeyError{What: what, Key: key, Size: len(key), Limit: limit}
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
// (driver.WriteUnitEstimator).
func WriteUnits(tx *driver.Tx) float64 {
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
func ledgerUnits(tx *driver.Tx) (factor, units float64) {
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
func ledgerSize(l driver.LedgerPut) int {
	size := len(AttrPK) + len(PrefixLedger) + len(l.Key) + len(AttrSK) + len(SortLedger) +
		len(AttrRev) + numberSize + len(AttrLedger) + len(l.Body)
	if l.ExpiresAt != 0 {
		size += len(AttrTTL) + numberSize
	}
	return size
}

// kb is the number of started kilobytes in size bytes.
func kb(size int) float64 { return float64((size + 1023) / 1024) }

// ClaimRef is the row under which a target store keeps the claim on the
// target item of ref, in the aggregate table's layout (above): the
// target's partition key text, and "K" and its sort key text; when that
// does not fit DynamoDB's keys (a target key near its limits) or holds a
// 0x00 byte (which the embedded store reserves), a SHA-256 of both under
// the sort "H". A claim names the source item that owns the target item
// (driver.RowPut.Owner); it holds no attribute of the item.
func ClaimRef(ref driver.RowRef) driver.RowRef {
	c := driver.RowRef{Projection: ref.Projection, Partition: ref.Partition, Sort: "K" + ref.Sort}
	if CheckRow(c) == nil && !strings.ContainsRune(c.Partition+c.Sort, 0) {
		return c
	}
	sum := sha256.Sum256([]byte(ref.Partition + "\x00" + ref.Sort))
	return driver.RowRef{Projection: ref.Projection, Partition: "sha256:" + hex.EncodeToString(sum[:]), Sort: "H"}
}

// claimSize is a claim item's size in the layout: its keys, projection,
// partition, sort and owner.
func claimSize(ref driver.RowRef, owner string) int {
	c := ClaimRef(ref)
	return len(AttrPK) + len(PrefixRow) + len(c.Projection) + 1 + len(c.Partition) + len(AttrSK) + len(c.Sort) +
		len(AttrProjection) + len(c.Projection) + len(AttrPartition) + len(c.Partition) + len(AttrSort) + len(c.Sort) +
		len(AttrOwner) + len(owner)
}

// TargetWriteUnits is what DynamoDB bills for committing tx in a target
// store: the ledger entries as WriteUnits counts them, each row put a
// write of the target item (ItemSize of its attributes) and, unless the
// put's owner holds the row already (driver.RowPut.Held), of its claim; each row
// delete one unit for the item and one for the claim. A transaction costs
// double, but one of a single ledger entry.
func TargetWriteUnits(tx *driver.Tx) float64 {
	factor, units := ledgerUnits(tx)
	for _, p := range tx.Puts {
		units += kb(pipeline.ItemSize(p.Attrs))
		if !p.Held {
			units += kb(claimSize(p.Ref, p.Owner))
		}
	}
	units += 2 * float64(len(tx.Deletes))
	return units * factor
}

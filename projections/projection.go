// Package projections is Tributary's projection engine: it keeps aggregate
// tables exactly right under the at-least-once delivery of every change source.
//
// A Projection is a small, pure function from one item image to its
// contributions: additive deltas on aggregate items (counts, exact decimal sums)
// and materialised rows (a leaderboard index row). The Engine applies, for each
// item, contributions(newest image) − contributions(last applied image), with a
// per-item ledger written in the same transaction as the aggregate deltas, so
// retries, duplicates, reordering and replays change nothing twice.
//
// Stores persist the ledger, the aggregates and the rows behind the small
// driver.Store interface (projections/driver, the contract between the
// engine and its stores); infra/boltstore (embedded, on disk) and
// infra/dynamostore (DynamoDB) implement it and pass the same conformance
// suite (projections/driver/drivertest).
package projections

import (
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// Projection derives contributions from one item image.
//
// Contribute must be pure and deterministic: the same image always gives the
// same contribution, whenever and however often it is called, because the engine
// calls it for new images and relies on the ledger for old ones. It must not
// keep the image. An error marks the image as one the projection cannot handle
// (a poison record); the engine reports it and applies nothing for that item.
type Projection interface {
	// Name identifies the projection in aggregate keys, the ledger, metrics and
	// replay filters. It must stay stable: renaming a projection is a migration.
	Name() string
	// EntityTypes lists the entity types whose items this projection reads.
	EntityTypes() []string
	// Contribute returns what one item image contributes.
	Contribute(item pipeline.Item) (Contribution, error)
}

// Contribution is what one item image contributes to one projection.
type Contribution struct {
	Counters []Counter
	Rows     []Row
}

// Counter is an additive contribution to one aggregate item.
type Counter struct {
	// Key is the aggregate's logical key, e.g. "ORDERS#PAID#DAY#2026-11-30".
	Key string
	// Values are added to the aggregate's values of the same names. A value
	// name must be a plain attribute name, not one a Store may use for its
	// own bookkeeping (see ReservedNames).
	Values map[string]decimal.Decimal
	// Shards write-shards an aggregate that many items touch: the engine adds
	// each item's contribution to one of Shards physical items, chosen by a
	// hash of the source item's key, and readers sum them. 0 or 1: unsharded.
	Shards int
}

// Row is a materialised row owned by one source item: a leaderboard entry,
// a per-document summary. Rows live under a partition and sort key so that
// one Query reads them in order.
type Row struct {
	// Partition groups rows that are read together, e.g. "SEASON#2026-Q2".
	Partition string
	// Sort orders rows within the partition, e.g. "RATING#0000001842#PLAYER#u8231".
	Sort string
	// Attrs are the row's attributes. Names must not be reserved (see
	// ReservedNames).
	Attrs pipeline.Item
	// Expires, when not 0, is when (epoch seconds) the row's store may
	// remove it on its own (its time to live): a check of the table
	// leaves a row out whose time has passed. The ledger keeps it.
	Expires int64
}

// An OthersReader is a projection that may read items of entity types it
// does not list, and items without one: one whose ReadsOtherTypes is true
// is handed them too (a remodel that copies the types its transform does
// not name).
type OthersReader interface {
	ReadsOtherTypes() bool
}

// A ClaimDescriber is a projection that names its rows itself in a
// collision: two source items that claim one row. A remodel's rows are
// target items, and two source items the transform maps to one key are
// said so. DescribeClaim returns what the row is ("target item
// PK=DOC#1 SK=CMT#2 of comments-table") and what to do about it.
type ClaimDescriber interface {
	DescribeClaim(ref driver.RowRef) (row, hint string)
}

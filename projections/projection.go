// Package projections is the API of a projection's author: what one item
// contributes to aggregate tables, and how to check a table against its
// items.
//
// A Projection is a small, pure function from one item image to its
// contributions: additive deltas on aggregate items (counts, exact decimal sums)
// and materialised rows (a leaderboard index row). A Set is the projections
// one aggregate table is built from; an Environment is a table's set, schema
// and transforms, what the functions' Main(env) and cli.Main take.
// Recompute, ReadView and Diff check a table against its items.
//
// Tributary's engine applies a Set to a table: for each item,
// contributions(newest image) − contributions(last applied image), with a
// per-item ledger written in the same transaction as the aggregate deltas,
// so retries, duplicates, reordering and replays change nothing twice. A
// team runs it through the functions and the command line (docs/engine.md).
// Stores persist the ledger, the aggregates and the rows behind the small
// driver.Store interface (projections/driver); infra/boltstore (embedded,
// on disk) and infra/dynamostore (DynamoDB) implement it and pass the same
// conformance suite (projections/driver/drivertest).
package projections

import (
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
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
	// own bookkeeping (see driver.ReservedNames).
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
	// driver.ReservedNames).
	Attrs pipeline.Item
	// Expires, when not 0, is when (epoch seconds) the row's store may
	// remove it on its own (its time to live): a check of the table
	// leaves a row out whose time has passed. The ledger keeps it.
	Expires int64
}

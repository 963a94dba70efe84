// Package driver is the contract between the projection engine and the
// stores that keep an aggregate table, the one a store of a team's own
// implements: Table (Store, ledger reads and atomic commits with
// DynamoDB's transactional semantics, and Reader, scans and queries), the
// errors a commit reports (ConflictError, ClaimError, RangeError,
// ErrContention, KeyError) and the optional capabilities a store may have
// (WriteUnitEstimator, GroupCommitter, KeyLimiter, NameReserver,
// ActionCounter).
//
// Beside it, projections/driver/layout holds DynamoDB's side of the
// contract that both stores keep: the aggregate table's layout
// (docs/engine.md), its key limits and its write-unit model; and
// projections/driver/target the second kind of store, a remodel's target.
//
// infra/boltstore (embedded, on disk) and infra/dynamostore (DynamoDB)
// implement it, and both pass the conformance suite in
// projections/driver/drivertest, as a store of a team's own would.
package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
)

// Limits of one DynamoDB transaction (TransactWriteItems).
const (
	MaxTxActions = 100
	MaxTxBytes   = 4 << 20
)

// Table is an aggregate table as an engine's entry point needs it: what the
// engine writes to (Store) and what readers read (Reader).
type Table interface {
	Store
	Reader
}

// Store persists ledger entries, aggregates and rows with the transactional
// semantics of DynamoDB's TransactWriteItems. Implementations must be safe for
// concurrent use.
type Store interface {
	// ReadLedgers returns the ledger entries stored under the given item keys.
	// Keys with no entry are absent from the map. Reads may be eventually
	// consistent: Commit's conditions catch a stale read.
	ReadLedgers(ctx context.Context, keys []string) (map[string]LedgerEntry, error)
	// Commit applies tx atomically: all of it or none of it. Every ledger put is
	// conditioned on the entry's current revision being ExpectRev (0: no entry);
	// if any condition fails nothing is written and the error is a
	// *ConflictError holding the current entries of the keys that failed.
	// An aggregate value the transaction would take out of DynamoDB's
	// number range fails it, writing nothing, with a *RangeError.
	// Contention with concurrent writers that a retry can resolve is reported as
	// an error matching ErrContention. A row put or delete that names an
	// Owner is refused when the stored row has another owner (a row stored
	// without one is anybody's; deleting a row that is not there is no
	// error): nothing is written, and the error is a *ClaimError naming
	// the row and the owner it has. A Tx that is empty is a no-op. A Tx
	// with a reserved value or row attribute name (ReservedNames) is refused
	// and nothing of it written.
	Commit(ctx context.Context, tx *Tx) error
}

// reservedNames are the attribute names a Store may use for its own
// bookkeeping beside the values and row attributes it is given: keys, the
// parts of an aggregate's or row's reference, a ledger entry's revision,
// body and expiry, a row's owner (infra/dynamostore uses them all).
var reservedNames = [...]string{"PK", "SK", "projection", "key", "shard", "partition", "sort", "rev", "ledger", "ttl", "rowOwner"}

// ReservedNames returns the attribute names a Store may use for its own
// bookkeeping. They are part of the Store contract: no counter value
// (Counter.Values) and no top-level row attribute (Row.Attrs) may have one
// of these names, or the empty name; the engine fails such a contribution
// as a permanent error, and a Store refuses a Tx that holds one (writing
// nothing), whether it uses the name or not. A Store whose layout needs a
// name of its own must take it from this list.
func ReservedNames() []string { return slices.Clone(reservedNames[:]) }

// ReservedName reports whether name is one of ReservedNames, or empty: a
// name that cannot name a counter value or a row attribute.
func ReservedName(name string) bool {
	return name == "" || slices.Contains(reservedNames[:], name)
}

// WriteUnitEstimator is an optional capability of a Store, found by type
// assertion: what committing tx costs in the store's billing unit (for
// DynamoDB, write request units). The engine adds the estimate of every
// commit it attempts to Stats.WriteUnits and the WriteUnits metric; over a
// store without it, both stay at zero. A store that wraps another should
// pass its estimate on.
type WriteUnitEstimator interface {
	WriteUnits(tx *Tx) float64
}

// GroupCommitter is an optional capability of a Store, found by type
// assertion: committing several transactions at once, all or none, as if
// each were committed after the one before it with no failure. A store
// that syncs each commit to disk syncs a group once (the embedded store),
// so that a batch of many small transactions costs one sync. On any error
// nothing of the group is applied: the caller commits them one by one to
// learn which failed and why. Each transaction is still billed as its own
// (WriteUnitEstimator): the group is a local store's economy, and a store
// that cannot make one atomic (DynamoDB) does not offer it.
type GroupCommitter interface {
	CommitGroup(ctx context.Context, txs []*Tx) error
}

// KeyLimiter is an optional capability of a Store, found by type assertion:
// whether it can hold an aggregate or a row under the given keys, within
// the limits of its layout (its prefixes and separators included). The
// engine asks it where contributions are built, so that a contribution the
// store cannot hold fails its record alone, as permanent, instead of the
// transaction of its neighbours. A store that wraps another should pass
// its answer on.
type KeyLimiter interface {
	// CheckAggregate reports whether the aggregate item of ref can be
	// stored; the error is a *KeyError.
	CheckAggregate(ref AggregateRef) error
	// CheckRow reports whether the row of ref can be stored.
	CheckRow(ref RowRef) error
}

// KeyError is a key a store cannot hold.
type KeyError struct {
	// What names the key, e.g. "aggregate key" or "row sort key".
	What string
	// Key is the key, as the store would write it.
	Key string
	// Size and Limit are its size in bytes and the most the store takes
	// (0: the key is refused for what it holds, Reason).
	Size, Limit int
	Reason      string
}

func (e *KeyError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("%s %s: %d bytes, more than the %d the store's key takes", e.What, quote.Value(e.Key), e.Size, e.Limit)
	}
	return fmt.Sprintf("%s %s: %s", e.What, quote.Value(e.Key), e.Reason)
}

// WriteUnitsOf is store's estimate of committing tx (WriteUnitEstimator),
// or 0 when it makes none.
func WriteUnitsOf(store Store, tx *Tx) float64 {
	if u, ok := store.(WriteUnitEstimator); ok {
		return u.WriteUnits(tx)
	}
	return 0
}

// Reader reads the aggregates and rows a Store holds, for queries, the CLI and
// verification.
type Reader interface {
	// ScanAggregates calls fn for every stored aggregate item (one per shard),
	// in no particular order.
	ScanAggregates(ctx context.Context, fn func(ref AggregateRef, values map[string]decimal.Decimal) error) error
	// ScanRows calls fn for every stored row, in no particular order.
	ScanRows(ctx context.Context, fn func(row StoredRow) error) error
	// QueryRows returns up to limit rows of one projection's partition, in
	// descending sort-key order (limit <= 0: all of them).
	QueryRows(ctx context.Context, projection, partition string, limit int) ([]StoredRow, error)
	// ScanLedgers calls fn for every stored ledger entry (items', markers',
	// partials'), by key, in no particular order: what the per-item state
	// says, for verification.
	ScanLedgers(ctx context.Context, fn func(key string, entry LedgerEntry) error) error
}

// LedgerEntry is a stored ledger row: a revision for optimistic concurrency,
// and the engine's encoded record of what the item last contributed.
type LedgerEntry struct {
	Rev  int64
	Body []byte
}

// Tx is one atomic write: ledger puts and the aggregate deltas and row writes
// of exactly those ledger entries' items. No two operations in a Tx may touch
// the same stored item.
type Tx struct {
	Ledgers []LedgerPut
	Adds    []Add
	Puts    []RowPut
	Deletes []RowDelete
}

// Len is the number of write actions in the transaction.
func (tx *Tx) Len() int { return len(tx.Ledgers) + len(tx.Adds) + len(tx.Puts) + len(tx.Deletes) }

// LedgerPut writes a ledger entry with revision ExpectRev+1, on condition that
// the stored revision is ExpectRev (0: that there is no entry).
type LedgerPut struct {
	Key       string
	ExpectRev int64
	Body      []byte
	// ExpiresAt, when non-zero, is an epoch-seconds time after which the store
	// may delete the entry (DynamoDB TTL). Used for tombstones.
	ExpiresAt int64
}

// AggregateRef names one stored aggregate item: a projection's logical key and
// the write shard.
type AggregateRef struct {
	Projection string
	Key        string
	Shard      int
}

// Add adds Values to an aggregate item, creating it when missing (values
// missing from the item count as zero).
type Add struct {
	Ref    AggregateRef
	Values map[string]decimal.Decimal
}

// RowRef names one stored row.
type RowRef struct {
	Projection string
	Partition  string
	Sort       string
}

// Compare orders row references by projection, then partition, then sort
// key (the order a Query of one partition reads them in): -1 when r sorts
// before o, +1 after, 0 when they are the same row.
func (r RowRef) Compare(o RowRef) int {
	return cmp.Or(
		strings.Compare(r.Projection, o.Projection),
		strings.Compare(r.Partition, o.Partition),
		strings.Compare(r.Sort, o.Sort))
}

// RowPut creates or replaces a row.
type RowPut struct {
	Ref   RowRef
	Attrs pipeline.Item
	// Owner is the source item the row is owned by (its ledger key): the
	// put is refused with a *ClaimError when another item owns the row. ""
	// puts it whoever owns it.
	Owner string
	// From, when not "", is an owner the row may be taken from: one that
	// releases it in the same transaction, or no longer claims it.
	From string
	// CheckFrom marks a From taken over because its ledger entry, as read,
	// no longer claims the row: the store checks in the same transaction
	// that the entry's revision is still FromRev (0: that it has none), so
	// that a takeover never rests on a stale read; when it is not, the
	// commit fails with a *ClaimError naming From as the owner. The check
	// takes an action of its own (Actions).
	CheckFrom bool
	FromRev   int64
	// Held says that Owner's ledger entry, whose revision the transaction
	// is conditioned on, holds the row already: a store that keeps the
	// claim apart from the row (a target store) need not check or write
	// it again. A store that keeps the owner in the row ignores it.
	Held bool
}

// RowDelete deletes a row, if its Owner (when not "") owns it.
type RowDelete struct {
	Ref   RowRef
	Owner string
}

// StoredRow is a row as a Reader returns it.
type StoredRow struct {
	Ref   RowRef
	Attrs pipeline.Item
	// Owner is the source item that owns the row; "" for a row stored
	// without one.
	Owner string
}

// ClaimError is returned by Commit when a row put or delete names an owner
// and another source item owns the row: two items' contributions, or a
// transform's target items, claim one key. Nothing is written.
type ClaimError struct {
	Ref RowRef
	// Owner is the row's owner; Claimant the one refused.
	Owner, Claimant string
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("row %s/%s/%s is owned by item %s, not %s", e.Ref.Projection, quote.Value(e.Ref.Partition), quote.Value(e.Ref.Sort), e.Owner, e.Claimant)
}

// ErrContention marks a Commit that failed because of concurrent writers or
// throttling; the same transaction may succeed if retried after a backoff.
var ErrContention = errors.New("projections: transaction contention")

// RangeError is returned by Commit when an aggregate value would leave
// DynamoDB's number range (38 significant digits, magnitudes from 1E-130 to
// under 1E+126) with the transaction's delta added: DynamoDB refuses such
// an update, and so must every store. Nothing is written. Retrying the same
// transaction cannot help; the engine finds the change whose contribution
// overflows and fails it as permanent.
type RangeError struct {
	Ref  AggregateRef
	Name string // the value's name
	Err  error  // the store's cause
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("aggregate %s/%s shard %d, value %s: the sum leaves DynamoDB's number range: %v", e.Ref.Projection, e.Ref.Key, e.Ref.Shard, e.Name, e.Err)
}

func (e *RangeError) Unwrap() error { return e.Err }

// ConflictError is returned by Commit when a ledger condition failed. Current
// holds, for each key whose condition failed, the entry now stored (Rev 0 and
// no body when there is none).
type ConflictError struct {
	Current map[string]LedgerEntry
}

func (e *ConflictError) Error() string {
	keys := make([]string, 0, len(e.Current))
	for k := range e.Current {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Sprintf("projections: ledger condition failed for %d item(s): %s", len(keys), strings.Join(keys, ", "))
}

// NameReserver is an optional capability of a Store, found by type
// assertion: the attribute names it keeps for its own bookkeeping, when
// they are not ReservedNames. A target store keeps nothing of its own in
// the target items, so it reserves no name (but the empty one). The
// engine asks Reserved.
type NameReserver interface {
	ReservesName(name string) bool
}

// Reserved reports whether store reserves name: NameReserver's answer,
// or ReservedName's for a store without it.
func Reserved(store Store, name string) bool {
	if r, ok := store.(NameReserver); ok {
		return r.ReservesName(name)
	}
	return ReservedName(name)
}

// ActionCounter is an optional capability of a Store, found by type
// assertion: how many of a transaction's MaxTxActions one row write
// takes, for a store that writes more than one item per row (a target
// store: the target item and its claim). A store without it takes one
// action per row write, and one more for a put's check of the owner it
// takes the row from (RowPut.CheckFrom).
type ActionCounter interface {
	PutActions(p RowPut) int
	DeleteActions(d RowDelete) int
}

// Actions is how many of a transaction's MaxTxActions tx takes in store.
func Actions(store Store, tx *Tx) int {
	ac, ok := store.(ActionCounter)
	if !ok {
		n := tx.Len()
		for _, p := range tx.Puts {
			if p.CheckFrom {
				n++ // the check of From's ledger entry
			}
		}
		return n
	}
	n := len(tx.Ledgers) + len(tx.Adds)
	for _, p := range tx.Puts {
		n += ac.PutActions(p)
	}
	for _, d := range tx.Deletes {
		n += ac.DeleteActions(d)
	}
	return n
}

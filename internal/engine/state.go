package engine

import (
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
)

// ItemState is what a table's ledger entry records of one source item:
// the order token of the last change applied, whether it removed the
// item, and the rows the item holds (by the hash of their attributes).
// It is for checks of a table from outside the engine (a remodel's gate);
// AsOfCheck reads the same.
type ItemState struct {
	Token   Token
	Removed bool
	Rows    []RowState
}

// RowState is one row an item holds, as its ledger entry records it.
type RowState struct {
	Ref driver.RowRef
	// Hash is RowHash of the row's attributes.
	Hash string
	// Expires is the row's projections.Row.Expires; 0: none.
	Expires int64
}

// DecodeItemState decodes the ledger entry stored under key. ok is false
// for an entry that is not a source item's (a marker, a backfill's
// partial: their keys start with '#').
func DecodeItemState(key string, e driver.LedgerEntry) (s ItemState, ok bool, err error) {
	if strings.HasPrefix(key, "#") {
		return s, false, nil
	}
	l, err := decodeLedger(key, e)
	if err != nil {
		return s, false, err
	}
	s = ItemState{Token: l.Tok, Removed: l.Removed, Rows: make([]RowState, len(l.C.Rows))}
	for i, r := range l.C.Rows {
		s.Rows[i] = RowState{Ref: r.Ref, Hash: r.Hash, Expires: r.Expires}
	}
	return s, true, nil
}

// RowHash is the hash of a row's attributes that a ledger entry records
// (RowState.Hash): equal attributes, equal hashes.
func RowHash(attrs pipeline.Item) string { return hashItem(attrs) }

// LedgerKey is the ledger key of the source item with these key
// attributes.
func LedgerKey(keys pipeline.Item) string { return ledgerKey(keys) }

// AsOfToken is the token of an item's state as an export taken at t holds
// it, without its version: a ledger entry whose token is Newer than it
// was written by a change after the export (as AsOfCheck tells them).
func AsOfToken(t time.Time) Token {
	return Token{Micros: t.UnixMicro(), Precision: pipeline.Microsecond, Export: true}
}

// DescribeOwner renders a source item's ledger key (a row's owner) for
// people, "PK=USER#u42 SK=PROFILE", as pipeline.KeyString renders keys.
func DescribeOwner(key string) string { return describeOwner(key) }

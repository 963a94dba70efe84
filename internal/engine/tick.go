package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline"
)

// The gates (AsOfCheck, a remodel's Check) judge an item's state in a
// table against an export by its ledger entry's token: a state newer than
// the export's point was written by a change since. By time alone that
// cannot be told for a state in the export's own clock tick (its second,
// for a DynamoDB Streams record): its change may have come before the
// export's point or after it. There the version decides, within one
// incarnation of the item; where it cannot, a gate names the item rather
// than agree. This is the gates' rule only: the engine's fencing
// (Token.Newer) stays as it is.

// InTick reports whether tok, a ledger entry's token written by a change
// (not by an export), falls in the clock tick of an export's point asOf, at
// the change's own precision (the second for a DynamoDB Streams record):
// by time alone, whether the change came before the export's point or
// after it cannot be told.
func InTick(tok Token, asOf time.Time) bool {
	if tok.Export || tok.Micros == 0 {
		return false
	}
	p := tickOf(tok)
	us := asOf.UnixMicro()
	return truncMicros(tok.Micros, p) == truncMicros(us, p)
}

// tickOf is the precision a change's token is compared at with an
// export's point: the second for a DynamoDB Streams record, as
// Token.Newer compares them.
func tickOf(tok Token) pipeline.Precision {
	switch {
	case tok.Seq != "":
		return pipeline.Second
	case tok.Precision == 0:
		return pipeline.Microsecond
	}
	return tok.Precision
}

// ExportWrites is what an export chain knows of its items' writes: with
// incremental exports, every write from From to the chain's point, each
// item's last one at the microsecond (an incremental export line's
// write time).
type ExportWrites struct {
	// From is the start of the incremental exports' window: the first
	// one's start (the chain is contiguous).
	From time.Time
	// Last returns the time of the last write of the item with this key
	// (a pipeline.ItemKey) from From on, zero for none; known is false
	// when the exports do not tell it.
	Last func(itemKey string) (t time.Time, known bool)
}

// ItemKeyOf is the pipeline.ItemKey of the source item with this ledger
// key: itemKey when known, else the ledger key's, but for a key held as
// its hash (""): its item's key cannot be read back from it.
func ItemKeyOf(ledgerKey, itemKey string) string {
	switch {
	case itemKey != "":
		return itemKey
	case strings.HasPrefix(ledgerKey, "sha256:"):
		return ""
	}
	return ledgerKey
}

// Of returns what w knows of the writes of the item with this key
// (ExportState's LastWrite and WritesFrom); zero when w is nil or the key
// is not known ("").
func (w *ExportWrites) Of(itemKey string) (last, from time.Time) {
	if w == nil || w.Last == nil || w.From.IsZero() || itemKey == "" {
		return time.Time{}, time.Time{}
	}
	t, known := w.Last(itemKey)
	if !known {
		return time.Time{}, time.Time{}
	}
	return t, w.From
}

// ExportState is what an export holds of an item, for JudgeTick.
type ExportState struct {
	// Present is false when the export lacks the item.
	Present bool
	// Version is the item's version attribute; HasVersion false when it
	// has none (or one that is not a non-negative integer).
	Version    int64
	HasVersion bool
	// WritesFrom, when not zero, is the time from which the export chain
	// knows every write of the item (its incremental exports' window, up
	// to their end), and LastWrite the last of them (zero: none since
	// WritesFrom): a state in the export's own tick whose tick starts at
	// or after WritesFrom, of an item written last before that start, was
	// written after the export's point.
	WritesFrom, LastWrite time.Time
}

// ExportStateOf reads the version of an export's item from its version
// attribute (versionAttribute; default pipeline.DefaultVersionAttribute).
func ExportStateOf(item pipeline.Item, versionAttribute string) ExportState {
	if versionAttribute == "" {
		versionAttribute = pipeline.DefaultVersionAttribute
	}
	v, ok, err := pipeline.ItemVersion(item, versionAttribute)
	return ExportState{Present: true, Version: v, HasVersion: ok && err == nil}
}

// JudgeTick judges an item whose ledger state (tok, removed) is in the
// export's own clock tick (InTick), and whose contributions there differ
// from those of the export's state of it (x): since is true when the
// state was written by a change since the export (the item is expected as
// its ledger entry says), and otherwise why says why the item cannot be
// judged.
//
// With incremental exports last (x.WritesFrom at or before the tick's
// start), the export knows every write of the item in the tick up to its
// point: when its last write (x.LastWrite) is before the tick's start, or
// there is none, nothing wrote the item in the tick before the export's
// point, so the state in the ledger, which is in that tick, was written
// after it (since). Only an item written inside the tick is left to the
// version, which orders two states of one incarnation; it restarts
// when the item is deleted and created again, so only a higher version
// than the export's tells:
//
//   - the export lacks the item: a removal in the ledger is the same
//     either way (since); any other state may be a creation since the
//     export, or a state before it whose removal the table missed;
//   - the ledger holds a removal, the export the item: removed since, or
//     removed and created again before the export's point with the
//     re-creation missed;
//   - either side has no version;
//   - a higher version in the ledger: changed since; an equal one with
//     other contributions: another incarnation, before or after the
//     export; a lower one: a change the table missed, or a removal and
//     re-creation since.
func JudgeTick(tok Token, removed bool, x ExportState) (since bool, why string) {
	at := fmt.Sprintf("in the export's own %s (%s)", tickName(tok), time.UnixMicro(tok.Micros).UTC().Format(time.RFC3339Nano))
	restarts := "the time cannot tell, and a re-created item's version restarts"
	if start := time.UnixMicro(truncMicros(tok.Micros, tickOf(tok))); !x.WritesFrom.IsZero() && !x.WritesFrom.After(start) && x.LastWrite.Before(start) {
		return true, "" // nothing wrote it in the tick before the export's point
	}
	switch {
	case !x.Present && removed:
		return true, ""
	case !x.Present:
		return false, fmt.Sprintf("its state in the table is from a change %s and the export lacks the item: created since the export, or removed before it with the removal missed (%s)", at, restarts)
	case removed:
		return false, fmt.Sprintf("its state in the table is a removal %s and the export holds the item: removed since, or removed and created again before the export with the re-creation missed (%s)", at, restarts)
	case !tok.HasVersion && !x.HasVersion:
		return false, fmt.Sprintf("its state in the table is from a change %s, differs from the export's, and neither has a version attribute to order them", at)
	case !tok.HasVersion:
		return false, fmt.Sprintf("its state in the table is from a change %s, differs from the export's (version %d), and has no version attribute to order them", at, x.Version)
	case !x.HasVersion:
		return false, fmt.Sprintf("its state in the table (version %d) is from a change %s and differs from the export's, which has no version attribute to order them", tok.Version, at)
	case tok.Version > x.Version:
		return true, ""
	case tok.Version == x.Version:
		return false, fmt.Sprintf("its state in the table (version %d, from a change %s) differs from the export's of the same version: another incarnation of the item, before the export or since (%s)", tok.Version, at, restarts)
	}
	return false, fmt.Sprintf("its state in the table (version %d, from a change %s) is older than the export's (version %d): a change the table missed, or the item removed and created again since (%s)", tok.Version, at, x.Version, restarts)
}

func tickName(tok Token) string {
	switch tickOf(tok) {
	case pipeline.Second:
		return "second"
	case pipeline.Millisecond:
		return "millisecond"
	}
	return "microsecond"
}

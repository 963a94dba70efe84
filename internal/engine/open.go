package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// Why an aggregate table belongs to one projection set.
//
// The engine keeps one ledger entry per source item for every projection of
// the item's types: what the item contributed to each, at the last change
// applied. An engine that runs other projections than the ones that built a
// table computes an item's delta as contributions(new image, its
// projections) − ledger(the table's projections): it retracts what the item
// gave every projection it does not run, adds to its own ones only the
// items it happens to see, and records ledger entries that list only its
// own. A projection whose definition changed is no better: the ledger holds
// what the old definition contributed, and only the items that change again
// move to the new one. So a table records which set built it, in a marker
// (a ledger entry under a key no item can have), and every engine is made
// by Open, which refuses a table another set built.

// markerKey is the ledger key of a table's projection-set marker. Item
// ledger keys are canonical key JSON ("{...}") or "sha256:...", never this.
const markerKey = "#tributary/projection-set"

// ErrProjectionSet matches a *SetMismatchError: the table was built by
// another projection set than the engine's.
var ErrProjectionSet = errors.New("projection set mismatch")

// Marker is what a table records of the projection set that built it.
type Marker struct {
	// Set is the IDs of the set's projections, sorted by name. A marker
	// written before fingerprints were recorded has names only (empty
	// fingerprints).
	Set []projections.ProjectionID
	// Since is when the marker was written.
	Since time.Time
}

// markerBody is the marker's stored form. Markers of the first form held
// only the names, under "projections".
type markerBody struct {
	Set   []projections.ProjectionID `json:"set,omitempty"`
	Names []string                   `json:"projections,omitempty"`
	Since time.Time                  `json:"since"`
}

// ReadMarker returns the table's projection-set marker, or nil when it has
// none.
func ReadMarker(ctx context.Context, st driver.Store) (*Marker, error) {
	got, err := st.ReadLedgers(ctx, []string{markerKey})
	if err != nil {
		return nil, fmt.Errorf("reading the projection-set marker: %w", err)
	}
	return decodeMarker(got[markerKey])
}

// decodeMarker decodes a marker's ledger entry; nil for no entry.
func decodeMarker(e driver.LedgerEntry) (*Marker, error) {
	if e.Rev == 0 {
		return nil, nil
	}
	var b markerBody
	if err := json.Unmarshal(e.Body, &b); err != nil {
		return nil, fmt.Errorf("the projection-set marker is corrupt: %w", err)
	}
	m := &Marker{Set: b.Set, Since: b.Since}
	if m.Set == nil {
		for _, n := range b.Names {
			m.Set = append(m.Set, projections.ProjectionID{Name: n})
		}
		slices.SortFunc(m.Set, func(a, b projections.ProjectionID) int { return strings.Compare(a.Name, b.Name) })
	}
	return m, nil
}

// SetMismatchError reports a table that another projection set built, or
// one that holds aggregates but records no set.
type SetMismatchError struct {
	// Table is the table's marker; nil when it has none.
	Table *Marker
	// Engine is the set of the engine about to write.
	Engine []projections.ProjectionID
}

// Is reports whether target is ErrProjectionSet.
func (e *SetMismatchError) Is(target error) bool { return target == ErrProjectionSet }

func (e *SetMismatchError) Error() string {
	const rebuild = "rebuild this set into a new table: from an export, then the stream from the export's time, for a table older than its stream (tributary backfill --export LOC --table NEW_TABLE, then a projector or shadow on it, or tributary replay --start EXPORT_TIME; docs/backfill.md), or from the stream alone if it holds the table's whole history (tributary replay --from STREAM --rebuild-into NEW_TABLE; docs/replay.md)"
	var b strings.Builder
	b.WriteString(ErrProjectionSet.Error())
	b.WriteString(": ")
	if e.Table == nil {
		fmt.Fprintf(&b, "the table holds aggregates but records no projection set (it was written by an older Tributary, or by an engine made without Open); this engine runs %s. If the table was built by exactly this set, record that with `tributary projections adopt`; otherwise %s", formatIDs(e.Engine), rebuild)
		return b.String()
	}
	fmt.Fprintf(&b, "the table was built by %s", formatIDs(e.Table.Set))
	if !e.Table.Since.IsZero() {
		fmt.Fprintf(&b, " (since %s)", e.Table.Since.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, ", and this engine runs %s", formatIDs(e.Engine))
	if d := describeDiff(e.Table.Set, e.Engine); d != "" {
		fmt.Fprintf(&b, " (%s)", d)
	}
	b.WriteString(". An engine writes only to a table its own set built, or it would retract or miss what the other definitions contributed: ")
	b.WriteString(rebuild)
	b.WriteString(", or run the table's own set")
	if sameNames(e.Table.Set, e.Engine) {
		b.WriteString("; if the changed definitions compute what the table's did for every item (a Go projection written as a spec, or the reverse; a reworded description), record this set with `tributary projections adopt` instead (docs/own-table.md, \"Changing a projection\")")
	}
	if legacy(e.Table.Set) {
		b.WriteString("; the table's marker predates fingerprints: if the table was built by exactly this set, record that with `tributary projections adopt`")
	}
	return b.String()
}

// sameNames reports whether two sets name the same projections.
func sameNames(a, b []projections.ProjectionID) bool {
	return slices.EqualFunc(a, b, func(x, y projections.ProjectionID) bool { return x.Name == y.Name })
}

func legacy(ids []projections.ProjectionID) bool {
	for _, id := range ids {
		if id.Fingerprint == "" {
			return true
		}
	}
	return false
}

// describeDiff names the projections that differ between a table's set and
// an engine's.
func describeDiff(table, engine []projections.ProjectionID) string {
	byName := map[string]string{}
	for _, id := range table {
		byName[id.Name] = id.Fingerprint
	}
	var changed, added, missing []string
	for _, id := range engine {
		fp, ok := byName[id.Name]
		switch {
		case !ok:
			added = append(added, id.Name)
		case fp != "" && fp != id.Fingerprint:
			changed = append(changed, id.Name)
		}
		delete(byName, id.Name)
	}
	for _, id := range table {
		if _, ok := byName[id.Name]; ok {
			missing = append(missing, id.Name)
		}
	}
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, "definition changed: "+strings.Join(changed, ", "))
	}
	if len(added) > 0 {
		parts = append(parts, "not in the table: "+strings.Join(added, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "not in this engine: "+strings.Join(missing, ", "))
	}
	return strings.Join(parts, "; ")
}

// checkSet makes sure that an engine of set may write to the table: the
// table's marker records exactly set's IDs, or the table is empty and
// unmarked, and checkSet marks it for set, with the time now gives.
// Anything else is a *SetMismatchError (matching ErrProjectionSet). Two
// engines of one set that start on an empty table at once both succeed; of
// two sets, one wins and the other is refused.
func checkSet(ctx context.Context, t driver.Table, set *projections.Set, now func() time.Time) error {
	for range 3 {
		m, err := ReadMarker(ctx, t)
		if err != nil {
			return err
		}
		if m != nil {
			if slices.Equal(m.Set, set.IDs()) {
				return nil
			}
			return &SetMismatchError{Table: m, Engine: set.IDs()}
		}
		empty, err := Empty(ctx, t)
		if err != nil {
			return err
		}
		if !empty {
			return &SetMismatchError{Engine: set.IDs()}
		}
		err = writeMarker(ctx, t, set, 0, now())
		var ce *driver.ConflictError
		if errors.As(err, &ce) || errors.Is(err, driver.ErrContention) {
			continue // another engine marked it meanwhile: check what it wrote
		}
		return err
	}
	return fmt.Errorf("%w: the table's marker kept changing", ErrProjectionSet)
}

// Adopt records set in the table's marker, replacing whatever marker it
// has, and returns the marker it replaced (nil: none, or a corrupt one). It is the operator's
// way to say that a table's aggregates are set's: a table built before
// markers existed, or one whose projection changed its Definition without
// changing what it contributes. Adopting a table another set built leaves
// its aggregates wrong; rebuild instead (docs/backfill.md).
func Adopt(ctx context.Context, st driver.Store, set *projections.Set) (*Marker, error) {
	got, err := st.ReadLedgers(ctx, []string{markerKey})
	if err != nil {
		return nil, fmt.Errorf("reading the projection-set marker: %w", err)
	}
	e := got[markerKey]
	old, err := decodeMarker(e)
	if err != nil {
		old = nil // a corrupt marker is replaced like any other
	}
	if err := writeMarker(ctx, st, set, e.Rev, time.Now()); err != nil {
		return nil, err
	}
	return old, nil
}

func writeMarker(ctx context.Context, st driver.Store, set *projections.Set, rev int64, since time.Time) error {
	body, err := json.Marshal(markerBody{Set: set.IDs(), Since: since.UTC()})
	if err != nil {
		return fmt.Errorf("encoding the projection-set marker: %w", err)
	}
	err = st.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: markerKey, ExpectRev: rev, Body: body}}})
	if err != nil {
		return fmt.Errorf("writing the projection-set marker: %w", err)
	}
	return nil
}

// Open is the one way Tributary's entry points make an engine: for set,
// writing to t, after checkSet made sure t is set's table (marking it when
// it is new). The entity types that only the projections set was selected
// from read are added to cfg.Ignore.
func Open(ctx context.Context, t driver.Table, set *projections.Set, cfg Config) (*Engine, error) {
	if set == nil {
		return nil, errors.New("projections: Open without a projection set")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if err := checkSet(ctx, t, set, now); err != nil {
		return nil, err
	}
	cfg.Ignore = append(slices.Clone(cfg.Ignore), set.Ignored()...)
	return newEngine(t, cfg, set.Projections()...), nil
}

var errFound = errors.New("found")

// Empty reports whether a table holds no aggregate and no row. It stops at
// the first it finds.
func Empty(ctx context.Context, rd driver.Reader) (bool, error) {
	err := rd.ScanAggregates(ctx, func(driver.AggregateRef, map[string]decimal.Decimal) error { return errFound })
	if err == nil {
		err = rd.ScanRows(ctx, func(driver.StoredRow) error { return errFound })
	}
	switch {
	case errors.Is(err, errFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("checking whether the table is empty: %w", err)
	}
	return true, nil
}

// formatIDs lists ids as projections.Set's String does.
func formatIDs(ids []projections.ProjectionID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	return strings.Join(parts, ", ")
}

package replay

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
)

// Why a store built for some projections cannot be shared.
//
// The engine keeps one ledger entry per source item for every projection of
// the item's types: what the item contributed to each, at the last change
// applied. An engine that runs only some projections computes an item's
// delta as contributions(new image, its projections) − ledger(all of them):
// it retracts what the item gave every other projection and records a
// ledger entry that lists only its own. In a store the full projector also
// writes, that takes the item out of the other projections' aggregates
// until a later change of the item happens to put it back, and a change the
// filtered engine applied first is then stale for the projector. A store
// written by an engine with a subset of the projections must be written by
// engines with that same subset only: its own store (a rebuild table).
//
// The store records its projection set in a marker (a ledger entry under a
// key no item can have), written by the first filtered engine on an empty
// store and checked by every filtered replay, and by the Kinesis projector
// when it is configured with a subset.

// MarkerKey is the ledger key of a store's projection-set marker. Item
// ledger keys are canonical key JSON ("{...}") or "sha256:...", never this.
const MarkerKey = "#tributary/projection-set"

// ErrProjectionSet is the error of CheckProjectionSet when the store's
// projection set does not allow the engine about to write to it.
var ErrProjectionSet = errors.New("projection set mismatch")

type marker struct {
	Projections []string  `json:"projections"`
	Since       time.Time `json:"since"`
}

// ProjectionSet returns the projections a store is restricted to, or nil
// when it has no marker (a store for every projection).
func ProjectionSet(ctx context.Context, st projections.Store) ([]string, error) {
	got, err := st.ReadLedgers(ctx, []string{MarkerKey})
	if err != nil {
		return nil, fmt.Errorf("reading the projection-set marker: %w", err)
	}
	e, ok := got[MarkerKey]
	if !ok || e.Rev == 0 {
		return nil, nil
	}
	var m marker
	if err := json.Unmarshal(e.Body, &m); err != nil {
		return nil, fmt.Errorf("the projection-set marker is corrupt: %w", err)
	}
	return m.Projections, nil
}

// CheckProjectionSet makes sure an engine running the projections names
// (nil: every projection) may write to the store:
//
//   - a subset may write to a store marked with exactly that subset, or to
//     an empty store, which it then marks;
//   - every projection may write to a store without a marker (the usual,
//     shared aggregate table), never to one marked for a subset.
//
// rd reads the store's aggregates and rows, to tell an empty store.
func CheckProjectionSet(ctx context.Context, st projections.Store, rd projections.Reader, names []string) error {
	names = slices.Clone(names)
	slices.Sort(names)
	for attempt := 0; attempt < 3; attempt++ {
		have, err := ProjectionSet(ctx, st)
		if err != nil {
			return err
		}
		switch {
		case have != nil && names == nil:
			return fmt.Errorf("%w: the store holds only %s (built by a filtered replay); an engine with every projection would add the others for the items it sees and not for the rest: build every projection into a new table instead", ErrProjectionSet, strings.Join(have, ", "))
		case have != nil && !slices.Equal(have, names):
			return fmt.Errorf("%w: the store holds %s, not %s: use a table of its own for each set of projections", ErrProjectionSet, strings.Join(have, ", "), strings.Join(names, ", "))
		case have != nil || names == nil:
			return nil
		}
		// A subset, and no marker: only an empty store may take one.
		empty, err := Empty(ctx, rd)
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: the store already holds aggregates for every projection; a replay of only %s into it would retract the other projections' contributions (docs/replay.md): replay them into a store of their own (--rebuild-into NEW_TABLE, or a new --store DIR)", ErrProjectionSet, strings.Join(names, ", "))
		}
		body, _ := json.Marshal(marker{Projections: names, Since: time.Now().UTC()})
		err = st.Commit(ctx, &projections.Tx{Ledgers: []projections.LedgerPut{{Key: MarkerKey, Body: body}}})
		var ce *projections.ConflictError
		if errors.As(err, &ce) || errors.Is(err, projections.ErrContention) {
			continue // someone marked it meanwhile: check what they wrote
		}
		if err != nil {
			return fmt.Errorf("writing the projection-set marker: %w", err)
		}
		return nil
	}
	return fmt.Errorf("%w: the marker kept changing", ErrProjectionSet)
}

var errFound = errors.New("found")

// Empty reports whether a store holds no aggregate and no row. It stops at
// the first it finds.
func Empty(ctx context.Context, rd projections.Reader) (bool, error) {
	err := rd.ScanAggregates(ctx, func(projections.AggregateRef, map[string]decimal.Decimal) error { return errFound })
	if err == nil {
		err = rd.ScanRows(ctx, func(projections.StoredRow) error { return errFound })
	}
	switch {
	case errors.Is(err, errFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("checking whether the store is empty: %w", err)
	}
	return true, nil
}

// Select returns the projections of all named in names, in all's order; nil
// names select them all. An unknown name is an error that lists the known
// ones.
func Select(all []projections.Projection, names []string) ([]projections.Projection, error) {
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []projections.Projection
	known := make([]string, 0, len(all))
	for _, p := range all {
		known = append(known, p.Name())
		if want[p.Name()] {
			out = append(out, p)
			delete(want, p.Name())
		}
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		slices.Sort(unknown)
		return nil, fmt.Errorf("unknown projection %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// Ignored returns the entity types that the projections of all read and
// those of selected do not, so that an engine of the selected ones skips
// them without a log line each.
func Ignored(all, selected []projections.Projection) []string {
	mine := map[string]bool{}
	for _, p := range selected {
		for _, t := range p.EntityTypes() {
			mine[t] = true
		}
	}
	var out []string
	for _, p := range all {
		for _, t := range p.EntityTypes() {
			if !mine[t] && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

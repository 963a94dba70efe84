package engine

import (
	"context"
	"time"

	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// New makes an engine over a bare store, without Open's check of the
// table's projection set: the engine's own tests drive stores that are not
// tables (fault injectors, stores that fail on purpose).
func New(store driver.Store, cfg Config, ps ...projections.Projection) *Engine {
	return newEngine(store, cfg, ps...)
}

// MarkerKey is the ledger key of a table's projection-set marker.
const MarkerKey = markerKey

// CheckSet is checkSet at the time now: the tests of the marker drive it
// on tables of their own.
func CheckSet(ctx context.Context, t driver.Table, set *projections.Set) error {
	return checkSet(ctx, t, set, time.Now)
}

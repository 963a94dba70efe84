package projections

import "github.com/tributary/tributary/projections/driver"

// New makes an engine over a bare store, without Open's check of the
// table's projection set: the engine's own tests drive stores that are not
// tables (fault injectors, stores that fail on purpose).
func New(store driver.Store, cfg Config, ps ...Projection) *Engine {
	return newEngine(store, cfg, ps...)
}

package dynamostore

import (
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
)

// WriteUnits implements driver.WriteUnitEstimator with the layout's
// model, layout.WriteUnits.
func (s *Store) WriteUnits(tx *driver.Tx) float64 { return layout.WriteUnits(tx) }

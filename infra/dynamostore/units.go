package dynamostore

import "github.com/tributary/tributary/projections/driver"

// WriteUnits implements driver.WriteUnitEstimator with the layout's
// model, driver.WriteUnits.
func (s *Store) WriteUnits(tx *driver.Tx) float64 { return driver.WriteUnits(tx) }

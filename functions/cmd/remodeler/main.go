// Command remodeler is the stock Lambda function that keeps a remodel's
// target table current from the Kinesis data stream fed by the table's
// streaming destination: every change through the transform TRANSFORM
// names (the seed environment's comments-table, or one the spec
// PROJECTIONS_FILE declares) into the target, exactly once
// (configuration: remodeler.Config; docs/remodel.md).
package main

import (
	"github.com/tributary/tributary/functions/remodeler"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections/spec"
)

func main() {
	env := seed.Environment()
	env.LoadSpec = spec.Load
	remodeler.Main(env)
}

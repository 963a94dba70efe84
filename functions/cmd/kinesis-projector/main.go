// Command kinesis-projector is the stock Lambda function that applies the
// Kinesis data stream fed by the table's Kinesis streaming destination to
// the seed projections (or the spec PROJECTIONS_FILE names), exactly once,
// in the aggregate table (configuration: projector.Config; PROJECTIONS runs
// a subset into a table of its own, see docs/replay.md).
package main

import (
	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections/spec"
)

func main() {
	env := seed.Environment()
	env.LoadSpec = spec.Load
	kinesisprojector.Main(env)
}

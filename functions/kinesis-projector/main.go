// Command kinesis-projector is the Lambda function that applies the Kinesis
// data stream fed by the table's Kinesis streaming destination to the seed
// projections (or the spec PROJECTIONS_FILE names), exactly once, in the
// aggregate table (configuration: function.ProjectorConfig; PROJECTIONS runs
// a subset into a table of its own, see docs/replay.md).
package main

import (
	"github.com/tributary/tributary/functions/function"
	"github.com/tributary/tributary/projections/seed"
	"github.com/tributary/tributary/projections/spec"
)

func main() { function.KinesisProjector(seed.Set(), function.WithSpecs(spec.LoadSet)) }

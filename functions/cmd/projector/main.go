// Command projector is the stock Lambda function that applies a table's
// DynamoDB Streams events to the seed projections, or to the spec
// PROJECTIONS_FILE names, exactly once, in the aggregate table
// (configuration: projector.Config). A team's own projector is the same
// main over its own environment.
package main

import (
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections/spec"
)

func main() {
	env := seed.Environment()
	env.LoadSpec = spec.Load
	projector.Main(env)
}

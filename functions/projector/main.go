// Command projector is the Lambda function that applies a table's DynamoDB
// Streams events to the seed projections, or to the spec PROJECTIONS_FILE
// names, exactly once, in the aggregate table (configuration:
// function.ProjectorConfig). A team's own projector is the same main over
// its own projection set.
package main

import (
	"github.com/tributary/tributary/functions/function"
	"github.com/tributary/tributary/projections/seed"
	"github.com/tributary/tributary/projections/spec"
)

func main() { function.Projector(seed.Set(), function.WithSpecs(spec.LoadSet)) }

// Command projector is the Lambda function that applies a table's DynamoDB
// Streams events to the seed projections, exactly once, in the aggregate
// table (configuration: function.ProjectorConfig). A team's own projector is the
// same main over its own projection set.
package main

import (
	"github.com/tributary/tributary/functions/function"
	"github.com/tributary/tributary/projections/seed"
)

func main() { function.Projector(seed.Set()) }

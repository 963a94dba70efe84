// Command repartitioner is the stock Lambda function that repartitions a
// DynamoDB export by entity type, one data file per invocation, for a Step
// Functions Distributed Map, with the seed transform, comments-table
// (configuration: repartitioner.Config; docs/exports.md). A team's own
// repartitioner passes its own environment and transforms.
package main

import (
	"github.com/tributary/tributary/functions/repartitioner"
	"github.com/tributary/tributary/internal/seed"
)

func main() { repartitioner.Main(seed.Environment()) }

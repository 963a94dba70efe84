// Command backfiller is the stock Lambda function that builds the seed
// projections' aggregates, or those of the spec PROJECTIONS_FILE names,
// from a DynamoDB export, one data file per invocation, for a Step
// Functions Distributed Map (configuration: backfiller.Config;
// docs/deploy.md). A team's own backfiller is the same main over its own
// environment.
package main

import (
	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections/spec"
)

func main() {
	env := seed.Environment()
	env.LoadSpec = spec.Load
	backfiller.Main(env)
}

// Command verifier is the stock Lambda function that checks an aggregate
// table of the seed projections, or of those of the spec PROJECTIONS_FILE
// names, against a DynamoDB export, a step of the Verify state machine per
// invocation (configuration: verifier.Config; docs/deploy.md). A team's
// own verifier is the same main over its own environment.
package main

import (
	"github.com/tributary/tributary/functions/verifier"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections/spec"
)

func main() {
	env := seed.Environment()
	env.LoadSpec = spec.Load
	verifier.Main(env)
}

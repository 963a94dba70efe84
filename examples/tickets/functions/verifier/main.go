// Command verifier checks the desk table's projections against a DynamoDB
// export, a step of the stack's Verify state machine per invocation
// (configuration: verifier.Config).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/verifier"
)

func main() { verifier.Main(tickets.Environment()) }

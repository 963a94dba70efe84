// Command backfiller builds the desk table's projections from a DynamoDB
// export, one data file per invocation, for the stack's Backfill state
// machine (configuration: backfiller.Config).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/backfiller"
)

func main() { backfiller.Main(tickets.Environment()) }

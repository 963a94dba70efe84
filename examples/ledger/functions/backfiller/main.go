// Command backfiller builds the ledger table's projections from a DynamoDB
// export, one data file per invocation, for the stack's Backfill state
// machine (configuration: backfiller.Config).
package main

import (
	"example.com/ledger"

	"github.com/tributary/tributary/functions/backfiller"
)

func main() { backfiller.Main(ledger.Environment()) }

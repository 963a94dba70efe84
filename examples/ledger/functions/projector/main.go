// Command projector applies the ledger table's DynamoDB stream to its
// projections (configuration: projector.Config).
package main

import (
	"example.com/ledger"

	"github.com/tributary/tributary/functions/projector"
)

func main() { projector.Main(ledger.Environment()) }

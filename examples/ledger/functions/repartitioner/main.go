// Command repartitioner repartitions the ledger table's exports by kind,
// with the ledger's transforms (configuration: repartitioner.Config).
package main

import (
	"example.com/ledger"

	"github.com/tributary/tributary/functions/repartitioner"
)

func main() { repartitioner.Main(ledger.Environment()) }

// Command kinesis-projector applies the ledger table's Kinesis data stream
// to its projections (configuration: projector.Config).
package main

import (
	"example.com/ledger"

	"github.com/tributary/tributary/functions/kinesisprojector"
)

func main() { kinesisprojector.Main(ledger.Environment()) }

// Command kinesis-projector applies the desk table's Kinesis data stream to
// its projections (configuration: projector.Config).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/kinesisprojector"
)

func main() { kinesisprojector.Main(tickets.Environment()) }

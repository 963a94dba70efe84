// Command kinesis-projector applies the desk table's Kinesis data stream to
// its projections (configuration: function.ProjectorConfig).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/function"
)

func main() { function.KinesisProjector(tickets.Set()) }

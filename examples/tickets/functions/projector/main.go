// Command projector applies the desk table's DynamoDB stream to its
// projections (configuration: projector.Config).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/projector"
)

func main() { projector.Main(tickets.Environment()) }

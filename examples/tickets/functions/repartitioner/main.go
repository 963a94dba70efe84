// Command repartitioner repartitions the desk table's exports by entity
// type, with the desk's transforms (configuration: repartitioner.Config).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/repartitioner"
)

func main() { repartitioner.Main(tickets.Environment()) }

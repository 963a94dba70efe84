// Command repartitioner repartitions the desk table's exports by entity
// type, with the desk's transforms (configuration:
// function.RepartitionerConfig).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/function"
)

func main() { function.Repartitioner(tickets.Transforms()...) }

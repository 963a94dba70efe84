// Command projector applies the desk table's DynamoDB stream to its
// projections (configuration: function.ProjectorConfig).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/function"
)

func main() { function.Projector(tickets.Set()) }

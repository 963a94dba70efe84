// Command tickets is the desk's own tributary: every command of the stock
// tool, over the desk's environment. Run `tickets help`.
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/scripts/cli"
)

func main() { cli.Main(cli.Options{Name: "tickets", Environment: tickets.Environment()}) }

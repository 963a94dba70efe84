// Command tributary is the operator's command-line tool: the stock build of
// package cli over the seed tables' environment (their projections and the
// comments-table transform), with the demo and the leaderboard. Run
// `tributary help`.
package main

import (
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/scripts/cli"
)

func main() { cli.Main(options()) }

// options are the stock binary's: the seed environment, and the demo and
// the leaderboard beside the standard commands.
func options() cli.Options {
	return cli.Options{
		Name:        "tributary",
		Environment: seed.Environment(),
		Commands:    []cli.Command{demo(), leaderboard()},
	}
}

// Command tributary is the operator's command-line tool: the stock build of
// package cli over the seed tables' environment (their projections and the
// comments-table transform), with the demo and the leaderboard. Run
// `tributary help`.
package main

import (
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/scripts/cli"
)

func main() {
	cli.Main(cli.Options{
		Name:        "tributary",
		Environment: seed.Environment(),
		Commands:    []cli.Command{demo(), leaderboard()},
	})
}

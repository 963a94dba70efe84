// Command tributary is the operator's command-line tool: the stock build of
// package cli over the seed projections, with the demo. Run `tributary help`.
package main

import (
	"github.com/tributary/tributary/pipeline/export/repartition"
	"github.com/tributary/tributary/projections/seed"
	"github.com/tributary/tributary/scripts/cli"
)

func main() {
	cli.Main(cli.Options{
		Projections: seed.Set(),
		Transforms:  []*repartition.Transform{repartition.CommentsTable()},
		Commands:    []cli.Command{cli.Demo(), cli.Leaderboard()},
	})
}

// Command tributary is the operator's command-line tool: the stock build of
// package cli over the seed projections. Run `tributary help`.
package main

import "github.com/tributary/tributary/scripts/cli"

func main() { cli.Main() }

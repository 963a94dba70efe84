// Command ledger is the ledger team's own tributary: every command of the
// stock tool, over the ledger table's environment (kind, rev, pk and sk,
// expiresAt), so that none needs an attribute flag. Run `ledger help`.
package main

import (
	"example.com/ledger"

	"github.com/tributary/tributary/scripts/cli"
)

func main() { cli.Main(cli.Options{Name: "ledger", Environment: ledger.Environment()}) }

// Command archiver archives the ledger table's TTL removals to S3, each
// dated by its expiresAt (configuration: archiver.Config).
package main

import (
	"example.com/ledger"

	"github.com/tributary/tributary/functions/archiver"
)

func main() { archiver.Main(ledger.Environment()) }

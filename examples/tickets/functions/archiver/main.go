// Command archiver archives the desk table's TTL removals to S3
// (configuration: archiver.Config).
package main

import (
	"example.com/tickets"

	"github.com/tributary/tributary/functions/archiver"
)

func main() { archiver.Main(tickets.Environment()) }

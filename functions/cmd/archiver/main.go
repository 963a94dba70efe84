// Command archiver is the stock Lambda function that archives the items
// DynamoDB's time to live deletes, from the table's stream (filtered to TTL
// removals), to S3 exactly once (configuration: archiver.Config;
// docs/archive.md), reading the seed tables' attributes or those
// TYPE_ATTRIBUTE and TTL_ATTRIBUTE name. It loads no spec, and so links no
// expression engine.
package main

import (
	"github.com/tributary/tributary/functions/archiver"
	"github.com/tributary/tributary/internal/seed"
)

func main() { archiver.Main(seed.Environment()) }

// Command compactor is the stock Lambda function that compacts the TTL
// archive into Parquet on a schedule, exactly once (configuration:
// compactor.Config; docs/archive.md), reading the seed tables' attributes
// or those TYPE_ATTRIBUTE, TTL_ATTRIBUTE and KEY_ATTRIBUTES name.
package main

import (
	"github.com/tributary/tributary/functions/compactor"
	"github.com/tributary/tributary/internal/seed"
)

func main() { compactor.Main(seed.Environment()) }

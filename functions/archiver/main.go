// Command archiver is the Lambda function that archives the items DynamoDB's
// time to live deletes, from the table's stream (filtered to TTL removals),
// to S3 exactly once (configuration: function.ArchiverConfig; docs/archive.md).
package main

import "github.com/tributary/tributary/functions/function"

func main() { function.Archiver() }

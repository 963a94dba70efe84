// Command repartitioner is the Lambda function that repartitions a DynamoDB
// export by entity type, one data file per invocation, for a Step Functions
// Distributed Map (plan, file, finish and release steps), with the stock
// transform, comments-table (configuration: function.RepartitionerConfig;
// docs/exports.md). A team's own repartitioner passes its own transforms.
package main

import (
	"github.com/tributary/tributary/functions/function"
	"github.com/tributary/tributary/pipeline/export/repartition"
)

func main() { function.Repartitioner(repartition.CommentsTable()) }

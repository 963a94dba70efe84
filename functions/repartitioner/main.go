// Command repartitioner is the Lambda function that repartitions a DynamoDB
// export by entity type, one data file per invocation, for a Step Functions
// Distributed Map: a "plan" step lists the data files still to do, the map
// runs a "file" step per data file in parallel, and a "finish" step writes
// the per-entity manifests and, last, the summary. It does exactly what
// `tributary repartition` does (pipeline/export), so either can resume the
// other's run. See docs/exports.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("loading AWS configuration", "error", err)
		os.Exit(1)
	}
	h := newHandler(cfg, s3.NewFromConfig(awsCfg), log)
	lambda.StartHandlerFunc(h.Handle)
}

// Command projector is the Lambda function that applies a table's DynamoDB
// Streams events to the registered projections, exactly once, in the
// aggregate table. See README.md and docs/engine.md.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/infra/dynamostore"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	ctx := context.Background()
	aws, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("loading AWS configuration", "error", err)
		os.Exit(1)
	}
	p, err := newProcessor(ctx, cfg, dynamostore.New(dynamodb.NewFromConfig(aws), cfg.Table), log, os.Stdout)
	if err != nil {
		log.Error("init", "error", err)
		os.Exit(1)
	}
	lambda.Start(p)
}

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
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	aws, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("loading AWS configuration", "error", err)
		os.Exit(1)
	}
	store := dynamostore.New(dynamodb.NewFromConfig(aws), cfg.Table)
	engine := projections.New(store, projections.Config{
		Policy: cfg.Unknown, Ignore: cfg.Ignore, TombstoneTTL: cfg.TombstoneTTL, Logger: log, Metrics: os.Stdout,
	}, seed.All()...)
	lambda.Start(pipeline.NewStreamsProcessor(engine, pipeline.Config{
		Options: cfg.Decode, Permanent: cfg.Permanent, Logger: log, Metrics: os.Stdout,
	}))
}

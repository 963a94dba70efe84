// Command kinesis-projector is the Lambda function that applies the Kinesis
// data stream fed by the table's Kinesis streaming destination to the
// projections, exactly once, in the aggregate table: the same engine as the
// Streams projector, behind the Kinesis processor (partial batch responses
// name Kinesis sequence numbers). Kinesis records come duplicated and out of
// order; the engine's ledger makes that harmless (docs/engine.md). See
// docs/replay.md for PROJECTIONS and rebuild tables.
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

// Command archiver is the Lambda function that archives the items DynamoDB's
// time to live deletes: it reads the table's stream (filtered to TTL
// removals) and writes them to S3, or a local directory, with
// pipeline/archive. Configuration is read from the environment (see
// archive.Config); a bad configuration stops the function at init.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/archive"
)

func main() {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	p, err := newProcessor(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		slog.Error("archiver: init", "error", err)
		os.Exit(1)
	}
	lambda.Start(p)
}

// newProcessor builds the function's handler from its environment.
func newProcessor(ctx context.Context, getenv func(string) string, metrics io.Writer) (*pipeline.Processor, error) {
	cfg, err := archive.ConfigFromEnv(getenv)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return nil, err
	}
	var store archive.Putter = objstore.NewDir(cfg.Dir)
	if cfg.Bucket != "" {
		awsCfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
		store = objstore.NewS3(s3.NewFromConfig(awsCfg), cfg.Bucket, "", cfg.S3Options())
	}
	h := archive.New(store, cfg.HandlerOptions(metrics))
	return pipeline.NewStreamsProcessor(h, cfg.PipelineConfig(metrics)), nil
}

package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/tributary/tributary/functions/internal/projenv"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// newProcessor builds the function's handler: the projection engine over
// st, behind the Kinesis processor. With a subset of the projections, it
// first makes sure the table is one for that subset (or empty, and then
// marks it); with all of them, that it is not a subset's.
func newProcessor(ctx context.Context, cfg Config, st projenv.Store, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error) {
	engine, err := projenv.Engine(ctx, st, cfg.Table, cfg.Projections, projections.Config{
		Policy: cfg.Unknown, Ignore: cfg.Ignore, TombstoneTTL: cfg.TombstoneTTL, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return nil, err
	}
	return pipeline.NewKinesisProcessor(engine, pipeline.Config{
		Options: cfg.Decode, Permanent: cfg.Permanent, Logger: log, Metrics: metrics,
	}), nil
}

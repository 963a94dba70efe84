package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/tributary/tributary/infra/replay"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

// store is the aggregate table as the function uses it.
type store interface {
	projections.Store
	projections.Reader
}

// newProcessor builds the function's handler: every projection, behind the
// Streams processor. It first makes sure the table is not one a filtered
// replay built for a subset of the projections (docs/replay.md): the full
// engine would add the other projections for the items it sees and not for
// the rest, so it refuses to start.
func newProcessor(ctx context.Context, cfg Config, st store, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error) {
	if err := replay.CheckProjectionSet(ctx, st, st, nil); err != nil {
		return nil, fmt.Errorf("table %s: %w", cfg.Table, err)
	}
	engine := projections.New(st, projections.Config{
		Policy: cfg.Unknown, Ignore: cfg.Ignore, TombstoneTTL: cfg.TombstoneTTL, Logger: log, Metrics: metrics,
	}, seed.All()...)
	return pipeline.NewStreamsProcessor(engine, pipeline.Config{
		Options: cfg.Decode, Permanent: cfg.Permanent, Logger: log, Metrics: metrics,
	}), nil
}

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

// newProcessor builds the function's handler: the projection engine over
// st, behind the Kinesis processor. With a subset of the projections, it
// first makes sure the table is one for that subset (or empty, and then
// marks it); with all of them, that it is not a subset's.
func newProcessor(ctx context.Context, cfg Config, st store, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error) {
	all := seed.All()
	ps, err := replay.Select(all, cfg.Projections)
	if err != nil {
		return nil, fmt.Errorf("PROJECTIONS: %w", err)
	}
	var names []string
	if len(cfg.Projections) > 0 {
		for _, p := range ps {
			names = append(names, p.Name())
		}
	}
	if err := replay.CheckProjectionSet(ctx, st, st, names); err != nil {
		return nil, fmt.Errorf("table %s: %w", cfg.Table, err)
	}
	engine := projections.New(st, projections.Config{
		Policy: cfg.Unknown, Ignore: append(cfg.Ignore, replay.Ignored(all, ps)...), TombstoneTTL: cfg.TombstoneTTL,
		Logger: log, Metrics: metrics,
	}, ps...)
	return pipeline.NewKinesisProcessor(engine, pipeline.Config{
		Options: cfg.Decode, Permanent: cfg.Permanent, Logger: log, Metrics: metrics,
	}), nil
}

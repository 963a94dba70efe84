package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/tributary/tributary/functions/internal/projenv"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// newProcessor builds the function's handler: every projection, behind the
// Streams processor. It refuses to start on a table a filtered replay built
// for a subset of the projections: the full engine would add the other
// projections for the items it sees and not for the rest (docs/replay.md).
func newProcessor(ctx context.Context, cfg Config, st projenv.Store, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error) {
	engine, err := projenv.Engine(ctx, st, cfg.Table, nil, projections.Config{
		Policy: cfg.Unknown, Ignore: cfg.Ignore, TombstoneTTL: cfg.TombstoneTTL, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return nil, err
	}
	return pipeline.NewStreamsProcessor(engine, pipeline.Config{
		Options: cfg.Decode, Permanent: cfg.Permanent, Logger: log, Metrics: metrics,
		Need: filterNeed,
	}), nil
}

// filterNeed is what the function's event source mapping filter asks of the
// stream: it matches records by the entity type of their new or old image,
// so a removal, or a change out of a projected type, reaches the function
// only with its old image.
var filterNeed = pipeline.ImageNeed{Images: pipeline.OldImages,
	Why: "the projector's filter criteria match removals and type changes by the item's old image: without it they never reach the function, and what the item contributed is never retracted"}

package main

import (
	"time"

	"github.com/tributary/tributary/functions/internal/projenv"
	"github.com/tributary/tributary/pipeline"
)

// Config is the Kinesis projector's configuration, read from the
// environment. It is the Streams projector's, plus PROJECTIONS.
type Config struct {
	Table        string                   // AGGREGATE_TABLE (required)
	Decode       pipeline.Options         // TYPE_ATTRIBUTE, VERSION_ATTRIBUTE
	Unknown      pipeline.UnknownPolicy   // UNKNOWN_TYPE_POLICY: skip (default) or fail
	Permanent    pipeline.PermanentPolicy // PERMANENT_FAILURES: report (default) or skip
	Ignore       []string                 // IGNORE_TYPES: comma-separated entity types skipped silently
	TombstoneTTL time.Duration            // TOMBSTONE_TTL_DAYS (default 400)
	// Projections are the projections to run (PROJECTIONS, comma-separated
	// names; default every one). A table for a subset is its own: the
	// function refuses to start on a table built for another set
	// (docs/replay.md).
	Projections []string
}

// loadConfig reads the configuration and reports every problem at once.
func loadConfig(getenv func(string) string) (Config, error) {
	p, err := projenv.Load(getenv)
	return Config{
		Table: p.Table, Decode: p.Decode, Unknown: p.Unknown, Permanent: p.Permanent,
		Ignore: p.Ignore, TombstoneTTL: p.TombstoneTTL,
		Projections: projenv.List(getenv("PROJECTIONS")),
	}, err
}

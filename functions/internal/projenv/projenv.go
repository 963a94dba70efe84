// Package projenv holds what the projector functions (functions/projector,
// functions/kinesis-projector) share: their configuration, read from the
// environment, and the building of their engine.
package projenv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/replay"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

// Config is a projector function's configuration.
type Config struct {
	Table        string                   // AGGREGATE_TABLE (required)
	Decode       pipeline.Options         // TYPE_ATTRIBUTE, VERSION_ATTRIBUTE
	Unknown      pipeline.UnknownPolicy   // UNKNOWN_TYPE_POLICY: skip (default) or fail
	Permanent    pipeline.PermanentPolicy // PERMANENT_FAILURES: report (default) or skip
	Ignore       []string                 // IGNORE_TYPES: comma-separated entity types skipped silently
	TombstoneTTL time.Duration            // TOMBSTONE_TTL_DAYS (default 400)
}

// Load reads the configuration and reports every problem at once.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		Table:  getenv("AGGREGATE_TABLE"),
		Decode: pipeline.Options{TypeAttribute: getenv("TYPE_ATTRIBUTE"), VersionAttribute: getenv("VERSION_ATTRIBUTE")},
		Ignore: List(getenv("IGNORE_TYPES")),
	}
	var errs []error
	if c.Table == "" {
		errs = append(errs, errors.New("AGGREGATE_TABLE is required"))
	}
	switch v := getenv("UNKNOWN_TYPE_POLICY"); v {
	case "", "skip":
	case "fail":
		c.Unknown = pipeline.FailUnknown
	default:
		errs = append(errs, fmt.Errorf("UNKNOWN_TYPE_POLICY %q: want skip or fail", v))
	}
	switch v := getenv("PERMANENT_FAILURES"); v {
	case "", "report":
	case "skip":
		c.Permanent = pipeline.SkipPermanent
	default:
		errs = append(errs, fmt.Errorf("PERMANENT_FAILURES %q: want report or skip", v))
	}
	if v := getenv("TOMBSTONE_TTL_DAYS"); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 {
			errs = append(errs, fmt.Errorf("TOMBSTONE_TTL_DAYS %q: want a whole number of days, at least 1", v))
		}
		c.TombstoneTTL = time.Duration(days) * 24 * time.Hour
	}
	return c, errors.Join(errs...)
}

// List splits a comma-separated list, dropping blanks.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Store is the aggregate table as the projector functions use it.
type Store interface {
	projections.Store
	projections.Reader
}

// Engine builds a projector function's engine over st, the aggregate table
// named table: the registered projections named (nil: every one), after
// making sure the table is one for that set (replay.CheckProjectionSet): a
// subset takes an empty table and marks it, or one marked for the same
// subset; every projection refuses a table a filtered replay built for a
// subset (docs/replay.md). Types only the other projections read are
// ignored.
func Engine(ctx context.Context, st Store, table string, names []string, cfg projections.Config) (*projections.Engine, error) {
	all := seed.All()
	ps, err := replay.Select(all, names)
	if err != nil {
		return nil, fmt.Errorf("PROJECTIONS: %w", err)
	}
	var set []string // nil: every projection
	if len(names) > 0 {
		for _, p := range ps {
			set = append(set, p.Name())
		}
	}
	if err := replay.CheckProjectionSet(ctx, st, st, set); err != nil {
		return nil, fmt.Errorf("table %s: %w", table, err)
	}
	cfg.Ignore = append(cfg.Ignore, replay.Ignored(all, ps)...)
	return projections.New(st, cfg, ps...), nil
}

// Package projenv reads the configuration the projector functions share
// (functions/projector, functions/kinesis-projector) from the environment.
package projenv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline"
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

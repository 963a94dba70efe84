// Package compactor is the Lambda function that compacts the TTL archive:
// on a schedule, it turns each partition's settled JSON-lines objects into
// Parquet under <prefix>/compacted/, exactly once (docs/archive.md). A main
// is one call over the table's environment, whose attributes (the keys,
// the entity type's, the TTL's) the rows are built from:
//
//	func main() { compactor.Main(tickets.Environment()) }
package compactor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/tributary/tributary/functions/internal/archiveenv"
	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive/lake"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// Config is the compactor's configuration, read from the environment by
// LoadConfig:
//
//	ARCHIVE_BUCKET      S3 bucket of the archive (or ARCHIVE_DIR)
//	ARCHIVE_DIR         local directory of the archive (or ARCHIVE_BUCKET)
//	ARCHIVE_PREFIX      the archive's key prefix, as the archiver's (default none)
//	ARCHIVE_KMS_KEY_ID  SSE-KMS key for the Parquet objects; unset means SSE-S3
//	OLDER_THAN          age from which an object is compacted, a Go duration (default 48h; 0s takes all)
//	KEEP_OBJECTS        "true" keeps the JSON-lines objects once compacted (default false)
//	COLUMNS             typed columns, attribute:type,… (string, double, boolean)
//	TYPE_ATTRIBUTE, TTL_ATTRIBUTE, KEY_ATTRIBUTES
//	                    the table's attributes, where the environment declares none
type Config struct {
	Bucket, Dir, Prefix, KMSKeyID string
	OlderThan                     time.Duration
	Keep                          bool
	Typed                         []Column
	// Schema holds the attributes the variables give; empty ones are the
	// environment's.
	Schema pipeline.Schema
}

// LoadConfig reads the compactor's configuration with lookup (os.LookupEnv
// in a main) and reports every problem at once.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	getenv := entry.Getenv(lookup)
	loc, locErrs := archiveenv.Read(getenv)
	c := Config{
		Bucket: loc.Bucket, Dir: loc.Dir, Prefix: loc.Prefix, KMSKeyID: loc.KMSKeyID,
		Schema:    entry.GivenSchema(getenv),
		OlderThan: lake.DefaultOlderThan,
	}
	var errs []error
	if v := getenv("OLDER_THAN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("OLDER_THAN: %q is not a duration of 0s or more, e.g. 48h", v))
		}
		c.OlderThan = d
	}
	switch v := getenv("KEEP_OBJECTS"); v {
	case "", "false":
	case "true":
		c.Keep = true
	default:
		errs = append(errs, fmt.Errorf("KEEP_OBJECTS: %q is not true or false", v))
	}
	typed, err := parseColumns(getenv("COLUMNS"))
	if err != nil {
		errs = append(errs, fmt.Errorf("COLUMNS: %w", err))
	}
	c.Typed = typed
	errs = append(errs, locErrs...)
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// Main runs the archive compactor of env's table. It does not return.
func Main(env *projections.Environment) {
	entry.Main("compactor", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		store, err := entry.Store(in, objstore.Location{Bucket: cfg.Bucket, Dir: cfg.Dir}, objstore.S3Options{KMSKeyID: cfg.KMSKeyID})
		if err != nil {
			return nil, err
		}
		return New(cfg, env, store, in.Log)
	})
}

// Handler is the compactor's Lambda handler: any event (the schedule's)
// runs one compaction; the response is its lake.Result.
type Handler struct {
	store lake.Store
	opts  lake.Options
	log   *slog.Logger
}

// New returns the compactor's handler over store, building rows by env's
// schema, or the attributes cfg gives where env declares none.
func New(cfg Config, env *projections.Environment, store objstore.Store, log *slog.Logger) (*Handler, error) {
	schema, err := entry.Schema(env, cfg.Schema)
	if err != nil {
		return nil, err
	}
	typed := make([]lake.TypedColumn, len(cfg.Typed))
	for i, c := range cfg.Typed {
		typed[i] = lake.TypedColumn(c)
	}
	return &Handler{store: store, log: log, opts: lake.Options{
		Prefix: cfg.Prefix, OlderThan: cfg.OlderThan, Keep: cfg.Keep, Schema: schema, Typed: typed, Logger: log,
	}}, nil
}

// Column is a typed column of the compacted rows (COLUMNS): an item's
// attribute, in a column named after it, lower-cased, of Type "string"
// (S), "double" (N) or "boolean" (BOOL).
type Column struct {
	Attribute string
	Type      string
}

// parseColumns reads COLUMNS, attribute:type,… (lake's own reading).
func parseColumns(s string) ([]Column, error) {
	typed, err := lake.ParseTypedColumns(s)
	if err != nil {
		return nil, err
	}
	out := make([]Column, len(typed))
	for i, c := range typed {
		out[i] = Column(c)
	}
	return out, nil
}

// Invoke implements lambda.Handler.
func (h *Handler) Invoke(ctx context.Context, _ []byte) ([]byte, error) {
	res, err := lake.Compact(ctx, h.store, h.opts)
	h.log.Info("compaction", "partitions", res.Partitions, "inputs", res.Inputs, "written", len(res.Written), "rows", res.Rows,
		"removed", res.Removed, "kept", res.Kept, "busy", len(res.Busy), "unfinished", res.Unfinished)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

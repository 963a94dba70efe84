// Package projector is the Lambda function that applies a table's DynamoDB
// Streams changes to its projections, exactly once, in the aggregate table.
// A main is one call over the table's environment:
//
//	func main() { projector.Main(tickets.Environment()) }
//
// Its configuration comes from the environment variables (Config,
// LoadConfig); the table's attributes and projections from the main's
// projections.Environment, or a spec file's (PROJECTIONS_FILE). A bad
// configuration, or an aggregate table that another projection set built
// (engine.Open), stops the function at init, before it takes a
// record. The function logs JSON to standard output, beside its
// embedded-metric lines. New builds the same handler over any store, for
// tests and for mains that add to it; functions/kinesisprojector is the
// same for the table's Kinesis data stream.
package projector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// Config is a projector's configuration, read from the environment by
// LoadConfig:
//
//	AGGREGATE_TABLE      the aggregate table (required)
//	PROJECTIONS_FILE     a projection spec (docs/projections-spec.md) whose
//	                     projections, and the attributes it declares, replace
//	                     the main's (for a main whose environment loads specs:
//	                     the stock mains'); in the SAM template, a file of the
//	                     projections layer (/opt/...)
//	PROJECTIONS          comma-separated projection names: run only these
//	                     (default every one); a table for a subset is its own
//	TYPE_ATTRIBUTE       the item attributes holding the entity type and the
//	VERSION_ATTRIBUTE    version (the decoders read them), and the table's keys
//	KEY_ATTRIBUTES       and TTL attribute (read by no projector, but given by
//	TTL_ATTRIBUTE        the template to every function): by default the
//	                     environment's; one that differs from what the
//	                     environment declares (a spec's attributes) stops the
//	                     function at init
//	UNKNOWN_TYPE_POLICY  skip (default) or fail: images of types no projection reads
//	PERMANENT_FAILURES   report (default; bisect, retry, on-failure destination) or skip
//	IGNORE_TYPES         comma-separated entity types skipped without a log line
//	TOMBSTONE_TTL_DAYS   how long a removed item's tombstone is kept (default 400)
//	FILTER_ENTITY_TYPES  comma-separated entity types the event source mapping's
//	                     filter passes (the template sets it from the same
//	                     parameter as the filter): the function refuses to start
//	                     when it is set but names none, or when a type its
//	                     projections or its shadow's read is missing, whose
//	                     records the filter would drop unseen
//	SHADOW_TABLE         a second aggregate table the function keeps current from
//	                     the same batches, after the live set (docs/backfill.md)
//	SHADOW_PROJECTIONS   comma-separated names of the projections of the shadow's
//	                     set (default every one)
//	SHADOW_FAILURES      where the batches the shadow could not apply are kept,
//	                     for redrive: s3://bucket/prefix or a directory (required
//	                     with SHADOW_TABLE)
type Config struct {
	// Source is the events' source: DynamoDB Streams (the zero value) or
	// Kinesis (the kinesis-projector's).
	Source pipeline.Source
	Table  string
	// Projections names the subset of the environment's projections to run.
	Projections []string
	// Schema holds the attributes the variables give; empty ones are the
	// environment's.
	Schema       pipeline.Schema
	Unknown      pipeline.UnknownPolicy
	Permanent    pipeline.PermanentPolicy
	Ignore       []string
	TombstoneTTL time.Duration
	// FilterTypes are the types the mapping's filter passes; nil when the
	// function is not told (FILTER_ENTITY_TYPES unset).
	FilterTypes []string
	// ShadowTable, ShadowProjections and ShadowFailures configure a shadow
	// set (WithShadow): its table, its projections (nil: every one) and
	// where its failed batches are kept.
	ShadowTable       string
	ShadowProjections []string
	ShadowFailures    string
}

// LoadConfig reads a projector's configuration with lookup (os.LookupEnv in
// a main) and reports every problem at once.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	getenv := entry.Getenv(lookup)
	given := entry.GivenSchema(getenv)
	c := Config{
		Table:       strings.TrimSpace(getenv("AGGREGATE_TABLE")),
		Projections: entry.List(getenv("PROJECTIONS")),
		Schema:      given,
		Ignore:      entry.List(getenv("IGNORE_TYPES")),

		ShadowTable:       strings.TrimSpace(getenv("SHADOW_TABLE")),
		ShadowProjections: entry.List(getenv("SHADOW_PROJECTIONS")),
		ShadowFailures:    strings.TrimSpace(getenv("SHADOW_FAILURES")),
	}
	var errs []error
	if c.Table == "" {
		errs = append(errs, errors.New("AGGREGATE_TABLE is required"))
	}
	switch {
	case c.ShadowTable != "" && c.ShadowTable == c.Table:
		errs = append(errs, fmt.Errorf("SHADOW_TABLE %s is AGGREGATE_TABLE: a shadow set needs a table of its own", c.ShadowTable))
	case c.ShadowTable != "" && c.ShadowFailures == "":
		errs = append(errs, errors.New("SHADOW_FAILURES is required with SHADOW_TABLE: where the batches the shadow cannot apply are kept for redrive"))
	case c.ShadowTable == "" && (len(c.ShadowProjections) > 0 || c.ShadowFailures != ""):
		errs = append(errs, errors.New("SHADOW_PROJECTIONS and SHADOW_FAILURES need SHADOW_TABLE"))
	}
	if c.ShadowFailures != "" {
		if _, err := objstore.Parse(c.ShadowFailures); err != nil {
			errs = append(errs, fmt.Errorf("SHADOW_FAILURES: %w", err))
		}
	}
	var err error
	if c.FilterTypes, err = entry.FilterTypes(lookup, " (the template's ProjectedEntityTypes is empty; `tributary projections check` prints what it must be)"); err != nil {
		errs = append(errs, err)
	}
	switch v := getenv("UNKNOWN_TYPE_POLICY"); v {
	case "", "skip":
	case "fail":
		c.Unknown = pipeline.FailUnknown
	default:
		errs = append(errs, fmt.Errorf("UNKNOWN_TYPE_POLICY %q: want skip or fail", v))
	}
	if c.Permanent, err = entry.Permanent(getenv); err != nil {
		errs = append(errs, err)
	}
	if c.TombstoneTTL, err = entry.Count(getenv, "TOMBSTONE_TTL_DAYS", 24*time.Hour); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// Main runs the DynamoDB Streams projector of env: it applies the table's
// stream to env's projections, exactly once, in the aggregate table (and
// to a shadow set, with SHADOW_TABLE). It does not return.
func Main(env *projections.Environment) {
	entry.Main("projector", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		conf, err := in.AWS()
		if err != nil {
			return nil, err
		}
		t, opts, err := Open(conf, cfg)
		if err != nil {
			return nil, err
		}
		return New(in.Ctx, cfg, env, t, in.Log, os.Stdout, opts...)
	})
}

// Open opens what cfg names for a projector at init: its aggregate table
// in DynamoDB, and its shadow's table and failure location when it keeps
// one (WithShadow), with the function's AWS configuration. Main and the
// Kinesis projector's Main call it.
func Open(conf aws.Config, cfg Config) (driver.Table, []Option, error) {
	client := dynamodb.NewFromConfig(conf)
	var opts []Option
	if cfg.ShadowTable != "" {
		loc, err := objstore.Parse(cfg.ShadowFailures)
		if err != nil {
			return nil, nil, fmt.Errorf("SHADOW_FAILURES: %w", err)
		}
		opts = append(opts, WithShadow(dynamostore.New(client, cfg.ShadowTable), loc.Open(s3.NewFromConfig(conf), objstore.S3Options{})))
	}
	return dynamostore.New(client, cfg.Table), opts, nil
}

// streamsFilterNeed is what the Streams projector's event source mapping
// filter asks of the stream: it matches records by the entity type of their
// new or old image, so a removal, or a change out of a projected type,
// reaches the function only with its old image.
var streamsFilterNeed = pipeline.ImageNeed{Images: pipeline.OldImages,
	Why: "the projector's filter criteria match removals and type changes by the item's old image: without it they never reach the function, and what the item contributed is never retracted"}

// New returns a projector's handler for events of cfg.Source (DynamoDB
// Streams unless it says Kinesis): the engine of env's projections (or the
// subset cfg.Projections names) over the aggregate table t, checked
// against the mapping's filter and opened with engine.Open, behind
// the source's processor (the decoders read the attributes env and cfg
// name; partial batch responses name the source's sequence numbers); with
// WithShadow, the shadow set's engine over its table behind a processor
// of its own. A shadow that cannot start (its table another set's, say)
// does not stop the function: it keeps every batch for redrive, says why,
// and tries again each minute.
func New(ctx context.Context, cfg Config, env *projections.Environment, t driver.Table, log *slog.Logger, metrics io.Writer, opts ...Option) (*Handler, error) {
	source := cfg.Source
	if source != pipeline.SourceKinesis {
		source = pipeline.SourceStreams
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	schema, sub, err := entry.Projections(env, cfg.Schema, cfg.Projections)
	if err != nil {
		return nil, err
	}
	var shadowSet *projections.Set
	if o.shadow != nil {
		if shadowSet, err = env.Projections.Select(cfg.ShadowProjections...); err != nil {
			return nil, fmt.Errorf("SHADOW_PROJECTIONS: %w", err)
		}
	}
	if cfg.FilterTypes != nil {
		var missing []string
		for _, set := range []*projections.Set{sub, shadowSet} {
			if set == nil {
				continue
			}
			for _, t := range set.EntityTypes() {
				if !slices.Contains(cfg.FilterTypes, t) && !slices.Contains(missing, t) {
					missing = append(missing, t)
				}
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("FILTER_ENTITY_TYPES: the event source mapping's filter passes %s, but the projections also read %s, whose records it would drop before they reach the function: add them to the filter (the SAM template's ProjectedEntityTypes parameter; `tributary projections check` or `tributary filters` prints what it must be)",
				strings.Join(cfg.FilterTypes, ", "), strings.Join(missing, ", "))
		}
	}
	ecfg := engine.Config{Policy: cfg.Unknown, Ignore: cfg.Ignore, TombstoneTTL: cfg.TombstoneTTL, Logger: log, Metrics: metrics}
	e, err := engine.Open(ctx, t, sub, ecfg)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", cfg.Table, err)
	}
	pc := pipeline.Config{Options: pipeline.Options{Schema: schema}, Permanent: cfg.Permanent, Logger: log, Metrics: metrics}
	h := &Handler{live: newProcessor(source, e, pc)}
	if o.shadow != nil {
		s := &shadow{source: source, keep: o.keep, table: cfg.ShadowTable, log: log.With("shadowTable", cfg.ShadowTable), metrics: metrics}
		slog := log.With("shadowTable", cfg.ShadowTable)
		scfg := ecfg
		scfg.Logger = slog
		scfg.Component = "shadow"
		s.start = func(ctx context.Context) (*pipeline.Processor, error) {
			se, err := engine.Open(ctx, o.shadow, shadowSet, scfg)
			if err != nil {
				return nil, fmt.Errorf("the shadow cannot start: table %s: %w", cfg.ShadowTable, err)
			}
			spc := pc
			spc.Logger = slog
			// The shadow's records are not counted again under the
			// function's per-type metrics; its engine's are Component
			// shadow, its failures and lag the shadow family's.
			spc.Metrics = nil
			return newProcessor(source, se, spc), nil
		}
		s.lastTry = time.Now()
		if s.proc, s.initErr = s.start(ctx); s.initErr != nil {
			slog.Error("shadow disabled: every batch is kept for redrive until it can start (tried again each minute)", "error", quote.Short(s.initErr.Error()))
		}
		h.shadow = s
	}
	return h, nil
}

func newProcessor(source pipeline.Source, e *engine.Engine, pc pipeline.Config) *pipeline.Processor {
	if source == pipeline.SourceKinesis {
		return pipeline.NewKinesisProcessor(e, pc)
	}
	pc.Need = streamsFilterNeed
	return pipeline.NewStreamsProcessor(e, pc)
}

// Package function holds Tributary's Lambda functions as library entry
// points, so that a function's main is a single call that hands it a team's
// own projections (or transforms):
//
//	func main() { function.Projector(tickets.Set()) }
//
// Projector (DynamoDB Streams → aggregates), KinesisProjector (the table's
// Kinesis data stream → aggregates), Archiver (TTL removals → the S3
// archive) and Repartitioner (an export's data files, for a Step Functions
// Distributed Map) each read their configuration from the environment in
// one way (a Load function: defaults, then every problem at once); a bad
// configuration, or an aggregate table that another projection set built
// (projections.Open), stops the function at init, before it takes a record.
// Every function logs JSON to standard output, beside its embedded-metric
// lines, and hands over to another main at init when TRIBUTARY_MAIN names
// one (MainEnv).
//
// The New functions build the same handlers over any store, for tests and
// for mains that want to add to them.
package function

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// ProjectorConfig is a projector function's configuration, read from the
// environment by LoadProjectorConfig:
//
//	AGGREGATE_TABLE      the aggregate table (required)
//	PROJECTIONS_FILE     a projection spec (docs/projections-spec.md) whose
//	                     projections replace the main's, for a main that loads
//	                     specs (WithSpecs; the stock mains do); in the SAM
//	                     template, a file of the projections layer (/opt/...)
//	PROJECTIONS          comma-separated projection names: run only these
//	                     (default every one); a table for a subset is its own
//	TYPE_ATTRIBUTE       the item attribute holding the entity type (default EntityType)
//	VERSION_ATTRIBUTE    the item's version attribute (default version)
//	UNKNOWN_TYPE_POLICY  skip (default) or fail: images of types no projection reads
//	PERMANENT_FAILURES   report (default; bisect, retry, on-failure destination) or skip
//	IGNORE_TYPES         comma-separated entity types skipped without a log line
//	TOMBSTONE_TTL_DAYS   how long a removed item's tombstone is kept (default 400)
//	FILTER_ENTITY_TYPES  comma-separated entity types the event source mapping's
//	                     filter passes (the template sets it from the same
//	                     parameter as the filter): the function refuses to start
//	                     when a type its projections read is missing, whose
//	                     records the filter would drop unseen
type ProjectorConfig struct {
	Table    string
	SpecFile string
	// LoadSpec loads SpecFile. It is not read from the environment: a main
	// that runs specs sets it (WithSpecs); without it a SpecFile is
	// refused.
	LoadSpec     SpecLoader
	Projections  []string
	Decode       pipeline.Options
	Unknown      pipeline.UnknownPolicy
	Permanent    pipeline.PermanentPolicy
	Ignore       []string
	TombstoneTTL time.Duration
	FilterTypes  []string
}

// LoadProjectorConfig reads a projector's configuration with getenv
// (os.Getenv in a main) and reports every problem at once.
func LoadProjectorConfig(getenv func(string) string) (ProjectorConfig, error) {
	c := ProjectorConfig{
		Table:       strings.TrimSpace(getenv("AGGREGATE_TABLE")),
		SpecFile:    strings.TrimSpace(getenv("PROJECTIONS_FILE")),
		Projections: List(getenv("PROJECTIONS")),
		Decode:      pipeline.Options{TypeAttribute: getenv("TYPE_ATTRIBUTE"), VersionAttribute: getenv("VERSION_ATTRIBUTE")},
		Ignore:      List(getenv("IGNORE_TYPES")),
		FilterTypes: List(getenv("FILTER_ENTITY_TYPES")),
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
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// List splits a comma-separated environment value, dropping blanks.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Projector runs the DynamoDB Streams projector of set: it applies the
// table's stream to set's projections, exactly once, in the aggregate
// table. It does not return.
func Projector(set *projections.Set, opts ...Option) {
	startProjector("projector", NewStreamsProjector, set, opts)
}

// KinesisProjector runs the Kinesis projector of set: it applies the
// Kinesis data stream fed by the table's Kinesis streaming destination to
// set's projections, exactly once: Kinesis duplicates and reordering are
// harmless to the engine's ledger. It does not return.
func KinesisProjector(set *projections.Set, opts ...Option) {
	startProjector("kinesis-projector", NewKinesisProjector, set, opts)
}

// SpecLoader loads a projection spec file into a set, with the attribute
// that holds the entity type in the spec's items: spec.LoadSet.
type SpecLoader func(path string) (set *projections.Set, typeAttribute string, err error)

// An Option adds to what a function's main can do.
type Option func(*ProjectorConfig)

// WithSpecs lets the function run the spec PROJECTIONS_FILE names in place
// of its main's projections, loading it with load (spec.LoadSet). The stock
// mains pass it; a main that does not links no spec loader.
func WithSpecs(load SpecLoader) Option {
	return func(c *ProjectorConfig) { c.LoadSpec = load }
}

// newProjector is NewStreamsProjector or NewKinesisProjector.
type newProjector func(ctx context.Context, cfg ProjectorConfig, t projections.Table, set *projections.Set, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error)

func startProjector(name string, build newProjector, set *projections.Set, opts []Option) {
	start(name, func(ctx context.Context, log *slog.Logger) (lambda.Handler, error) {
		cfg, t, err := projectorEnv(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			o(&cfg)
		}
		return build(ctx, cfg, t, set, log, os.Stdout)
	})
}

// NewStreamsProjector returns the Streams projector's handler: an engine
// for set (or the spec of cfg.SpecFile; or the subset cfg.Projections names)
// over the aggregate table t, made by projections.Open, behind the DynamoDB
// Streams processor (partial batch responses name stream sequence numbers).
func NewStreamsProjector(ctx context.Context, cfg ProjectorConfig, t projections.Table, set *projections.Set, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error) {
	e, cfg, err := projectorEngine(ctx, cfg, t, set, log, metrics)
	if err != nil {
		return nil, err
	}
	pc := processorConfig(cfg, log, metrics)
	pc.Need = streamsFilterNeed
	return pipeline.NewStreamsProcessor(e, pc), nil
}

// streamsFilterNeed is what the Streams projector's event source mapping
// filter asks of the stream: it matches records by the entity type of their
// new or old image, so a removal, or a change out of a projected type,
// reaches the function only with its old image.
var streamsFilterNeed = pipeline.ImageNeed{Images: pipeline.OldImages,
	Why: "the projector's filter criteria match removals and type changes by the item's old image: without it they never reach the function, and what the item contributed is never retracted"}

// NewKinesisProjector is NewStreamsProjector for the Kinesis data stream
// (partial batch responses name Kinesis sequence numbers).
func NewKinesisProjector(ctx context.Context, cfg ProjectorConfig, t projections.Table, set *projections.Set, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error) {
	e, cfg, err := projectorEngine(ctx, cfg, t, set, log, metrics)
	if err != nil {
		return nil, err
	}
	return pipeline.NewKinesisProcessor(e, processorConfig(cfg, log, metrics)), nil
}

// projectorEngine resolves the projections (the spec file, when given,
// replaces set; its type attribute becomes the decoders' unless
// TYPE_ATTRIBUTE names another, which is an error), checks them against the
// mapping's filter, and opens the engine. It returns cfg as resolved.
func projectorEngine(ctx context.Context, cfg ProjectorConfig, t projections.Table, set *projections.Set, log *slog.Logger, metrics io.Writer) (*projections.Engine, ProjectorConfig, error) {
	if cfg.SpecFile != "" {
		if cfg.LoadSpec == nil {
			return nil, cfg, fmt.Errorf("PROJECTIONS_FILE %s: this function's main runs its own projections and loads no spec (a main that does passes function.WithSpecs(spec.LoadSet))", cfg.SpecFile)
		}
		specSet, typeAttr, err := cfg.LoadSpec(cfg.SpecFile)
		if err != nil {
			return nil, cfg, fmt.Errorf("PROJECTIONS_FILE: %w", err)
		}
		set = specSet
		switch ta := cfg.Decode.TypeAttribute; {
		case ta == "":
			cfg.Decode.TypeAttribute = typeAttr
		case ta != typeAttr:
			return nil, cfg, fmt.Errorf("TYPE_ATTRIBUTE %q, but the projection spec %s reads the entity type from %q", ta, cfg.SpecFile, typeAttr)
		}
	}
	if set == nil {
		return nil, cfg, errors.New("no projection set (and no PROJECTIONS_FILE)")
	}
	sub, err := set.Select(cfg.Projections...)
	if err != nil {
		return nil, cfg, fmt.Errorf("PROJECTIONS: %w", err)
	}
	if len(cfg.FilterTypes) > 0 {
		var missing []string
		for _, t := range sub.EntityTypes() {
			if !slices.Contains(cfg.FilterTypes, t) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			return nil, cfg, fmt.Errorf("FILTER_ENTITY_TYPES: the event source mapping's filter passes %s, but the projections also read %s, whose records it would drop before they reach the function: add them to the filter (the SAM template's ProjectedEntityTypes parameter; `tributary projections check` or `tributary filters` prints what it must be)",
				strings.Join(cfg.FilterTypes, ", "), strings.Join(missing, ", "))
		}
	}
	e, err := projections.Open(ctx, t, sub, projections.Config{
		Policy: cfg.Unknown, Ignore: cfg.Ignore, TombstoneTTL: cfg.TombstoneTTL, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return nil, cfg, fmt.Errorf("table %s: %w", cfg.Table, err)
	}
	return e, cfg, nil
}

func processorConfig(cfg ProjectorConfig, log *slog.Logger, metrics io.Writer) pipeline.Config {
	return pipeline.Config{Options: cfg.Decode, Permanent: cfg.Permanent, Logger: log, Metrics: metrics}
}

// projectorEnv loads a projector's configuration and opens its table.
func projectorEnv(ctx context.Context) (ProjectorConfig, projections.Table, error) {
	cfg, err := LoadProjectorConfig(os.Getenv)
	if err != nil {
		return cfg, nil, err
	}
	aws, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	return cfg, dynamostore.New(dynamodb.NewFromConfig(aws), cfg.Table), nil
}

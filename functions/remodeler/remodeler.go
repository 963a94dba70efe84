// Package remodeler is the Lambda function that keeps a remodel's target
// table current from the table's change stream (docs/remodel.md): every
// change through the transform into the target, exactly once, with the
// ledger entries and claims in the target's ledger table. A main is one
// call over the table's environment:
//
//	func main() { remodeler.Main(tickets.Environment()) }
//
// It reads the Kinesis data stream the table's streaming destination
// feeds (the stack's two DynamoDB Streams readers are the projector and
// the archiver, and a third would be throttled), or, with SOURCE=streams,
// takes the place of one of them on the table's stream. Besides the
// processor's metrics, it emits CatchUpLag per batch: how far behind the
// table's changes the target is (now less the newest change applied).
package remodeler

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
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/metrics"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
)

// Config is a remodeler's configuration, read from the environment by
// LoadConfig:
//
//	TARGET_TABLE         the target table, the team's table of the new key
//	                     design (required)
//	LEDGER_TABLE         the target's ledger table (default TARGET_TABLE-ledger)
//	TRANSFORM            the transform's name: one of the main's, or of the
//	                     spec PROJECTIONS_FILE names (required)
//	SOURCE               kinesis (default): the Kinesis stream; or streams:
//	                     the table's DynamoDB stream, in place of a reader
//	TYPE_ATTRIBUTE       the item attributes, as for the projector: by default
//	VERSION_ATTRIBUTE    the environment's; one that differs from what the
//	KEY_ATTRIBUTES       environment declares stops the function at init
//	TTL_ATTRIBUTE
//	PERMANENT_FAILURES   report (default; bisect, retry, on-failure destination) or skip
//	TOMBSTONE_TTL_DAYS   how long a removed item's tombstone is kept (default 400)
//	CLAIM_WAIT_SECONDS   how long a change whose target key another source item
//	                     holds is retried before it fails as a collision
//	                     (default 300)
//	FILTER_ENTITY_TYPES  comma-separated entity types the event source mapping's
//	                     filter passes (the template sets it from the same
//	                     parameter as the filter): the function refuses to start
//	                     when it is set but names none, names no type the
//	                     transform rewrites, or misses one (records the filter
//	                     would drop unseen), or when the transform copies the
//	                     other types
type Config struct {
	Table, LedgerTable string
	Transform          string
	Source             pipeline.Source
	// Schema holds the attributes the variables give; empty ones are the
	// environment's.
	Schema       pipeline.Schema
	Permanent    pipeline.PermanentPolicy
	TombstoneTTL time.Duration
	ClaimWait    time.Duration
	// FilterTypes are the types the mapping's filter passes; nil when the
	// function is not told (FILTER_ENTITY_TYPES unset).
	FilterTypes []string
}

// LoadConfig reads a remodeler's configuration with lookup (os.LookupEnv
// in a main) and reports every problem at once.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	get := entry.Getenv(lookup)
	getenv := func(k string) string { return strings.TrimSpace(get(k)) }
	c := Config{
		Table:       getenv("TARGET_TABLE"),
		LedgerTable: getenv("LEDGER_TABLE"),
		Transform:   getenv("TRANSFORM"),
		Source:      pipeline.SourceKinesis,
		Schema:      entry.GivenSchema(getenv),
	}
	var errs []error
	if c.Table == "" {
		errs = append(errs, errors.New("TARGET_TABLE is required"))
	}
	if c.LedgerTable == "" && c.Table != "" {
		c.LedgerTable = dynamostore.LedgerTable(c.Table)
	}
	if c.LedgerTable != "" && c.LedgerTable == c.Table {
		errs = append(errs, fmt.Errorf("LEDGER_TABLE %s is TARGET_TABLE: the ledger needs a table of its own, beside the target", c.LedgerTable))
	}
	if c.Transform == "" {
		errs = append(errs, errors.New("TRANSFORM is required: the name of the transform that makes the target's items"))
	}
	var err error
	if c.FilterTypes, err = entry.FilterTypes(lookup, " (the template's RemodelEntityTypes)"); err != nil {
		errs = append(errs, err)
	}
	switch v := getenv("SOURCE"); v {
	case "", "kinesis":
	case "streams":
		c.Source = pipeline.SourceStreams
	default:
		errs = append(errs, fmt.Errorf("SOURCE %q: want kinesis or streams", v))
	}
	if c.Permanent, err = entry.Permanent(getenv); err != nil {
		errs = append(errs, err)
	}
	if c.TombstoneTTL, err = entry.Count(getenv, "TOMBSTONE_TTL_DAYS", 24*time.Hour); err != nil {
		errs = append(errs, err)
	}
	if c.ClaimWait, err = entry.Count(getenv, "CLAIM_WAIT_SECONDS", time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// Main runs the remodeler of env. It does not return.
func Main(env *projections.Environment) {
	entry.Main("remodeler", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		conf, err := in.AWS()
		if err != nil {
			return nil, err
		}
		client := dynamodb.NewFromConfig(conf)
		key, err := dynamostore.TargetKeyOf(in.Ctx, client, cfg.Table)
		if err != nil {
			return nil, fmt.Errorf("TARGET_TABLE: %w", err)
		}
		r, err := NewRemodel(cfg, env, key)
		if err != nil {
			return nil, err
		}
		return New(in.Ctx, cfg, r, dynamostore.NewTarget(client, cfg.Table, cfg.LedgerTable, r.Name(), r.Key()), in.Log, os.Stdout)
	})
}

// Remodel is the remodel a remodeler runs: a transform of the
// environment's into a target of a key design, as NewRemodel resolves it.
type Remodel struct {
	r *remodel.Remodel
}

// Name is the remodel's name: its transform's, under which the target
// table is marked.
func (r *Remodel) Name() string { return r.r.Name() }

// Key is the target's key design the remodel writes.
func (r *Remodel) Key() target.Key { return r.r.Key() }

// NewRemodel returns the remodel cfg names in env: its transform, into a
// target keyed tableKey (the target table's key schema; zero when not
// known: the transform's, or the source's key attributes), reading items
// by the schema env and cfg name.
func NewRemodel(cfg Config, env *projections.Environment, tableKey target.Key) (*Remodel, error) {
	schema, err := entry.Schema(env, cfg.Schema)
	if err != nil {
		return nil, err
	}
	t, err := env.Transform(cfg.Transform)
	if err != nil {
		return nil, fmt.Errorf("TRANSFORM: %w", err)
	}
	if cfg.FilterTypes != nil {
		if err := checkFilter(t, cfg.FilterTypes); err != nil {
			return nil, err
		}
	}
	key, err := remodel.ResolveKey(t, tableKey, schema)
	if err != nil {
		return nil, fmt.Errorf("TARGET_TABLE %s: %w", cfg.Table, err)
	}
	r, err := remodel.New(t, key, schema)
	if err != nil {
		return nil, err
	}
	return &Remodel{r: r}, nil
}

// checkFilter refuses a mapping filter that would drop records the
// transform takes: one that misses a type it rewrites, or any filter of a
// transform that copies the other types.
func checkFilter(t *projections.Transform, passes []string) error {
	if t.CopyOthers {
		return fmt.Errorf("FILTER_ENTITY_TYPES: the event source mapping's filter passes only %s, but transform %s copies every other type too: leave the filter's types empty (the template's RemodelEntityTypes)",
			strings.Join(passes, ", "), t.Name)
	}
	var missing []string
	for _, typ := range t.Types() {
		if !slices.Contains(passes, typ) {
			missing = append(missing, typ)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("FILTER_ENTITY_TYPES: the event source mapping's filter passes %s, but transform %s also rewrites %s, whose records it would drop before they reach the function: add them (the template's RemodelEntityTypes; `tributary projections check` lists a spec's)",
			strings.Join(passes, ", "), t.Name, strings.Join(missing, ", "))
	}
	return nil
}

// Handler is the remodeler's handler: a lambda.Handler (and
// pipeline.BatchHandler) over the remodel's engine.
type Handler struct {
	proc *pipeline.Processor
}

var _ lambda.Handler = (*Handler)(nil)

// New returns the remodeler's handler: the engine of r over target (made
// by the remodel's Open, which marks an empty target for r and refuses
// another's), behind the processor of cfg.Source, emitting its metrics
// (and CatchUpLag) to metrics.
func New(ctx context.Context, cfg Config, rm *Remodel, target driver.Table, log *slog.Logger, metrics io.Writer) (*Handler, error) {
	r := rm.r
	schema := pipeline.Schema{TypeAttribute: r.TypeAttribute(), VersionAttribute: cfg.Schema.VersionAttribute, KeyAttributes: cfg.Schema.KeyAttributes, TTLAttribute: cfg.Schema.TTLAttribute}
	e, err := r.Open(ctx, target, engine.Config{Logger: log, Metrics: metrics, TombstoneTTL: cfg.TombstoneTTL, ClaimWait: cfg.ClaimWait})
	if err != nil {
		return nil, fmt.Errorf("TARGET_TABLE %s: %w", cfg.Table, err)
	}
	lag := withLag(r.Handler(e), metrics, log, time.Now, lambdacontext.FunctionName)
	pc := pipeline.Config{Options: pipeline.Options{Schema: schema}, Permanent: cfg.Permanent, Logger: log, Metrics: metrics}
	h := &Handler{proc: pipeline.NewKinesisProcessor(lag, pc)}
	if cfg.Source == pipeline.SourceStreams {
		h.proc = pipeline.NewStreamsProcessor(lag, pc)
	}
	return h, nil
}

// Invoke handles one event: its bytes in, the partial batch response out.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return h.proc.Invoke(ctx, payload)
}

// lagged is a handler with the CatchUpLag metric: how long before now the
// newest change a batch applied was made.
type lagged struct {
	inner    pipeline.BatchHandler
	metrics  io.Writer
	log      *slog.Logger
	now      func() time.Time
	function string
}

// typedLagged is a lagged handler whose inner one says the entity types it
// reads.
type typedLagged struct{ *lagged }

// EntityTypes passes on the inner handler's, for the processor's counts.
func (t typedLagged) EntityTypes() []string {
	return t.inner.(interface{ EntityTypes() []string }).EntityTypes()
}

// withLag wraps inner with the lag metric, saying the entity types it
// reads when inner does.
func withLag(inner pipeline.BatchHandler, metrics io.Writer, log *slog.Logger, now func() time.Time, function string) pipeline.BatchHandler {
	if function == "" {
		function = "local"
	}
	l := &lagged{inner: inner, metrics: metrics, log: log, now: now, function: function}
	if _, ok := inner.(interface{ EntityTypes() []string }); ok {
		return typedLagged{l}
	}
	return l
}

// HandleBatch applies changes and emits the lag of those applied.
func (l *lagged) HandleBatch(ctx context.Context, changes []pipeline.Change) error {
	err := l.inner.HandleBatch(ctx, changes)
	applied := changes
	var be *pipeline.BatchError
	switch {
	case errors.As(err, &be):
		applied = changes[:min(be.Index, len(changes))]
	case err != nil:
		applied = nil
	}
	var newest time.Time
	for i := range applied {
		if t := applied[i].Time; t.After(newest) {
			newest = t
		}
	}
	if l.metrics != nil && !newest.IsZero() {
		set := metrics.Remodel.New("", map[string]string{"Function": l.function})
		set.AddDuration("CatchUpLag", l.now().Sub(newest))
		if _, werr := set.WriteTo(l.metrics, l.now()); werr != nil {
			l.log.LogAttrs(ctx, slog.LevelWarn, "lag metric not written", slog.String("error", werr.Error()))
		}
	}
	return err
}

// ImageNeed passes on the inner handler's.
func (l *lagged) ImageNeed() pipeline.ImageNeed { return pipeline.NeedOf(l.inner) }

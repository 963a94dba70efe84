package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tributary/tributary/internal/metrics"
	"github.com/tributary/tributary/internal/quote"
)

// BatchHandler applies a batch of changes, in order.
//
// HandleBatch returns nil when every change is applied durably. Otherwise,
// when the error is or wraps a *BatchError, every change before its Index is
// applied and the change at Index failed; any other error claims nothing, as
// if the first change had failed. Applying a change twice must be harmless:
// Lambda redelivers whatever follows a reported failure.
type BatchHandler interface {
	HandleBatch(ctx context.Context, changes []Change) error
}

// BatchHandlerFunc adapts a function to a BatchHandler.
type BatchHandlerFunc func(ctx context.Context, changes []Change) error

// HandleBatch calls f(ctx, changes).
func (f BatchHandlerFunc) HandleBatch(ctx context.Context, changes []Change) error {
	return f(ctx, changes)
}

// PermanentPolicy says what the processor does with a permanent failure (a
// record that cannot be decoded, an item a projection rejects).
type PermanentPolicy uint8

const (
	// ReportPermanent reports the record as the batch's failure, like any
	// other: the event source mapping's bounded retries and bisection isolate
	// it and its on-failure destination keeps it for redrive. Records before
	// it are applied. This is the default.
	ReportPermanent PermanentPolicy = iota
	// SkipPermanent logs the record with its position, counts it as failed
	// and goes on with the rest of the batch.
	SkipPermanent
)

// Config configures a Processor. The zero value works.
type Config struct {
	// Options configures decoding.
	Options Options
	// Permanent is the policy for permanent failures.
	Permanent PermanentPolicy
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Metrics receives CloudWatch embedded-metric-format lines, one set per
	// batch; nil writes none.
	Metrics io.Writer
	// Namespace is the metrics namespace. Default "Tributary".
	Namespace string
	// Function names the function in metric dimensions. Default: the Lambda
	// function name from the environment, or "local".
	Function string
	// EntityTypes are the entity types the per-type metrics name; records
	// of any other type are counted under "(other)", so that whoever writes
	// items cannot create custom metrics. Default: the handler's
	// EntityTypes(), if it has that method (the projection engine does).
	EntityTypes []string
	// Need is what the stream's records must carry besides what the
	// handler needs (NeedOf): the projector's filter criteria, for one,
	// need old images. A batch from a stream whose view type cannot give
	// them is refused whole (a *ViewError).
	Need ImageNeed
}

// Processor runs Lambda stream events through a BatchHandler with Lambda's
// partial-batch semantics. It implements lambda.Handler, so a main can pass
// it to lambda.Start and the event is decoded once, from its bytes.
type Processor struct {
	h      BatchHandler
	cfg    Config
	source Source
	decode func([]byte, Options) ([]Change, error)
	// reads says whether the handler reads an entity type; nil when the
	// handler does not say (EntityTypes).
	reads func(string) bool
	// named are the entity types the metrics name.
	named map[string]bool
}

// NewStreamsProcessor returns a Processor for Lambda DynamoDB Streams events.
func NewStreamsProcessor(h BatchHandler, cfg Config) *Processor {
	return newProcessor(h, cfg, SourceStreams, DecodeStreamsEvent)
}

// NewKinesisProcessor returns a Processor for Lambda Kinesis events carrying
// DynamoDB change records.
func NewKinesisProcessor(h BatchHandler, cfg Config) *Processor {
	return newProcessor(h, cfg, SourceKinesis, DecodeKinesisEvent)
}

func newProcessor(h BatchHandler, cfg Config, src Source, decode func([]byte, Options) ([]Change, error)) *Processor {
	metrics.Defaults(&cfg.Logger, &cfg.Namespace)
	if cfg.Function == "" {
		cfg.Function = lambdacontext.FunctionName
	}
	if cfg.Function == "" {
		cfg.Function = "local"
	}
	p := &Processor{h: h, cfg: cfg, source: src, decode: decode, named: map[string]bool{}}
	if et, ok := h.(entityTyper); ok {
		reads := map[string]bool{}
		for _, t := range et.EntityTypes() {
			reads[t] = true
		}
		p.reads = func(t string) bool { return reads[t] }
		if cfg.EntityTypes == nil {
			p.named = reads
		}
	}
	for _, t := range cfg.EntityTypes {
		p.named[t] = true
	}
	return p
}

// Result is what one batch came to.
type Result struct {
	// Records is how many records the event held.
	Records int
	// Applied is how many were handled successfully by a handler that reads
	// them.
	Applied int
	// Skipped is how many were handled successfully but skipped: no
	// handler reads their entity type (none, or one nothing is registered
	// for; only known for a handler that lists its types, EntityTypes).
	Skipped int
	// Failed lists the records that failed, in order: the first stopped the
	// batch (unless skipped under SkipPermanent).
	Failed []Failure
	// Report is the sequence number to report to Lambda as the batch item
	// failure, or "" when the whole batch is done.
	Report string
	// Newest is the newest creation time (Change.Time) of the records
	// applied or skipped; zero when there were none.
	Newest time.Time
}

// Failure is one failed record.
type Failure struct {
	Index          int
	Shard          string // when the source says it
	SequenceNumber string
	EntityType     string
	Err            error
	Skipped        bool // skipped under SkipPermanent rather than reported
}

// String describes the failure for people, naming the record once: a
// record that could not be decoded as its *RecordError does ("record 1
// (seq …, event …): path: msg"), any other as "record 1 (seq …, entity
// type Order): err".
func (f Failure) String() string {
	var re *RecordError
	if errors.As(f.Err, &re) && re.Index == f.Index {
		return re.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "record %d (", f.Index)
	if f.SequenceNumber != "" {
		b.WriteString("seq " + quote.ID(f.SequenceNumber) + ", ")
	}
	if f.EntityType == "" {
		b.WriteString("no entity type")
	} else {
		b.WriteString("entity type " + quote.Short(f.EntityType))
	}
	b.WriteString("): ")
	if f.Err != nil {
		b.WriteString(f.Err.Error())
	}
	return b.String()
}

// Invoke implements lambda.Handler: it decodes the event, processes it and
// returns the partial batch response for the event's source. An error is
// returned only when the payload cannot be read as an event at all, so that
// Lambda retries (and bisects) the whole batch.
func (p *Processor) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	res, err := p.Process(ctx, payload)
	if err != nil {
		return nil, err
	}
	return p.Response(res)
}

// Response renders a result as the source's partial batch response:
// events.DynamoDBEventResponse or events.KinesisEventResponse.
func (p *Processor) Response(res Result) ([]byte, error) {
	if p.source == SourceKinesis {
		r := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
		if res.Report != "" {
			r.BatchItemFailures = append(r.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: res.Report})
		}
		return json.Marshal(r)
	}
	r := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	if res.Report != "" {
		r.BatchItemFailures = append(r.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: res.Report})
	}
	return json.Marshal(r)
}

// Process decodes a Lambda event and applies its records in order. Records
// up to the first failure are applied; the failure's sequence number is
// Result.Report. The error is non-nil only for a payload that is not an
// event (ErrNotEvent), a stream whose view type cannot give what the
// handler needs (a *ViewError: nothing is applied), and a failed record
// without a sequence number to report.
func (p *Processor) Process(ctx context.Context, payload []byte) (Result, error) {
	start := time.Now()
	log := p.cfg.Logger
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("requestId", lc.AwsRequestID))
	}
	changes, err := p.decode(payload, p.cfg.Options)
	var bad []*RecordError
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			log.LogAttrs(ctx, slog.LevelError, "event cannot be decoded", slog.String("source", p.source.String()),
				slog.Int("bytes", len(payload)), slog.String("error", err.Error()))
			return Result{}, err
		}
		bad = de.Records
	}
	res := Result{Records: len(changes) + len(bad)}
	if _, err := CheckViews(changes, NeedOf(p.h), p.cfg.Need); err != nil {
		// No record of this stream can be handled correctly: fail the
		// invocation, so that the records wait, retried, until the stream
		// is fixed or they age out to the on-failure destination.
		log.LogAttrs(ctx, slog.LevelError, "stream refused", slog.String("source", p.source.String()), slog.String("error", err.Error()))
		return res, err
	}
	stats := newBatchStats(p.named)
	for i := range changes {
		stats.add(changes[i].EntityType(), "Records")
	}

	// Undecodable records: skipped, or the batch stops at the first of them.
	stop := len(changes)
	var stopFailure *Failure
	for _, rb := range bad {
		f := Failure{Index: rb.Index, Shard: rb.Shard, SequenceNumber: rb.SequenceNumber, Err: rb, EntityType: undecodable}
		stats.add(f.EntityType, "Records")
		if p.cfg.Permanent == SkipPermanent {
			f.Skipped = true
			res.Failed = append(res.Failed, f)
			stats.add(f.EntityType, "Skipped")
			p.logFailure(ctx, log, f)
			continue
		}
		stop = sort.Search(len(changes), func(i int) bool { return changes[i].Position.Index > rb.Index })
		stopFailure = &f
		break
	}

	rest := changes[:stop]
	var handlerFailure *Failure
	read := p.reads
	done := func(cs []Change) {
		for i := range cs {
			if cs[i].Time.After(res.Newest) {
				res.Newest = cs[i].Time
			}
			if read != nil && !Touches(&cs[i], read) {
				res.Skipped++
				stats.add(cs[i].EntityType(), "Skipped")
				continue
			}
			res.Applied++
			stats.add(cs[i].EntityType(), "Processed")
		}
	}
	for len(rest) > 0 {
		err := p.handle(ctx, rest)
		if err == nil {
			done(rest)
			break
		}
		idx := 0
		var be *BatchError
		if errors.As(err, &be) && be.Index >= 0 && be.Index < len(rest) {
			idx, err = be.Index, be.Err
		}
		c := &rest[idx]
		f := Failure{Index: c.Position.Index, Shard: c.Position.Shard, SequenceNumber: c.Position.SequenceNumber, EntityType: c.EntityType(), Err: err}
		done(rest[:idx])
		if p.cfg.Permanent == SkipPermanent && errors.Is(err, ErrPermanent) {
			f.Skipped = true
			res.Failed = append(res.Failed, f)
			stats.add(f.EntityType, "Skipped")
			p.logFailure(ctx, log, f)
			rest = rest[idx+1:]
			continue
		}
		handlerFailure = &f
		break
	}
	if handlerFailure != nil {
		stopFailure = handlerFailure
	}
	if stopFailure != nil {
		res.Failed = append(res.Failed, *stopFailure)
		res.Report = stopFailure.SequenceNumber
		stats.add(stopFailure.EntityType, "Failed")
		p.logFailure(ctx, log, *stopFailure)
		if res.Report == "" {
			// Without a sequence number the record cannot be named: fail the
			// whole invocation so that Lambda retries and bisects it.
			var re *RecordError
			if errors.As(stopFailure.Err, &re) {
				return res, re
			}
			return res, &RecordError{Index: stopFailure.Index, Err: stopFailure.Err}
		}
	}
	p.emit(ctx, log, stats, res, time.Since(start))
	return res, nil
}

// entityTyper is a handler that lists the entity types it reads, as the
// projection engine does.
type entityTyper interface{ EntityTypes() []string }

// handle calls the batch handler, turning a panic into a failure of the
// batch's first change.
func (p *Processor) handle(ctx context.Context, changes []Change) (err error) {
	defer Recover(&err)
	return p.h.HandleBatch(ctx, changes)
}

func (p *Processor) logFailure(ctx context.Context, log *slog.Logger, f Failure) {
	msg := "record failed; batch stops here"
	if f.Skipped {
		msg = "record failed permanently; skipped"
	}
	log.LogAttrs(ctx, slog.LevelError, msg,
		slog.String("source", p.source.String()),
		slog.Int("index", f.Index),
		slog.String("shard", f.Shard),
		slog.String("seq", f.SequenceNumber),
		slog.String("entityType", quote.Short(f.EntityType)),
		slog.Bool("permanent", errors.Is(f.Err, ErrPermanent)),
		slog.String("error", f.Err.Error()))
}

// batchStats counts records per entity type for the metrics: Records
// received, Processed (applied), Skipped (records no handler reads, and
// permanent failures skipped under SkipPermanent) and Failed (the record
// that stopped the batch). The dimension's values are bounded: the named
// types, "(none)" for a record without a type, "(undecodable)", and
// "(other)" for every other value.
type batchStats struct {
	named  map[string]bool
	byType map[string]map[string]float64
}

func newBatchStats(named map[string]bool) batchStats {
	return batchStats{named: named, byType: map[string]map[string]float64{}}
}

func (s batchStats) add(entityType, metric string) {
	switch {
	case entityType == "":
		entityType = "(none)"
	case entityType == undecodable:
	case !s.named[entityType]:
		entityType = "(other)"
	}
	m := s.byType[entityType]
	if m == nil {
		m = map[string]float64{"Records": 0, "Processed": 0, "Skipped": 0, "Failed": 0}
		s.byType[entityType] = m
	}
	m[metric]++
}

// undecodable is the entity type of a record that could not be decoded.
const undecodable = "(undecodable)"

func (p *Processor) emit(ctx context.Context, log *slog.Logger, stats batchStats, res Result, d time.Duration) {
	log.LogAttrs(ctx, slog.LevelInfo, "batch done",
		slog.String("source", p.source.String()),
		slog.Int("records", res.Records),
		slog.Int("applied", res.Applied),
		slog.Int("skipped", res.Skipped),
		slog.Int("failed", len(res.Failed)),
		slog.String("report", res.Report),
		slog.Duration("duration", d))
	if p.cfg.Metrics == nil {
		return
	}
	now := time.Now()
	types := make([]string, 0, len(stats.byType))
	for t := range stats.byType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		set := metrics.ByType.New(p.cfg.Namespace, map[string]string{"Function": p.cfg.Function, "EntityType": t})
		for name, v := range stats.byType[t] {
			set.Add(name, v)
		}
		if _, err := set.WriteTo(p.cfg.Metrics, now); err != nil {
			log.LogAttrs(ctx, slog.LevelWarn, "metrics not written", slog.String("error", err.Error()))
		}
	}
	set := metrics.Batch.New(p.cfg.Namespace, map[string]string{"Function": p.cfg.Function})
	set.AddDuration("BatchDuration", d)
	set.Add("BatchRecords", float64(res.Records))
	set.Add("RecordsDone", float64(res.Applied+res.Skipped))
	if !res.Newest.IsZero() {
		set.AddDuration("AppliedAge", max(0, now.Sub(res.Newest)))
	}
	if _, err := set.WriteTo(p.cfg.Metrics, now); err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "metrics not written", slog.String("error", err.Error()))
	}
}

// Package backfiller is the Lambda function that builds a projection set's
// aggregates from a DynamoDB export, one data file per invocation, for a
// Step Functions Distributed Map (plan, file and finish steps;
// docs/deploy.md). It does what `tributary backfill` does
// (internal/capabilities/backfill) in the aggregate table in DynamoDB, so either can
// resume the other's job. A main is one call over the table's environment:
//
//	func main() { backfiller.Main(tickets.Environment()) }
//
// A step that runs twice, or stops half-way (a crash, a timeout, a store
// error), changes nothing the job's exactness rests on: each data file's
// items go through the engine with their ledger entries, and the additions
// to hot aggregates are summed in the file's partial and folded once when
// the file is done. A file done before is passed over.
package backfiller

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
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/kinesisread"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/streamsread"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// defaultPlanBytes bounds the data file names one plan returns (the state
// machine maps over them, and a state's payload holds 256 KiB): about 1,500
// names of a usual export.
const defaultPlanBytes = 128 << 10

// Config is the backfiller's configuration, read from the environment by
// LoadConfig:
//
//	AGGREGATE_TABLE    the aggregate table the job writes (required)
//	EXPORT_LOCATION    the export of an event that names none
//	                   (s3://bucket/prefix/AWSDynamoDB/<ExportId>)
//	PROJECTIONS_FILE   a projection spec that replaces the main's projections
//	                   (for a main whose environment loads specs: the stock one)
//	PROJECTIONS        comma-separated projection names: backfill only these
//	                   (default every one); the table must be this subset's
//	TYPE_ATTRIBUTE     the item attributes, as for the projector: by default
//	VERSION_ATTRIBUTE  the environment's; one that differs from what the
//	KEY_ATTRIBUTES     environment declares stops the function at init
//	TTL_ATTRIBUTE
//	BATCH_SIZE         items per batch through the engine (default 1,000)
//	REPLAY_FROM        the stream the table is caught up from by a replay
//	                   after the job when nothing was attached to it before
//	                   the export (replay's --from: kinesis://STREAM, or
//	                   streams://TABLE_OR_STREAM_ARN, which keeps 24 hours):
//	                   the hand-off guard refuses a job that would finish
//	                   after the stream trims the export's second
type Config struct {
	Table       string
	Export      string
	Projections []string
	// Schema holds the attributes the variables give; empty ones are the
	// environment's.
	Schema    pipeline.Schema
	BatchSize int
	// PlanBytes bounds the data file names one plan returns; default
	// 128 KiB.
	PlanBytes int
	// Margin is how long before the invocation's deadline a file step
	// stops, so that it ends with an error of its own (OutOfTime) rather
	// than a timeout; default 10 s.
	Margin time.Duration
	// ReplayFrom (REPLAY_FROM) is the stream the table is caught up from
	// by `replay --start` after the job, when nothing (a shadow, a
	// projector) was attached to it before the export: the plan and file
	// steps refuse (a *backfill.HandoffError, error HandoffError) a job
	// that would finish after the stream has trimmed the export's second,
	// and emit the estimate (HandoffHeadroom, EstimatedRemaining). Empty:
	// no guard.
	ReplayFrom string
	// Retention returns how long a kinesis:// ReplayFrom keeps its records
	// (Main reads the stream's, DescribeStreamSummary); a streams:// one
	// keeps 24 hours. It is read again every few minutes.
	Retention func(ctx context.Context) (time.Duration, error)
	// Metrics receives the guard's metrics as embedded-metric-format lines
	// with the dimension Function (Main: standard output); nil: none.
	Metrics io.Writer
	// CheckEvery is how often a file step checks the guard (each
	// execution environment's first file step does); default 1 minute.
	// Each check reads the job's partial entries, one per data file.
	CheckEvery time.Duration
}

// LoadConfig reads the backfiller's configuration with lookup (os.LookupEnv in
// a main) and reports
// every problem at once.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	getenv := entry.Getenv(lookup)
	c := Config{
		Table:       strings.TrimSpace(getenv("AGGREGATE_TABLE")),
		Export:      strings.TrimSpace(getenv("EXPORT_LOCATION")),
		Projections: entry.List(getenv("PROJECTIONS")),
		Schema:      entry.GivenSchema(getenv),
	}
	var errs []error
	if c.Table == "" {
		errs = append(errs, errors.New("AGGREGATE_TABLE is required"))
	}
	if c.Export != "" {
		if _, err := objstore.Parse(c.Export); err != nil {
			errs = append(errs, fmt.Errorf("EXPORT_LOCATION: %w", err))
		}
	}
	c.ReplayFrom = strings.TrimSpace(getenv("REPLAY_FROM"))
	if c.ReplayFrom != "" && !streamLocation(c.ReplayFrom) {
		errs = append(errs, fmt.Errorf("REPLAY_FROM %q: want kinesis://STREAM (a name or ARN) or streams://TABLE (a table name or ARN, or its stream's ARN)", c.ReplayFrom))
	}
	if v := getenv("BATCH_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100_000 {
			errs = append(errs, fmt.Errorf("BATCH_SIZE %q: want a whole number from 1 to 100000", v))
		}
		c.BatchSize = n
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// Main runs the backfiller of env: it builds env's projections (or the
// subset PROJECTIONS names) from exports, into the aggregate table in
// DynamoDB. It does not return.
func Main(env *projections.Environment) {
	entry.Main("backfiller", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		aws, err := in.AWS()
		if err != nil {
			return nil, err
		}
		if stream, ok := strings.CutPrefix(cfg.ReplayFrom, "kinesis://"); ok {
			client := kinesis.NewFromConfig(aws)
			cfg.Retention = func(ctx context.Context) (time.Duration, error) { return kinesisread.Retention(ctx, client, stream) }
		}
		cfg.Metrics = os.Stdout
		h, err := New(cfg, env, s3.NewFromConfig(aws), dynamostore.New(dynamodb.NewFromConfig(aws), cfg.Table), in.Log)
		if err != nil {
			return nil, err
		}
		return lambda.NewHandler(h.Handle), nil
	})
}

// Event is one invocation of the backfiller. Action is "plan", "file" or
// "finish"; Export defaults to the function's EXPORT_LOCATION. Every step
// of one job carries the same export and incrementals: they are the job.
type Event struct {
	Action string `json:"action"`
	// Export is the full export: its directory (…/AWSDynamoDB/<ExportId>)
	// or a prefix holding one export, s3://bucket/prefix.
	Export string `json:"export,omitempty"`
	// Incrementals are incremental exports applied on top (the overlay).
	Incrementals []string `json:"incrementals,omitempty"`
	// SkipMD5 does not check data files against the manifest's checksums.
	SkipMD5 bool `json:"skipMd5,omitempty"`
	// DataFileS3Key (file) names the data file as manifest-files.json
	// does, or backfill.OverlayFile.
	DataFileS3Key string `json:"dataFileS3Key,omitempty"`
	// PendingBefore (plan) is how many files the plan before the last
	// round of files left: a plan that finds as many or more fails, since
	// the round did nothing. 0: the first plan.
	PendingBefore int `json:"pendingBefore,omitempty"`
	// Refused (finish) says that a file step of this round was refused by
	// the hand-off guard: the finish fails with the refusal it recorded.
	Refused bool `json:"refused,omitempty"`
}

// Response is what each action returns to the state machine.
type Response struct {
	Action string `json:"action"`
	// Job identifies the job (internal/capabilities/backfill.Job.ID); AsOf is the
	// point in time its items are as of: the stream's changes from this
	// time's second on must reach the table.
	Job  string    `json:"job"`
	AsOf time.Time `json:"asOf"`
	// Plan is the plan's answer (plan only).
	Plan *Plan `json:"plan,omitempty"`
	// file: the file, the items read, those the projections could not take,
	// and whether it had been done before (nothing was read).
	File   string `json:"file,omitempty"`
	Items  int64  `json:"items,omitempty"`
	Failed int64  `json:"failed,omitempty"`
	Done   bool   `json:"done,omitempty"`
	// finish: the job is complete, and how many files it has.
	Complete bool `json:"complete,omitempty"`
	Files    int  `json:"files,omitempty"`
}

// Plan is what a plan step returns: the files to map over next, and how
// far the job is.
type Plan struct {
	// Files are the next pending files (up to Config.PlanBytes of their
	// names; empty when none is pending): the state machine maps over
	// them, then plans again.
	Files []string `json:"files"`
	// Pending is how many files are not done, Total how many the job has.
	Pending int `json:"pending"`
	Total   int `json:"total"`
	// Complete: the table's marker records the job complete.
	Complete bool `json:"complete"`
}

// Handler is the backfiller's handler. It keeps the engine and the last
// job it opened for the next invocations of the same job, and is safe for
// concurrent invocations.
type Handler struct {
	cfg    Config
	s3     objstore.S3API
	table  driver.Table
	set    *projections.Set
	schema pipeline.Schema
	log    *slog.Logger

	mu     sync.Mutex
	engine *engine.Engine
	job    *backfill.Job
	jobKey string

	// The hand-off guard (Config.ReplayFrom): its stream's retention,
	// read again after retentionTTL, and when a file step last checked.
	guard       sync.Mutex
	handoff     *backfill.Handoff
	retentionAt time.Time
	lastCheck   time.Time
}

// retentionTTL is how long a stream's retention read is used: a stream
// kept longer (the refusal's advice) is seen by the next check after it.
const retentionTTL = 5 * time.Minute

// New returns the backfiller's handler: env's projections (or the subset
// cfg.Projections names) into the aggregate table t, the exports read from
// S3 through client. It checks the configuration against env; the table is
// opened (engine.Open) by the first invocation.
func New(cfg Config, env *projections.Environment, client objstore.S3API, t driver.Table, log *slog.Logger) (*Handler, error) {
	schema, set, err := entry.Projections(env, cfg.Schema, cfg.Projections)
	if err != nil {
		return nil, err
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.PlanBytes <= 0 {
		cfg.PlanBytes = defaultPlanBytes
	}
	if cfg.Margin <= 0 {
		cfg.Margin = 10 * time.Second
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = time.Minute
	}
	h := &Handler{cfg: cfg, s3: client, table: t, set: set, schema: schema, log: log}
	switch {
	case cfg.ReplayFrom == "":
	case strings.HasPrefix(cfg.ReplayFrom, "kinesis://") && cfg.Retention == nil:
		return nil, fmt.Errorf("REPLAY_FROM %s: no way to read the Kinesis stream's retention", cfg.ReplayFrom)
	default:
		h.handoff = &backfill.Handoff{Stream: cfg.ReplayFrom, Metrics: cfg.Metrics, Function: functionName()}
		if cfg.Retention == nil {
			h.handoff.Retention = streamsread.Retention
			h.retentionAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) // never read again
		}
	}
	return h, nil
}

// OutOfTime is a file step that stopped before the invocation's deadline:
// the retry resumes the file where it stopped. Its name is the error type
// the state machine sees.
type OutOfTime struct {
	File  string
	Items int64
	Err   error
}

func (e *OutOfTime) Error() string {
	return fmt.Sprintf("backfill of %s stopped before the function's timeout after %d items; a retry resumes it: %v", e.File, e.Items, e.Err)
}

func (e *OutOfTime) Unwrap() error { return e.Err }

// Refused is a step that no rerun of the job can finish
// (backfill.ErrRefused: a store the export cannot be laid over, a data
// file read from another object, an item the export holds twice): the
// state machine does not retry it, and the error says what to do instead.
// Its name is the error type the state machine sees.
type Refused struct {
	Err error
}

func (e *Refused) Error() string { return e.Err.Error() }

func (e *Refused) Unwrap() error { return e.Err }

// FilesPending is a finish step that found data files not done: the state
// machine's retry, or a redrive of the execution, does them.
type FilesPending struct {
	Job     string
	Pending []string
}

// maxNamed is how many pending files FilesPending names.
const maxNamed = 20

func (e *FilesPending) Error() string {
	names := e.Pending[:min(len(e.Pending), maxNamed)]
	more := ""
	if n := len(e.Pending) - len(names); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("backfill job %s is not complete: %d data files are not done: %s%s; run their file steps (redrive the execution, or start it again: done files are passed over)",
		e.Job, len(e.Pending), strings.Join(names, ", "), more)
}

// Handle runs one step. An error fails the invocation (the state machine's
// retry policy retries it; every step is idempotent), but for a refusal,
// which is a *Refused (or the hand-off guard's *backfill.HandoffError,
// which the state machine tells apart): no retry can finish the job.
func (h *Handler) Handle(ctx context.Context, ev Event) (Response, error) {
	resp, err := h.handle(ctx, ev)
	if errors.Is(err, backfill.ErrRefused) && !errors.As(err, new(*Refused)) && !errors.As(err, new(*backfill.HandoffError)) {
		err = &Refused{Err: err}
	}
	return resp, err
}

func (h *Handler) handle(ctx context.Context, ev Event) (Response, error) {
	resp := Response{Action: ev.Action}
	switch ev.Action {
	case "plan", "file", "finish":
	default:
		return resp, fmt.Errorf("backfiller: unknown action %q: want plan, file or finish", ev.Action)
	}
	if ev.Action == "file" && ev.DataFileS3Key == "" {
		return resp, errors.New("backfiller: a file event needs dataFileS3Key")
	}
	if ev.Export == "" {
		ev.Export = h.cfg.Export
	}
	if ev.Export == "" {
		return resp, errors.New("backfiller: the event names no export, and EXPORT_LOCATION is not set")
	}
	job, err := h.open(ctx, ev)
	if err != nil {
		return resp, err
	}
	resp.Job, resp.AsOf = job.ID(), job.AsOf()
	switch ev.Action {
	case "plan":
		return h.plan(ctx, job, ev, resp)
	case "file":
		return h.file(ctx, job, ev, resp)
	default:
		return h.finish(ctx, job, ev, resp)
	}
}

// open returns the event's job: the one opened last, for the same export
// and incrementals, or a new one.
func (h *Handler) open(ctx context.Context, ev Event) (*backfill.Job, error) {
	key := strings.Join(append([]string{ev.Export, strconv.FormatBool(ev.SkipMD5)}, ev.Incrementals...), "\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.job != nil && h.jobKey == key {
		return h.job, nil
	}
	if h.engine == nil {
		e, err := engine.Open(ctx, h.table, h.set, engine.Config{Logger: errorsOnly(h.log)})
		if err != nil {
			return nil, fmt.Errorf("backfiller: aggregate table %s: %w", h.tableName(), err)
		}
		h.engine = e
	}
	full, overlay, err := entry.OpenExport(ctx, h.s3, ev.Export, ev.Incrementals, h.schema, ev.SkipMD5)
	if err != nil {
		return nil, fmt.Errorf("backfiller: %w", err)
	}
	job, err := backfill.Open(full, overlay, h.engine, h.table, h.set, backfill.Options{
		Decode: pipeline.Options{Schema: h.schema}, BatchSize: h.cfg.BatchSize, SkipMD5: ev.SkipMD5, Handoff: h.handoff,
	})
	if err != nil {
		return nil, err
	}
	h.job, h.jobKey = job, key
	return job, nil
}

func (h *Handler) tableName() string {
	if n, ok := h.table.(interface{ Table() string }); ok {
		return n.Table()
	}
	return fmt.Sprintf("%T", h.table)
}

// plan begins the job (backfill.Job.Begin: the table's marker records it)
// and returns the files still to do, up to PlanBytes of their names.
func (h *Handler) plan(ctx context.Context, job *backfill.Job, ev Event, resp Response) (Response, error) {
	if err := h.checkHandoff(ctx, job, true); err != nil {
		return resp, err
	}
	if err := job.Begin(ctx); err != nil {
		return resp, err
	}
	pending, err := job.Pending(ctx)
	if err != nil {
		return resp, err
	}
	p := &Plan{Files: []string{}, Pending: len(pending), Total: len(job.Files())}
	resp.Plan = p
	if ev.PendingBefore > 0 && len(pending) >= ev.PendingBefore {
		return resp, fmt.Errorf("backfiller: job %s: %d files pending after a round of file steps that began with %d: the round did nothing, so the execution stops instead of looping", job.ID(), len(pending), ev.PendingBefore)
	}
	size := 0
	for _, f := range pending {
		size += len(f) + 3 // quotes and a comma
		if size > h.cfg.PlanBytes && len(p.Files) > 0 {
			break
		}
		p.Files = append(p.Files, f)
	}
	if len(pending) == 0 {
		m, _, err := backfill.ReadMarker(ctx, h.table)
		if err != nil {
			return resp, err
		}
		p.Complete = m != nil && m.Job == job.ID() && !m.Completed.IsZero()
	}
	h.log.Info("plan", "export", ev.Export, "job", job.ID(), "asOf", job.AsOf(), "files", p.Total, "pending", p.Pending, "thisRound", len(p.Files), "complete", p.Complete)
	return resp, nil
}

// file backfills one data file; a file done before is passed over.
func (h *Handler) file(ctx context.Context, job *backfill.Job, ev Event, resp Response) (Response, error) {
	if !slices.Contains(job.Files(), ev.DataFileS3Key) {
		return resp, fmt.Errorf("backfiller: %q is not a data file of job %s (%d files; the export's manifest-files.json names them, and %q stands for the incremental exports)",
			ev.DataFileS3Key, job.ID(), len(job.Files()), backfill.OverlayFile)
	}
	if err := h.checkHandoff(ctx, job, false); err != nil {
		resp.File = ev.DataFileS3Key
		return resp, err
	}
	// The engine's counts are the handler's: a concurrent invocation's
	// would be in them too (Lambda runs one at a time).
	start, before, failedBefore := time.Now(), h.engine.Stats(), len(job.Failures())
	fctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		fctx, cancel = context.WithDeadline(ctx, d.Add(-h.cfg.Margin))
		defer cancel()
	}
	res, err := job.File(fctx, ev.DataFileS3Key)
	resp.File, resp.Items, resp.Failed, resp.Done = res.File, res.Items, res.Failed, res.Done
	s := h.engine.Stats()
	attrs := []any{"job", job.ID(), "file", res.File, "items", res.Items, "failed", res.Failed, "done", res.Done,
		"written", s.Items - before.Items, "stale", s.Stale - before.Stale, "unprojected", s.Unprojected - before.Unprojected,
		"transactions", s.Transactions - before.Transactions, "conflicts", s.Conflicts - before.Conflicts,
		"contention", s.Contention - before.Contention, "seconds", time.Since(start).Seconds()}
	if err != nil {
		if fctx.Err() != nil && ctx.Err() == nil && !errors.Is(err, backfill.ErrRefused) {
			err = &OutOfTime{File: ev.DataFileS3Key, Items: res.Items, Err: err}
		}
		h.log.Error("file", append(attrs, "error", err.Error())...)
		return resp, err
	}
	for _, f := range job.Failures()[failedBefore:] {
		h.log.Warn("item not projected", "job", job.ID(), "file", f.File, "line", f.Line, "keys", f.Keys, "error", f.Err.Error())
	}
	h.log.Info("file", attrs...)
	return resp, nil
}

// checkHandoff runs the hand-off guard (Job.CheckHandoff): in every plan
// step, and in a file step when CheckEvery has passed since this
// environment's last check. A refusal is a *backfill.HandoffError, the
// error HandoffError to the state machine.
func (h *Handler) checkHandoff(ctx context.Context, job *backfill.Job, always bool) error {
	if h.handoff == nil {
		return nil
	}
	h.guard.Lock()
	defer h.guard.Unlock()
	now := time.Now()
	if !always && now.Sub(h.lastCheck) < h.cfg.CheckEvery {
		return nil
	}
	h.lastCheck = now
	if now.Sub(h.retentionAt) >= retentionTTL {
		r, err := h.cfg.Retention(ctx)
		if err != nil {
			return fmt.Errorf("backfiller: REPLAY_FROM: %w", err)
		}
		h.handoff.Retention, h.retentionAt = r, now
	}
	est, err := job.CheckHandoff(ctx, now)
	if est != nil {
		attrs := []any{"job", job.ID(), "stream", h.handoff.Stream, "retention", h.handoff.Retention.String(), "trimmedAt", est.Deadline,
			"items", est.Items, "done", est.Done, "itemsPerSecond", est.Rate, "headroomSeconds", est.Headroom.Seconds()}
		if !est.Finish.IsZero() {
			attrs = append(attrs, "finish", est.Finish)
		}
		h.log.Info("handoff", attrs...)
	}
	return err
}

// streamLocation says whether loc names a stream as replay's --from
// does: kinesis://STREAM or streams://TABLE.
func streamLocation(loc string) bool {
	k, kok := strings.CutPrefix(loc, "kinesis://")
	d, dok := strings.CutPrefix(loc, "streams://")
	return kok && k != "" || dok && d != ""
}

// functionName is the function's name (its metrics' dimension).
func functionName() string {
	if lambdacontext.FunctionName != "" {
		return lambdacontext.FunctionName
	}
	return "backfiller"
}

// finish records the job complete, or fails naming the files not done;
// after a file step's hand-off refusal (ev.Refused), it fails with the
// refusal recorded, or, if none was, checks the guard again.
func (h *Handler) finish(ctx context.Context, job *backfill.Job, ev Event, resp Response) (Response, error) {
	if ev.Refused {
		he, err := job.Refusal(ctx)
		if err != nil {
			return resp, err
		}
		if he != nil {
			return resp, he
		}
		if err := h.checkHandoff(ctx, job, true); err != nil {
			return resp, err
		}
	}
	complete, err := job.Finish(ctx)
	if err != nil {
		return resp, err
	}
	if !complete {
		pending, err := job.Pending(ctx)
		if err != nil {
			return resp, err
		}
		return resp, &FilesPending{Job: job.ID(), Pending: pending}
	}
	resp.Complete, resp.Files = true, len(job.Files())
	h.log.Info("finish", "job", job.ID(), "asOf", job.AsOf(), "files", resp.Files,
		"streamFrom", job.AsOf().Truncate(time.Second).Format(time.RFC3339))
	return resp, nil
}

// errorsOnly is log without its records below Error: the engine warns of
// every item of a type no projection reads, which a table's backfill
// would repeat for millions of items (the file steps count them instead).
func errorsOnly(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: log.Handler(), min: slog.LevelError})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: m.Handler.WithAttrs(attrs), min: m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: m.Handler.WithGroup(name), min: m.min}
}

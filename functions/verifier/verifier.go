// Package verifier is the Lambda function that runs `tributary verify`
// beyond one machine: the gate between an aggregate table and the
// recomputation of its projections from a DynamoDB export, cut into the
// steps of the Verify state machine (verify.Parted: plan; scan, a segment
// of the table each; file, a data file each; join and compare, a part
// each; finish), each step an invocation, the steps handing each other
// their parts through S3 (WORK_LOCATION). The finish answers with
// `tributary verify`'s verdict and words. A main is one call over the
// table's environment:
//
//	func main() { verifier.Main(tickets.Environment()) }
//
// Every step may run twice (a retry, a redrive): it hands over the same.
package verifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// Config is the verifier's configuration, read from the environment by
// LoadConfig:
//
//	AGGREGATE_TABLE    the aggregate table checked (required)
//	WORK_LOCATION      where the steps hand each other their parts
//	                   (s3://bucket/prefix; required)
//	EXPORT_LOCATION    the export of an event that names none
//	PROJECTIONS_FILE   a projection spec that replaces the main's projections
//	PROJECTIONS        comma-separated projection names: check only these
//	                   (of a table of the whole set, or of this subset)
//	TYPE_ATTRIBUTE     the item attributes, as for the backfiller
//	VERSION_ATTRIBUTE
//	KEY_ATTRIBUTES
//	TTL_ATTRIBUTE
//	KMS_KEY_ID         the KMS key the hand-offs are written with (SSE-KMS;
//	                   default: the bucket's encryption)
//	SCAN_SEGMENTS      segments the table is scanned in (default: by the
//	                   table's size, one a 512 MiB, from 16 to 1,000)
//	PARTS              parts the check is cut into: a power of two up to
//	                   256 (default: by the export's size, verify.Parted)
//	MAX_PRINT          differences the finish names (default 100, at most
//	                   10,000; the rest are counted)
type Config struct {
	Table       string
	Work        string
	Export      string
	Projections []string
	// Schema holds the attributes the variables give; empty ones are the
	// environment's.
	Schema   pipeline.Schema
	KMSKeyID string
	// Segments is how many segments the plan scans the table in; 0: by
	// the table's size (TableSize), one a 512 MiB, from 16 to 1,000.
	Segments int
	Parts    int
	MaxPrint int
	// TableSize returns the table's size in bytes (Main: DescribeTable's
	// TableSizeBytes, which DynamoDB updates about every six hours); nil:
	// 16 segments.
	TableSize func(ctx context.Context) (int64, error)
	// Dir is where a step spills (default: the system's temporary
	// directory). When it is set (Main sets /tmp/verifier), each
	// invocation first removes the spills and spools there (tributary-*)
	// older than 15 minutes, a Lambda invocation's longest: what a step
	// the function's timeout stopped left behind.
	Dir string
}

// maxPrintLimit bounds MAX_PRINT, as verify's --max-print.
const maxPrintLimit = 10_000

// LoadConfig reads the verifier's configuration with lookup (os.LookupEnv
// in a main) and reports every problem at once.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	getenv := entry.Getenv(lookup)
	c := Config{
		Table:       strings.TrimSpace(getenv("AGGREGATE_TABLE")),
		Work:        strings.TrimSpace(getenv("WORK_LOCATION")),
		Export:      strings.TrimSpace(getenv("EXPORT_LOCATION")),
		Projections: entry.List(getenv("PROJECTIONS")),
		KMSKeyID:    strings.TrimSpace(getenv("KMS_KEY_ID")),
		Schema:      entry.GivenSchema(getenv),
		MaxPrint:    100,
	}
	var errs []error
	if c.Table == "" {
		errs = append(errs, errors.New("AGGREGATE_TABLE is required"))
	}
	if c.Work == "" {
		errs = append(errs, errors.New("WORK_LOCATION is required (s3://bucket/prefix: where the steps hand each other their parts)"))
	} else if _, err := objstore.Parse(c.Work); err != nil {
		errs = append(errs, fmt.Errorf("WORK_LOCATION: %w", err))
	}
	if c.Export != "" {
		if _, err := objstore.Parse(c.Export); err != nil {
			errs = append(errs, fmt.Errorf("EXPORT_LOCATION: %w", err))
		}
	}
	number := func(name string, lo, hi int, dst *int, want string) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s %q: want %s", name, v, want))
			return
		}
		*dst = n
	}
	number("SCAN_SEGMENTS", 1, 1_000_000, &c.Segments, "a whole number from 1 to 1000000 (DynamoDB's limit)")
	number("PARTS", 1, engine.MaxParts, &c.Parts, fmt.Sprintf("a power of two from 1 to %d", engine.MaxParts))
	if c.Parts&(c.Parts-1) != 0 {
		errs = append(errs, fmt.Errorf("PARTS %d: want a power of two from 1 to %d", c.Parts, engine.MaxParts))
	}
	number("MAX_PRINT", 0, maxPrintLimit, &c.MaxPrint, fmt.Sprintf("a whole number from 0 (all) to %d", maxPrintLimit))
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// Main runs the verifier of env: it checks the aggregate table in DynamoDB
// against exports, a step an invocation. It does not return.
func Main(env *projections.Environment) {
	entry.Main("verifier", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		cfg.Dir = filepath.Join(os.TempDir(), "verifier")
		if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
			return nil, err
		}
		aws, err := in.AWS()
		if err != nil {
			return nil, err
		}
		client := dynamodb.NewFromConfig(aws)
		table := dynamostore.New(client, cfg.Table)
		segment := func(i, n int) (driver.Reader, error) { return table.Segment(i, n) }
		if cfg.Segments == 0 {
			cfg.TableSize = func(ctx context.Context) (int64, error) {
				out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &cfg.Table})
				if err != nil {
					return 0, fmt.Errorf("verifier: the size of table %s: %w", cfg.Table, err)
				}
				if out.Table == nil || out.Table.TableSizeBytes == nil {
					return 0, nil
				}
				return *out.Table.TableSizeBytes, nil
			}
		}
		h, err := New(cfg, env, s3.NewFromConfig(aws), table, segment, in.Log)
		if err != nil {
			return nil, err
		}
		return lambda.NewHandler(h.Handle), nil
	})
}

// Event is one invocation of the verifier: a step of a Verify execution.
// Every step of one job carries the same export and incrementals.
type Event struct {
	// Action is plan, scan, file, join, compare or finish.
	Action string `json:"action"`
	// Export is the full export (default: EXPORT_LOCATION), Incrementals
	// the incremental exports on top, SkipMD5 skips checking data files
	// against the manifest's checksums.
	Export       string   `json:"export,omitempty"`
	Incrementals []string `json:"incrementals,omitempty"`
	SkipMD5      bool     `json:"skipMd5,omitempty"`
	// Run (plan) names the execution: its job is its own.
	Run string `json:"run,omitempty"`
	// Job (every step after the plan) is the plan's job.
	Job string `json:"job,omitempty"`
	// Segment (scan), DataFileS3Key (file) and Part (join, compare) say
	// which step of the map.
	Segment       int    `json:"segment,omitempty"`
	DataFileS3Key string `json:"dataFileS3Key,omitempty"`
	Part          int    `json:"part,omitempty"`
}

// Work names the objects the plan wrote for the maps to read their items
// from (a Distributed Map's ItemReader): JSON arrays of {"segment": n},
// {"dataFileS3Key": "…"} and {"part": n}.
type Work struct {
	Bucket   string `json:"bucket"`
	Segments string `json:"segments"`
	Files    string `json:"files"`
	Parts    string `json:"parts"`
}

// Response is what each action returns to the state machine.
type Response struct {
	Action string    `json:"action"`
	Job    string    `json:"job"`
	AsOf   time.Time `json:"asOf"`
	// plan: how many files, segments and parts the job has, the items the
	// manifests count, and where the maps' items are.
	Files    int   `json:"files,omitempty"`
	Segments int   `json:"segments,omitempty"`
	Parts    int   `json:"parts,omitempty"`
	Work     *Work `json:"work,omitempty"`
	// scan, file, join, compare: the step, and what it read and found.
	Step  string `json:"step,omitempty"`
	Items int64  `json:"items,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
	// finish: the verdict (verify.Agree, verify.Mismatch, verify.NotReady)
	// and `tributary verify`'s words, after its first line; the counts.
	Verdict     string `json:"verdict,omitempty"`
	Agree       bool   `json:"agree,omitempty"`
	Report      string `json:"report,omitempty"`
	Changed     int64  `json:"changed,omitempty"`
	Aggregates  int    `json:"aggregates,omitempty"`
	Rows        int    `json:"rows,omitempty"`
	Differences int64  `json:"differences,omitempty"`
}

// Refused is a step that no rerun can finish (an event that names no step
// of its job, a table of other projections): the state machine does not
// retry it. Its name is the error type the state machine sees.
type Refused struct {
	Err error
}

func (e *Refused) Error() string { return e.Err.Error() }

func (e *Refused) Unwrap() error { return e.Err }

// Table is what the verifier reads of the aggregate table: its marker (a
// ledger read) and its scans. *dynamostore.Store implements it.
type Table interface {
	driver.Store
	driver.Reader
}

// Handler is the verifier's handler, safe for concurrent invocations.
type Handler struct {
	cfg     Config
	s3      objstore.S3API
	table   Table
	segment func(i, n int) (driver.Reader, error)
	set     *projections.Set
	whole   *projections.Set
	schema  pipeline.Schema
	work    verify.Work
	workLoc objstore.Location
	log     *slog.Logger

	mu      sync.Mutex
	checked bool // the table's marker is of this set
}

// New returns the verifier's handler: env's projections (or the subset
// cfg.Projections names) checked in table (segment: its parallel scan
// segments; nil: one), the exports and the work location read through
// client.
func New(cfg Config, env *projections.Environment, client objstore.S3API, table Table, segment func(i, n int) (driver.Reader, error), log *slog.Logger) (*Handler, error) {
	schema, set, err := entry.Projections(env, cfg.Schema, cfg.Projections)
	if err != nil {
		return nil, err
	}
	loc, err := objstore.Parse(cfg.Work)
	if err != nil {
		return nil, fmt.Errorf("WORK_LOCATION: %w", err)
	}
	if cfg.MaxPrint < 0 {
		cfg.MaxPrint = 0
	}
	return &Handler{cfg: cfg, s3: client, table: table, segment: segment, set: set, whole: env.Projections, schema: schema,
		work: loc.Open(client, objstore.S3Options{TempDir: cfg.Dir, KMSKeyID: cfg.KMSKeyID}), workLoc: loc, log: log}, nil
}

// Handle runs one step. An error fails the invocation (the state machine
// retries it; every step may run twice), but for a *Refused.
func (h *Handler) Handle(ctx context.Context, ev Event) (Response, error) {
	resp := Response{Action: ev.Action}
	if h.cfg.Dir != "" {
		if err := sweep(h.cfg.Dir, time.Now()); err != nil {
			return resp, fmt.Errorf("verifier: %w", err)
		}
	}
	switch ev.Action {
	case "plan", "scan", "file", "join", "compare", "finish":
	default:
		return resp, &Refused{fmt.Errorf("verifier: unknown action %q: want plan, scan, file, join, compare or finish", ev.Action)}
	}
	if ev.Export == "" {
		ev.Export = h.cfg.Export
	}
	if ev.Export == "" {
		return resp, &Refused{errors.New("verifier: the event names no export, and EXPORT_LOCATION is not set")}
	}
	if ev.Action == "plan" && ev.Run == "" {
		return resp, &Refused{errors.New("verifier: a plan event needs run (the execution's name)")}
	}
	if ev.Action != "plan" && ev.Job == "" {
		return resp, &Refused{fmt.Errorf("verifier: a %s event needs job (the plan's)", ev.Action)}
	}
	if err := h.checkMarker(ctx); err != nil {
		return resp, err
	}
	full, overlay, err := entry.OpenExport(ctx, h.s3, ev.Export, ev.Incrementals, h.schema, ev.SkipMD5)
	if err != nil {
		return resp, fmt.Errorf("verifier: %w", err)
	}
	c := h.parted(full, overlay, ev.SkipMD5)
	if ev.Action == "plan" {
		return h.plan(ctx, c, ev, resp)
	}
	if ev.Action == "finish" {
		return h.finish(ctx, c, ev, resp)
	}
	p, err := c.ReadPlan(ctx, ev.Job)
	if err != nil {
		return resp, err
	}
	resp.Job, resp.AsOf = p.Job, p.AsOf
	var step *verify.Step
	switch ev.Action {
	case "scan":
		if ev.Segment < 0 || ev.Segment >= p.Segments {
			return resp, &Refused{fmt.Errorf("verifier: job %s has no scan segment %d (it has %d)", p.Job, ev.Segment, p.Segments)}
		}
		step, err = c.Scan(ctx, p, ev.Segment)
	case "file":
		if !slices.Contains(p.Files, ev.DataFileS3Key) {
			return resp, &Refused{fmt.Errorf("verifier: %q is not a data file of job %s (%d files)", ev.DataFileS3Key, p.Job, len(p.Files))}
		}
		step, err = c.File(ctx, p, ev.DataFileS3Key)
	case "join", "compare":
		if ev.Part < 0 || ev.Part >= p.Parts {
			return resp, &Refused{fmt.Errorf("verifier: job %s has no part %d (it has %d)", p.Job, ev.Part, p.Parts)}
		}
		if ev.Action == "join" {
			step, err = c.Join(ctx, p, ev.Part)
		} else {
			step, err = c.Compare(ctx, p, ev.Part)
		}
	}
	if err != nil {
		h.log.Error(ev.Action, "job", p.Job, "error", err.Error())
		return resp, err
	}
	resp.Step, resp.Items, resp.Bytes, resp.Differences = step.Name, step.Items, step.Bytes, step.Differences
	h.log.Info(ev.Action, "job", p.Job, "step", step.Name, "items", step.Items, "bytes", step.Bytes, "differences", step.Differences)
	return resp, nil
}

// staleAfter is how old a spill must be before sweep removes it: a
// Lambda invocation's longest run, so no step still running owns it.
const staleAfter = 15 * time.Minute

// sweep removes from dir the spills and spools (tributary-*) older than
// staleAfter: what a step stopped by the function's timeout left behind.
// Nothing else, and nothing a running step may still use.
func sweep(dir string, now time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "tributary-") {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleAfter {
			continue // gone meanwhile, or young
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// checkMarker refuses a table that is not of this set, nor of the subset
// PROJECTIONS names: a recomputation of other definitions would report
// every difference between the two as drift.
func (h *Handler) checkMarker(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.checked {
		return nil
	}
	m, err := engine.ReadMarker(ctx, h.table)
	if err != nil {
		return fmt.Errorf("verifier: aggregate table %s: %w", h.cfg.Table, err)
	}
	if m == nil || !slices.Equal(m.Set, h.whole.IDs()) && !slices.Equal(m.Set, h.set.IDs()) {
		return &Refused{fmt.Errorf("verifier: aggregate table %s: %w", h.cfg.Table, &engine.SetMismatchError{Table: m, Engine: h.set.IDs()})}
	}
	h.checked = true
	return nil
}

// parted returns the check of one job's export.
func (h *Handler) parted(full *export.Export, overlay *export.Overlay, skipMD5 bool) *verify.Parted {
	o := verify.Options{Decode: pipeline.Options{Schema: h.schema}, SkipMD5: skipMD5, Dir: h.cfg.Dir, MaxNamed: h.cfg.MaxPrint}
	if len(h.cfg.Projections) > 0 {
		// The ledger may hold other projections' state: keep these ones'
		// lines.
		names := h.cfg.Projections
		o.Keep = func(d string) bool {
			return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(d, n+" ") })
		}
	}
	return &verify.Parted{Full: full, Overlay: overlay, Table: h.table, Segment: h.segment, Work: h.work,
		Options: o, Projections: h.set.Projections(), Segments: h.cfg.Segments, Parts: h.cfg.Parts}
}

// segmentBytes is about how much of the table a scan step reads, when
// the plan chooses the segments: a few seconds of a Scan's pages.
const segmentBytes = 512 << 20

// segments is how many segments the plan scans a table of size bytes in.
func segments(size int64) int {
	return int(min(max(16, (size+segmentBytes-1)/segmentBytes), 1000))
}

// plan plans the job and writes the maps' items beside its plan.
func (h *Handler) plan(ctx context.Context, c *verify.Parted, ev Event, resp Response) (Response, error) {
	if c.Segments == 0 && h.cfg.TableSize != nil {
		size, err := h.cfg.TableSize(ctx)
		if err != nil {
			return resp, err
		}
		c.Segments = segments(size)
	}
	p, err := c.Plan(ctx, ev.Run)
	if err != nil {
		return resp, err
	}
	resp.Job, resp.AsOf, resp.Files, resp.Segments, resp.Parts, resp.Items = p.Job, p.AsOf, len(p.Files), p.Segments, p.Parts, p.Items
	w := &Work{Bucket: h.workLoc.Bucket}
	items := []struct {
		name string
		key  *string
		list []any
	}{{"segments", &w.Segments, nil}, {"files", &w.Files, nil}, {"parts", &w.Parts, nil}}
	for i := range p.Segments {
		items[0].list = append(items[0].list, map[string]int{"segment": i})
	}
	for _, f := range p.Files {
		items[1].list = append(items[1].list, map[string]string{"dataFileS3Key": f})
	}
	for i := range p.Parts {
		items[2].list = append(items[2].list, map[string]int{"part": i})
	}
	for _, it := range items {
		body, err := json.Marshal(it.list)
		if err != nil {
			return resp, err
		}
		key := path.Join(p.Job, "items", it.name+".json")
		if err := h.work.Put(ctx, key, body); err != nil {
			return resp, fmt.Errorf("verifier: job %s: %w", p.Job, err)
		}
		*it.key = path.Join(h.workLoc.Prefix, key)
	}
	resp.Work = w
	h.log.Info("plan", "export", p.Export, "job", p.Job, "asOf", p.AsOf, "files", len(p.Files), "segments", p.Segments, "parts", p.Parts, "items", p.Items)
	return resp, nil
}

// finish sums the steps' notes into the verdict. It removes nothing: a
// finish run again answers the same, and the work bucket's rule removes
// the job's objects days later (removing hundreds of thousands of objects
// would take the finish minutes).
func (h *Handler) finish(ctx context.Context, c *verify.Parted, ev Event, resp Response) (Response, error) {
	p, err := c.ReadPlan(ctx, ev.Job)
	if err != nil {
		return resp, err
	}
	res, err := c.Finish(ctx, p)
	if err != nil {
		return resp, err
	}
	var report bytes.Buffer
	as := "as of the export"
	if !res.AsOf.IsZero() {
		as = "as of " + res.AsOf.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(&report, "recomputed %d aggregates and %d rows from %d items of %s (%s) in %d steps\n",
		res.Aggregates, res.Rows, res.Items, p.Export, as, p.Segments+len(p.Files)+2*p.Parts)
	verdict := verify.Report(&report, res, verify.ReportOptions{MaxPrint: h.cfg.MaxPrint, Keep: c.Options.Keep,
		Rerun: "the Backfill state machine again, or `tributary backfill`"})
	resp.Job, resp.AsOf, resp.Verdict, resp.Agree, resp.Report = p.Job, p.AsOf, verdict, verdict == verify.Agree, report.String()
	resp.Items, resp.Changed, resp.Aggregates, resp.Rows = res.Items, res.Changed, res.Aggregates, res.Rows
	resp.Differences = int64(len(res.Differences)) + res.More
	h.log.Info("finish", "job", p.Job, "verdict", verdict, "items", res.Items, "changed", res.Changed, "differences", resp.Differences, "report", resp.Report)
	return resp, nil
}

// Package repartitioner is the Lambda function that repartitions a
// DynamoDB export by entity type, one data file per invocation, for a Step
// Functions Distributed Map (plan, file, finish and release steps;
// docs/exports.md), with the transforms of the table's environment. It does
// exactly what `tributary repartition` does (internal/capabilities/export/repartition),
// so either can resume the other's run. A main is one call:
//
//	func main() { repartitioner.Main(tickets.Environment()) }
package repartitioner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// Config is the repartitioner's configuration, read from the environment
// by LoadConfig: the defaults of every event's job (an event may override
// each). The attributes (TYPE_ATTRIBUTE, VERSION_ATTRIBUTE,
// KEY_ATTRIBUTES) are by default the table's environment's; New refuses a
// value that differs from one the environment declares.
type Config struct {
	Job JobConfig // EXPORT_LOCATION, OUTPUT_LOCATION, TYPE_ATTRIBUTE, VERSION_ATTRIBUTE, KEY_ATTRIBUTES, TRANSFORM, COMPRESSION, COMPRESSION_LEVEL, MAX_PART_MB
	// KMSKeyID encrypts output with SSE-KMS (KMS_KEY_ID); default SSE-S3.
	KMSKeyID string
	// TempDir spools output parts before upload (TMPDIR; Lambda: /tmp,
	// sized by the function's ephemeral storage).
	TempDir string
}

// LoadConfig reads the repartitioner's configuration with lookup
// (os.LookupEnv in a main) and reports every problem at once. New checks it
// against the table's environment.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	getenv := entry.Getenv(lookup)
	given := entry.GivenSchema(getenv)
	given.TTLAttribute = ""
	c := Config{
		Job: JobConfig{
			Export:      getenv("EXPORT_LOCATION"),
			Out:         getenv("OUTPUT_LOCATION"),
			Transform:   getenv("TRANSFORM"),
			Compression: getenv("COMPRESSION"),
		},
		KMSKeyID: getenv("KMS_KEY_ID"),
		TempDir:  getenv("TMPDIR"),
	}
	var errs []error
	c.Job.Schema = given
	if c.Job.Compression != "" {
		if _, err := repartition.ParseCompression(c.Job.Compression); err != nil {
			errs = append(errs, fmt.Errorf("COMPRESSION: %w", err))
		}
	}
	if v := getenv("COMPRESSION_LEVEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("COMPRESSION_LEVEL %q: want a whole number", v))
		}
		c.Job.Level = n
	}
	if v := getenv("MAX_PART_MB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("MAX_PART_MB %q: want a whole number of MB, at least 1", v))
		}
		c.Job.MaxPartBytes = n << 20
	}
	for name, v := range map[string]string{"EXPORT_LOCATION": c.Job.Export, "OUTPUT_LOCATION": c.Job.Out} {
		if v == "" {
			continue
		}
		if _, err := objstore.Parse(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// Main runs the export repartitioner for a Step Functions Distributed Map,
// one data file per invocation (Event), with env's transforms for
// TRANSFORM (and an event's transform) to name. It does not return.
func Main(env *projections.Environment) {
	entry.Main("repartitioner", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		client, err := entry.S3(in)
		if err != nil {
			return nil, err
		}
		h, err := New(cfg, env, client, in.Log)
		if err != nil {
			return nil, err
		}
		return lambda.NewHandler(h.Handle), nil
	})
}

// Event is one invocation of the repartitioner. Action is "plan", "file", "finish" or
// "release"; the job's fields default to the function's configuration. A
// "file" event names its data file as manifest-files.json does, so a
// Distributed Map may read manifest-files.json (JSONL) directly as its
// items, or map over the plan's files. Every event carries the execution's
// ID (executionId: the state machine passes $$.Execution.Id), which its
// steps share as the owner of the output's claim: a second execution into
// the same output is refused while the first holds it, and "release" (the
// state machine's Catch) gives it up when an execution fails.
type Event struct {
	Action string `json:"action"`
	JobConfig
	DataFileS3Key string `json:"dataFileS3Key,omitempty"`
	// Force (plan) redoes a complete output.
	Force bool `json:"force,omitempty"`
}

// Response is what each action returns to the state machine.
type Response struct {
	Action      string `json:"action"`
	Fingerprint string `json:"fingerprint"`
	// plan: the data files to map over (empty when Complete).
	Files    []PlanFile `json:"files,omitempty"`
	Complete bool       `json:"complete,omitempty"`
	// file: what was written (Resumed: it had been done already).
	Source  string `json:"source,omitempty"`
	Items   int64  `json:"items,omitempty"`
	Parts   int    `json:"parts,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	// finish: the output's totals.
	Entities    int   `json:"entities,omitempty"`
	OutputItems int64 `json:"outputItems,omitempty"`
}

// JobConfig is a repartition's settings: the variables' (Config.Job), and
// those an event gives over them, under the event's JSON names.
type JobConfig struct {
	Export       string   `json:"export"`
	Incrementals []string `json:"incrementals,omitempty"`
	Out          string   `json:"out"`

	// Schema names the items' attributes: the entity type's, the version's
	// and the table's keys (typeAttribute, versionAttribute, keyAttributes).
	pipeline.Schema
	Transform string `json:"transform,omitempty"`
	// Compression of the output parts: gzip, zstd or none (default gzip).
	Compression          string `json:"compression,omitempty"`
	Level                int    `json:"level,omitempty"`
	MaxPartBytes         int64  `json:"maxPartBytes,omitempty"`
	SkipMD5              bool   `json:"skipMd5,omitempty"`
	AllowMissingManifest bool   `json:"allowMissingManifest,omitempty"`

	// ExecutionID names the run the step belongs to (the Step Functions
	// execution's ARN): the steps of one execution share the output's
	// claim, and a second execution is refused while it holds it.
	ExecutionID string `json:"executionId,omitempty"`
	// Takeover takes the output's claim from whatever run holds it (the
	// caller asserts that it is gone).
	Takeover bool `json:"takeover,omitempty"`
}

// job is the repartition's own form of j: the same fields, so that a
// field added to one and not the other fails to compile here.
func (j JobConfig) job() repartition.JobConfig { return repartition.JobConfig(j) }

// PlanFile is a data file of the plan, one item of the state machine's map.
type PlanFile struct {
	DataFileS3Key string `json:"dataFileS3Key"`
	ItemCount     int64  `json:"itemCount"`
}

// Handler is the repartitioner's handler.
type Handler struct {
	cfg Config
	s3  objstore.S3API
	env *projections.Environment
	log *slog.Logger
}

// New returns the repartitioner's handler over S3 (client), with env's
// transforms for the jobs' transform names. It reports every way cfg
// disagrees with env at once: an attribute that differs from one env
// declares (the defaults fill in the rest), a TRANSFORM env does not have.
func New(cfg Config, env *projections.Environment, client objstore.S3API, log *slog.Logger) (*Handler, error) {
	var errs []error
	schema, err := entry.Schema(env, cfg.Job.Schema)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Job.Schema = schema
	if cfg.Job.Transform != "" {
		if _, err := env.Transform(cfg.Job.Transform); err != nil {
			errs = append(errs, fmt.Errorf("TRANSFORM: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return &Handler{cfg: cfg, s3: client, env: env, log: log}, nil
}

func (h *Handler) store(l objstore.Location) (objstore.Store, error) {
	return l.Open(h.s3, objstore.S3Options{KMSKeyID: h.cfg.KMSKeyID, TempDir: h.cfg.TempDir}), nil
}

// job merges the event's job over the configured one. The attributes an
// event names must agree with those the environment declares.
func (h *Handler) job(ev Event) (repartition.JobConfig, error) {
	j := h.cfg.Job
	e := ev.JobConfig
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&j.Export, e.Export)
	set(&j.Out, e.Out)
	if _, err := h.env.Schema.Configure(e.Schema, map[string]string{
		"type": "the event's typeAttribute", "version": "the event's versionAttribute", "keys": "the event's keyAttributes", "ttl": "the event's ttlAttribute",
	}); err != nil {
		return j.job(), err
	}
	j.Schema = j.Schema.Override(e.Schema)
	set(&j.Transform, e.Transform)
	if e.Compression != "" {
		j.Compression = e.Compression
	}
	if e.Level != 0 {
		j.Level = e.Level
	}
	if e.MaxPartBytes != 0 {
		j.MaxPartBytes = e.MaxPartBytes
	}
	if len(e.Incrementals) > 0 {
		j.Incrementals = e.Incrementals
	}
	j.SkipMD5 = j.SkipMD5 || e.SkipMD5
	j.AllowMissingManifest = j.AllowMissingManifest || e.AllowMissingManifest
	j.ExecutionID, j.Takeover = e.ExecutionID, e.Takeover
	return j.job(), nil
}

// Handle runs one step. An error fails the invocation (the state machine's
// retry policy retries it; every step is idempotent).
func (h *Handler) Handle(ctx context.Context, ev Event) (Response, error) {
	start := time.Now()
	jc, err := h.job(ev)
	if err != nil {
		return Response{}, err
	}
	if jc.ExecutionID == "" {
		return Response{}, errors.New("repartitioner: the event has no executionId: the steps of one run share the output's claim by it (the state machine passes $$.Execution.Id)")
	}
	job, err := repartition.OpenJob(ctx, jc, h.store, h.env)
	if err != nil {
		return Response{}, err
	}
	resp := Response{Action: ev.Action, Fingerprint: job.Partitioner.Fingerprint()}
	switch ev.Action {
	case "plan":
		files, complete, err := job.Plan(ctx, ev.Force)
		if err != nil {
			return resp, err
		}
		for _, f := range files {
			resp.Files = append(resp.Files, PlanFile(f))
		}
		resp.Complete = complete
		h.log.Info("plan", "export", job.Export.String(), "out", jc.Out, "files", len(files), "complete", complete)
	case "file":
		if ev.DataFileS3Key == "" {
			return resp, errors.New("repartitioner: a file event needs dataFileS3Key")
		}
		rec, resumed, err := job.File(ctx, ev.DataFileS3Key)
		if err != nil {
			return resp, err
		}
		resp.Source, resp.Items, resp.Parts, resp.Resumed = rec.Source, rec.ItemsOut, len(rec.Parts), resumed
		h.log.Info("file", "source", rec.Source, "items", rec.ItemsOut, "parts", len(rec.Parts), "resumed", resumed,
			"mb", rec.UncompressedBytes/1e6, "seconds", time.Since(start).Seconds())
	case "finish":
		s, err := job.Finish(ctx)
		if err != nil {
			return resp, err
		}
		resp.Entities, resp.OutputItems = len(s.Entities), s.Totals.OutputItems
		h.log.Info("finish", "entities", len(s.Entities), "items", s.Totals.OutputItems, "orphansRemoved", s.Totals.OrphansRemoved)
	case "release":
		if err := job.Release(ctx); err != nil {
			return resp, err
		}
		h.log.Info("release", "out", jc.Out, "execution", jc.ExecutionID)
	default:
		return resp, fmt.Errorf("repartitioner: unknown action %q: want plan, file, finish or release", ev.Action)
	}
	return resp, nil
}

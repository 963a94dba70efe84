package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline/export/repartition"
)

// Event is one invocation. Action is "plan", "file", "finish" or
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
	repartition.JobConfig
	DataFileS3Key string `json:"dataFileS3Key,omitempty"`
	// Force (plan) redoes a complete output.
	Force bool `json:"force,omitempty"`
}

// Response is what each action returns to the state machine.
type Response struct {
	Action      string `json:"action"`
	Fingerprint string `json:"fingerprint"`
	// plan: the data files to map over (empty when Complete).
	Files    []repartition.PlanFile `json:"files,omitempty"`
	Complete bool                   `json:"complete,omitempty"`
	// file: what was written (Resumed: it had been done already).
	Source  string `json:"source,omitempty"`
	Items   int64  `json:"items,omitempty"`
	Parts   int    `json:"parts,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	// finish: the output's totals.
	Entities    int   `json:"entities,omitempty"`
	OutputItems int64 `json:"outputItems,omitempty"`
}

type handler struct {
	cfg Config
	s3  objstore.S3API
	log *slog.Logger
}

func newHandler(cfg Config, client objstore.S3API, log *slog.Logger) *handler {
	return &handler{cfg: cfg, s3: client, log: log}
}

func (h *handler) store(l objstore.Location) (objstore.Store, error) {
	if !l.IsS3() {
		return objstore.NewDir(l.Dir), nil
	}
	return objstore.NewS3(h.s3, l.Bucket, l.Prefix, objstore.S3Options{KMSKeyID: h.cfg.KMSKeyID, TempDir: h.cfg.TempDir}), nil
}

// job merges the event's job over the configured one.
func (h *handler) job(ev Event) repartition.JobConfig {
	j := h.cfg.Job
	e := ev.JobConfig
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&j.Export, e.Export)
	set(&j.Out, e.Out)
	set(&j.TypeAttribute, e.TypeAttribute)
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
	return j
}

// Handle runs one step. An error fails the invocation (the state machine's
// retry policy retries it; every step is idempotent).
func (h *handler) Handle(ctx context.Context, ev Event) (Response, error) {
	start := time.Now()
	jc := h.job(ev)
	if jc.ExecutionID == "" {
		return Response{}, errors.New("repartitioner: the event has no executionId: the steps of one run share the output's claim by it (the state machine passes $$.Execution.Id)")
	}
	job, err := repartition.OpenJob(ctx, jc, h.store, repartition.DefaultTransforms())
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
		resp.Files, resp.Complete = files, complete
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

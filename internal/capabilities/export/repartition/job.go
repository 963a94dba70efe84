package repartition

import (
	"context"
	"fmt"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// JobConfig names a repartition: its inputs, output and settings. The same
// config must reach every step of a run (plan, each file, finish): the
// run's fingerprint is derived from it.
type JobConfig struct {
	Export       string   `json:"export"`
	Incrementals []string `json:"incrementals,omitempty"`
	Out          string   `json:"out"`

	// Schema names the items' attributes: the entity type's, the version's
	// and the table's keys (typeAttribute, versionAttribute, keyAttributes).
	pipeline.Schema
	Transform string `json:"transform,omitempty"`
	// Compression is a Compression's name (gzip, zstd, none; empty: gzip).
	Compression          string `json:"compression,omitempty"`
	Level                int    `json:"level,omitempty"`
	MaxPartBytes         int64  `json:"maxPartBytes,omitempty"`
	SkipMD5              bool   `json:"skipMd5,omitempty"`
	AllowMissingManifest bool   `json:"allowMissingManifest,omitempty"`

	// ExecutionID names the run the step belongs to (the Step Functions
	// execution's ARN): the steps of one execution share the output's
	// claim, and a second execution is refused while it holds it. Empty:
	// the run of this process.
	ExecutionID string `json:"executionId,omitempty"`
	// Takeover takes the output's claim from whatever run holds it (the
	// caller asserts that it is gone).
	Takeover bool `json:"takeover,omitempty"`
}

// Job is an opened repartition, for running it a step at a time (the
// Lambda function under a Step Functions Distributed Map: Plan once, File
// once per data file, in parallel, then Finish once).
type Job struct {
	Export      *export.Export
	Overlay     *export.Overlay
	Out         objstore.Store
	Partitioner *Repartitioner
}

// transformFinder finds a transform by name: a *projections.Environment.
type transformFinder interface {
	Transform(name string) (*projections.Transform, error)
}

// OpenJob opens a job's export, overlay and output. newStore opens a
// location; transforms resolves cfg.Transform.
func OpenJob(ctx context.Context, cfg JobConfig, newStore func(objstore.Location) (objstore.Store, error), transforms transformFinder) (*Job, error) {
	if cfg.Export == "" || cfg.Out == "" {
		return nil, fmt.Errorf("repartition: a job needs an export and an output location")
	}
	loc, err := objstore.Parse(cfg.Export)
	if err != nil {
		return nil, err
	}
	source := func(l objstore.Location) (export.Source, error) { return newStore(l) }
	src, err := export.OpenExportAt(ctx, loc, source, export.OpenOptions{AllowMissingManifest: cfg.AllowMissingManifest})
	if err != nil {
		return nil, err
	}
	var incs []*export.Export
	for _, s := range cfg.Incrementals {
		l, err := objstore.Parse(s)
		if err != nil {
			return nil, err
		}
		inc, err := export.OpenExportAt(ctx, l, source, export.OpenOptions{})
		if err != nil {
			return nil, err
		}
		incs = append(incs, inc)
	}
	ov, err := export.LoadOverlay(ctx, src, incs, pipeline.Options{Schema: cfg.Schema}, cfg.SkipMD5)
	if err != nil {
		return nil, err
	}
	outLoc, err := objstore.Parse(cfg.Out)
	if err != nil {
		return nil, err
	}
	out, err := newStore(outLoc)
	if err != nil {
		return nil, err
	}
	opts := Options{Decode: pipeline.Options{Schema: cfg.Schema}, Compression: Compression(cfg.Compression), Level: cfg.Level, MaxPartBytes: cfg.MaxPartBytes, SkipMD5: cfg.SkipMD5, Takeover: cfg.Takeover,
		TakeoverAdvice: `invoke the function with {"action":"release","executionId":"<that run's ID>"}, or start the next execution with "takeover": true in its input`}
	if cfg.ExecutionID != "" {
		opts.Owner = objstore.Owner{ID: cfg.ExecutionID, Started: time.Now().UTC(), What: "repartition of " + cfg.Export}
	}
	if cfg.Transform != "" {
		if opts.Transform, err = transforms.Transform(cfg.Transform); err != nil {
			return nil, fmt.Errorf("repartition: %w", err)
		}
	}
	r, err := NewRepartitioner(src, ov, out, opts)
	if err != nil {
		return nil, err
	}
	return &Job{Export: src, Overlay: ov, Out: out, Partitioner: r}, nil
}

// PlanFile is one data file of a plan, as manifest-files.json spells it.
type PlanFile struct {
	DataFileS3Key string `json:"dataFileS3Key"`
	ItemCount     int64  `json:"itemCount"`
}

// Plan begins the run and lists the data files still to do. complete is
// true when the output already holds this run, finished.
func (j *Job) Plan(ctx context.Context, force bool) (files []PlanFile, complete bool, err error) {
	done, err := j.Partitioner.begin(ctx, force)
	if err != nil || done != nil {
		return nil, done != nil, err
	}
	for _, key := range j.Partitioner.dataFiles() {
		id, _ := j.Partitioner.sourceID(key)
		rec, err := j.Partitioner.record(ctx, id)
		if err != nil {
			return nil, false, err
		}
		if rec != nil {
			continue
		}
		f := j.Partitioner.files[key]
		files = append(files, PlanFile{DataFileS3Key: f.DataFileS3Key, ItemCount: f.ItemCount})
	}
	return files, false, nil
}

// File repartitions one data file, named as manifest-files.json names it
// (a bucket key) or by its key in the export's store.
func (j *Job) File(ctx context.Context, dataFileS3Key string) (*SourceRecord, bool, error) {
	key := j.Export.StoreKey(dataFileS3Key)
	return j.Partitioner.processFile(ctx, key)
}

// Finish writes the entity manifests and the summary, and releases the
// output.
func (j *Job) Finish(ctx context.Context) (*RunSummary, error) {
	return j.Partitioner.finish(ctx)
}

// Release gives the output up if the job's run holds it: a failed
// execution's last step, so that the next one need not take it over.
func (j *Job) Release(ctx context.Context) error { return j.Partitioner.release(ctx) }

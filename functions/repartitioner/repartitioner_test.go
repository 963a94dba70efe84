package repartitioner_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/functions/repartitioner"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
)

// TestStateMachine runs the steps a Distributed Map runs, against S3
// (gofakes3, in process): plan, one file step per data file (the first one
// twice, as a retried invocation would), finish; then checks the output
// against a local repartition of the same export.
func TestStateMachine(t *testing.T) {
	ctx := context.Background()
	client := awstest.GoFakeS3(t)
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("tributary-exports")}); err != nil {
		t.Fatal(err)
	}
	up := objstore.NewS3(client, "tributary-exports", "exports/app", objstore.S3Options{})
	if err := exportgen.CopyDir(ctx, up, exportgen.FixtureDir()); err != nil {
		t.Fatal(err)
	}

	var ev repartitioner.Event
	b, _ := os.ReadFile(filepath.Join("testdata", "event.json"))
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	cfg, err := repartitioner.LoadConfig(vars(map[string]string{"EXPORT_LOCATION": ev.Export, "OUTPUT_LOCATION": ev.Out, "TRANSFORM": "comments-table", "TMPDIR": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := repartitioner.New(cfg, seed.Environment(), client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	run := repartitioner.JobConfig{ExecutionID: ev.ExecutionID}

	plan, err := h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: run})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Files) != 5 || plan.Complete {
		t.Fatalf("plan: %+v", plan)
	}
	// The event file's step (from testdata/event.json), twice.
	for i := range 2 {
		r, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if r.Resumed != (i == 1) || r.Fingerprint != plan.Fingerprint {
			t.Errorf("file step %d: %+v", i, r)
		}
	}
	for _, f := range plan.Files {
		if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: run, DataFileS3Key: f.DataFileS3Key}); err != nil {
			t.Fatal(err)
		}
	}
	fin, err := h.Handle(ctx, repartitioner.Event{Action: "finish", JobConfig: run})
	if err != nil {
		t.Fatal(err)
	}
	if fin.OutputItems != 913 {
		t.Errorf("finish: %+v", fin)
	}
	again, err := h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: run})
	if err != nil || !again.Complete || len(again.Files) != 0 {
		t.Errorf("plan after finish: %+v, %v", again, err)
	}

	// The same job run locally gives the same entity manifests.
	so, err := reimport.OpenOutput(ctx, objstore.NewS3(client, "tributary-exports", "split/app", objstore.S3Options{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Job.Export = filepath.Join(exportgen.FixtureDir(), "AWSDynamoDB", "01796032802314-fa5ad9a8")
	if err := exportgen.SameAsLocal(ctx, cfg.Job.Own(), t.TempDir(), so); err != nil {
		t.Error(err)
	}

	if _, err := h.Handle(ctx, repartitioner.Event{Action: "nope", JobConfig: run}); err == nil || !strings.Contains(err.Error(), "unknown action") {
		t.Errorf("unknown action: %v", err)
	}
}

// vars looks variables up in m, as os.LookupEnv does in a main.
func vars(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadRepartitionerConfig(t *testing.T) {
	_, err := repartitioner.LoadConfig(vars(map[string]string{"COMPRESSION": "lz4", "MAX_PART_MB": "0", "OUTPUT_LOCATION": "s3://"}))
	for _, want := range []string{"COMPRESSION", "MAX_PART_MB", "OUTPUT_LOCATION"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config error %v does not mention %s", err, want)
		}
	}
	c, err := repartitioner.LoadConfig(vars(map[string]string{"COMPRESSION": "zstd", "MAX_PART_MB": "64", "COMPRESSION_LEVEL": "3",
		"TYPE_ATTRIBUTE": "kind", "VERSION_ATTRIBUTE": "rev", "KEY_ATTRIBUTES": "Id"}))
	if err != nil || c.Job.Compression != string(repartition.Zstd) || c.Job.MaxPartBytes != 64<<20 || c.Job.Level != 3 ||
		c.Job.TypeAttribute != "kind" || c.Job.VersionAttribute != "rev" || strings.Join(c.Job.KeyAttributes, ",") != "Id" {
		t.Errorf("config %+v, %v", c, err)
	}
	// New checks the configuration against the environment, every
	// problem at once: a transform it does not have, an attribute that
	// differs from one it declares.
	env := seed.Environment()
	env.Schema.TypeAttribute = "EntityType"
	c.Job.Transform = "nope"
	_, err = repartitioner.New(c, env, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, want := range []string{"TRANSFORM", "TYPE_ATTRIBUTE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New's error %v does not mention %s", err, want)
		}
	}
	c.Job.Transform = "comments-table"
	c.Job.TypeAttribute = ""
	if _, err := repartitioner.New(c, env, nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Errorf("New with the environment's attributes and transform: %v", err)
	}
}

// TestSecondExecutionRefused: while one execution holds the output, a
// second one's steps are refused, naming the first; the first's steps
// share the claim; once the first is released (its Catch's "release"
// step), the second runs to the end. An event without an execution is
// refused outright.
func TestSecondExecutionRefused(t *testing.T) {
	ctx := context.Background()
	client := awstest.GoFakeS3(t)
	bucket := awstest.CreateBucket(ctx, t, client, "exports")
	if err := exportgen.CopyDir(ctx, objstore.NewS3(client, bucket, "exports/app", objstore.S3Options{}), exportgen.FixtureDir()); err != nil {
		t.Fatal(err)
	}
	cfg, err := repartitioner.LoadConfig(vars(map[string]string{"EXPORT_LOCATION": "s3://" + bucket + "/exports/app/AWSDynamoDB/01796032802314-fa5ad9a8", "OUTPUT_LOCATION": "s3://" + bucket + "/split/app", "TMPDIR": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := repartitioner.New(cfg, seed.Environment(), client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	first := repartitioner.JobConfig{ExecutionID: "arn:aws:states:eu-west-1:111122223333:execution:tributary-repartition:first"}
	second := repartitioner.JobConfig{ExecutionID: "arn:aws:states:eu-west-1:111122223333:execution:tributary-repartition:second"}

	plan, err := h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: first})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: first, DataFileS3Key: plan.Files[0].DataFileS3Key}); err != nil {
		t.Fatalf("a step of the execution holding the output: %v", err)
	}
	for _, ev := range []repartitioner.Event{
		{Action: "plan", JobConfig: second},
		{Action: "file", JobConfig: second, DataFileS3Key: plan.Files[1].DataFileS3Key},
		{Action: "finish", JobConfig: second},
	} {
		_, err := h.Handle(ctx, ev)
		if !errors.Is(err, objstore.ErrHeld) || !strings.Contains(err.Error(), first.ExecutionID) {
			t.Errorf("%s of the second execution: %v, want it refused naming the first", ev.Action, err)
		}
	}
	// The second's release leaves the first's claim alone.
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "release", JobConfig: second}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: first, DataFileS3Key: plan.Files[1].DataFileS3Key}); err != nil {
		t.Fatalf("the first execution after the second's release: %v", err)
	}
	// The first fails, and its Catch releases the output.
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "release", JobConfig: first}); err != nil {
		t.Fatal(err)
	}
	plan2, err := h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: second})
	if err != nil {
		t.Fatalf("the second execution after the first's release: %v", err)
	}
	if len(plan2.Files) != len(plan.Files)-2 {
		t.Errorf("the second plan lists %d files, want the %d the first left", len(plan2.Files), len(plan.Files)-2)
	}
	for _, f := range plan2.Files {
		if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: second, DataFileS3Key: f.DataFileS3Key}); err != nil {
			t.Fatal(err)
		}
	}
	if fin, err := h.Handle(ctx, repartitioner.Event{Action: "finish", JobConfig: second}); err != nil || fin.OutputItems != 913 {
		t.Fatalf("finish: %+v, %v", fin, err)
	}
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "plan"}); err == nil || !strings.Contains(err.Error(), "executionId") {
		t.Errorf("an event without an execution: %v", err)
	}
}

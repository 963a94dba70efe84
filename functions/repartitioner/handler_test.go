package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline/export/exportgen"
	"github.com/tributary/tributary/pipeline/export/reimport"
	"github.com/tributary/tributary/pipeline/export/repartition"
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

	var ev Event
	b, _ := os.ReadFile("testdata/event.json")
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(func(k string) string {
		return map[string]string{"EXPORT_LOCATION": ev.Export, "OUTPUT_LOCATION": ev.Out, "TRANSFORM": "comments-table", "TMPDIR": t.TempDir()}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(cfg, client, slog.New(slog.NewTextHandler(io.Discard, nil)))

	plan, err := h.Handle(ctx, Event{Action: "plan"})
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
		if _, err := h.Handle(ctx, Event{Action: "file", DataFileS3Key: f.DataFileS3Key}); err != nil {
			t.Fatal(err)
		}
	}
	fin, err := h.Handle(ctx, Event{Action: "finish"})
	if err != nil {
		t.Fatal(err)
	}
	if fin.OutputItems != 913 {
		t.Errorf("finish: %+v", fin)
	}
	again, err := h.Handle(ctx, Event{Action: "plan"})
	if err != nil || !again.Complete || len(again.Files) != 0 {
		t.Errorf("plan after finish: %+v, %v", again, err)
	}

	// The same job run locally gives the same entity manifests.
	so, err := reimport.OpenOutput(ctx, objstore.NewS3(client, "tributary-exports", "split/app", objstore.S3Options{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Job.Export = filepath.Join(exportgen.FixtureDir(), "AWSDynamoDB", "01796032802314-fa5ad9a8")
	if err := exportgen.SameAsLocal(ctx, cfg.Job, t.TempDir(), so); err != nil {
		t.Error(err)
	}

	if _, err := h.Handle(ctx, Event{Action: "nope"}); err == nil || !strings.Contains(err.Error(), "unknown action") {
		t.Errorf("unknown action: %v", err)
	}
}

func TestConfig(t *testing.T) {
	_, err := loadConfig(func(k string) string {
		return map[string]string{"COMPRESSION": "lz4", "MAX_PART_MB": "0", "TRANSFORM": "nope", "OUTPUT_LOCATION": "s3://"}[k]
	})
	for _, want := range []string{"COMPRESSION", "MAX_PART_MB", "TRANSFORM", "OUTPUT_LOCATION"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config error %v does not mention %s", err, want)
		}
	}
	c, err := loadConfig(func(k string) string {
		return map[string]string{"COMPRESSION": "zstd", "MAX_PART_MB": "64", "COMPRESSION_LEVEL": "3"}[k]
	})
	if err != nil || c.Job.Compression != repartition.Zstd || c.Job.MaxPartBytes != 64<<20 || c.Job.Level != 3 {
		t.Errorf("config %+v, %v", c, err)
	}
}

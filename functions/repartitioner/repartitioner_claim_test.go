package repartitioner_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/tributary/tributary/functions/repartitioner"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
)

// TestStoppedExecutionRecovered: an execution that skipped its release step
// (stopped by hand, which runs no Catch) leaves the output's claim. The next
// execution is refused with advice it can follow on the Step Functions path
// (the job's "takeover" field, or a release step naming the stopped
// execution), not the command's --takeover flag; each of the two ways then
// recovers the output, and the run resumes where the stopped one left it.
func TestStoppedExecutionRecovered(t *testing.T) {
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
	exec := func(name string) repartitioner.JobConfig {
		return repartitioner.JobConfig{ExecutionID: "arn:aws:states:eu-west-1:111122223333:execution:tributary-repartition:" + name}
	}
	stopped, next, after := exec("stopped"), exec("next"), exec("after")

	// The first execution plans and does one file, then is stopped: no release.
	plan, err := h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: stopped})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: stopped, DataFileS3Key: plan.Files[0].DataFileS3Key}); err != nil {
		t.Fatal(err)
	}

	_, err = h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: next})
	switch {
	case !errors.Is(err, objstore.ErrHeld) || !strings.Contains(err.Error(), stopped.ExecutionID):
		t.Fatalf("the next execution's plan: %v, want it refused naming the stopped one", err)
	case strings.Contains(err.Error(), "--takeover"):
		t.Errorf("the refusal advises --takeover, a flag a state machine's job has no such thing as: %v", err)
	case !strings.Contains(err.Error(), `"takeover": true`) || !strings.Contains(err.Error(), `"action":"release"`):
		t.Errorf("the refusal does not name the job's \"takeover\" field and the release step: %v", err)
	}

	// One way: a release step in the stopped execution's name.
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "release", JobConfig: stopped}); err != nil {
		t.Fatal(err)
	}
	plan2, err := h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: next})
	if err != nil {
		t.Fatalf("the next execution after the stopped one's release: %v", err)
	}
	if len(plan2.Files) != len(plan.Files)-1 {
		t.Errorf("the next plan lists %d files, want the %d the stopped one left", len(plan2.Files), len(plan.Files)-1)
	}
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: next, DataFileS3Key: plan2.Files[0].DataFileS3Key}); err != nil {
		t.Fatal(err)
	}

	// The other: "next" is stopped too, and the one after takes it over.
	takeover := after
	takeover.Takeover = true
	plan3, err := h.Handle(ctx, repartitioner.Event{Action: "plan", JobConfig: takeover})
	if err != nil {
		t.Fatalf("an execution with \"takeover\": true: %v", err)
	}
	if len(plan3.Files) != len(plan.Files)-2 {
		t.Errorf("the plan after the takeover lists %d files, want %d", len(plan3.Files), len(plan.Files)-2)
	}
	// A late step of the stopped execution is refused: the claim is taken.
	if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: next, DataFileS3Key: plan3.Files[0].DataFileS3Key}); !errors.Is(err, objstore.ErrHeld) {
		t.Errorf("a step of the execution whose claim was taken over: %v, want it refused", err)
	}
	for _, f := range plan3.Files {
		if _, err := h.Handle(ctx, repartitioner.Event{Action: "file", JobConfig: takeover, DataFileS3Key: f.DataFileS3Key}); err != nil {
			t.Fatal(err)
		}
	}
	if fin, err := h.Handle(ctx, repartitioner.Event{Action: "finish", JobConfig: takeover}); err != nil || fin.OutputItems != 913 {
		t.Fatalf("finish: %+v, %v", fin, err)
	}
}

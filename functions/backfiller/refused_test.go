package backfiller_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
)

// lambdaErrorType is the errorType the Lambda runtime (aws-lambda-go)
// reports for an error a handler returns, which a Step Functions
// retrier's ErrorEquals matches: the name of the error's type (of the
// type pointed to, for a pointer).
func lambdaErrorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// TestRefusedNotRetried: a step that no rerun can finish — here a plan
// over a table that a shadow began to fill from the stream after the
// export's time — fails with the error type Refused, which the Backfill
// state machine does not retry, and says what to do; it used to fail with
// the refusal's own type, which the state machine retried as any task
// failure. A step that a retry can finish (a finish before the files are
// done) is not a refusal.
func TestRefusedNotRetried(t *testing.T) {
	ctx := context.Background()
	client, full, _ := fixtureInS3(t)
	st := boltstoretest.Open(t)
	h, err := backfiller.New(backfiller.Config{Table: "t", Export: full}, seed.Environment(), client, st, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, backfiller.Event{Action: "finish"}); lambdaErrorType(err) != "FilesPending" {
		t.Errorf("a finish before the files: %v (type %s), want FilesPending", err, lambdaErrorType(err))
	}

	st = boltstoretest.Open(t)
	eng, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.NewExportDecoder(pipeline.Options{}).DecodeItem([]byte(`{"Item":{"EntityType":{"S":"Order"},"PK":{"S":"USER#u1"},"SK":{"S":"ORDER#2026-12-01#o1"},"currency":{"S":"EUR"},"itemCount":{"N":"1"},"orderDate":{"S":"2026-12-01"},"orderId":{"S":"o1"},"status":{"S":"PENDING"},"total":{"N":"5"},"userId":{"S":"u1"},"version":{"N":"1"}}}`), "stream", 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Position = pipeline.Position{Source: pipeline.SourceStreams, Stream: "s", SequenceNumber: "1"}
	c.Time, c.Precision = time.Now(), pipeline.Second
	if err := eng.HandleBatch(ctx, []pipeline.Change{c}); err != nil {
		t.Fatal(err)
	}
	h, err = backfiller.New(backfiller.Config{Table: "t", Export: full}, seed.Environment(), client, st, quiet())
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Handle(ctx, backfiller.Event{Action: "plan"})
	if lambdaErrorType(err) != "Refused" || !errors.Is(err, backfill.ErrRefused) || !strings.Contains(err.Error(), "after the export's time") {
		t.Errorf("a plan over a store filled from after the export's time: %v (type %s), want a Refused error saying why", err, lambdaErrorType(err))
	}
}

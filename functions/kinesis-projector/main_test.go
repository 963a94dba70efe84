package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tributary/tributary/functions/function"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

// TestEvent runs testdata/event.json (also the `sam local invoke` event)
// through the function as main builds it — a lambda.Handler, which
// lambda.Start calls with the event's bytes: the records are applied and the
// response is an empty partial batch response; the same event delivered
// again changes nothing.
func TestEvent(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	p, err := function.NewKinesisProjector(ctx, function.ProjectorConfig{Table: "local"}, st, seed.Set(), slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var h lambda.Handler = p
	event, err := os.ReadFile(filepath.Join("testdata", "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(ctx, event)
	if err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	first, _ := projections.ReadView(ctx, st)
	if len(first.Aggregates) == 0 {
		t.Fatal("nothing applied")
	}
	if out, err := h.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("redelivery: %s %v", out, err)
	}
	again, _ := projections.ReadView(ctx, st)
	if d := projections.Diff(again, first); len(d) > 0 {
		t.Errorf("redelivery changed the aggregates: %v", d)
	}
}

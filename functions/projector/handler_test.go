package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/pipeline/replay"
	"github.com/tributary/tributary/projections"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestEvent runs testdata/event.json (also the `sam local invoke` event)
// through the function as main builds it — a lambda.Handler, which
// lambda.Start calls with the event's bytes: the records are applied and the
// response is an empty partial batch response; the same event delivered
// again changes nothing.
func TestEvent(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	p, err := newProcessor(ctx, Config{Table: "local"}, st, quiet(), io.Discard)
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

// TestRefusesSubsetTable: the function, which runs every projection, will
// not start on a table a filtered replay built for a subset of them.
func TestRefusesSubsetTable(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	if err := replay.CheckProjectionSet(ctx, st, st, []string{"season-standings"}); err != nil {
		t.Fatal(err)
	}
	_, err := newProcessor(ctx, Config{Table: "standings"}, st, quiet(), io.Discard)
	if !errors.Is(err, replay.ErrProjectionSet) || !strings.Contains(err.Error(), "table standings") {
		t.Errorf("a season-standings table: %v, want ErrProjectionSet naming the table", err)
	}
}

// TestRefusesViewTypes: the function's filter criteria match removals and
// type changes by their old image, and its projections need new images: a
// stream of any view type but NEW_AND_OLD_IMAGES fails the invocation, at
// its first record and before anything is applied.
func TestRefusesViewTypes(t *testing.T) {
	ctx := context.Background()
	for _, view := range []string{"keys-only", "new-image", "old-image", "new-and-old-images"} {
		t.Run(view, func(t *testing.T) {
			st := boltstoretest.Open(t)
			p, err := newProcessor(ctx, Config{Table: "local"}, st, quiet(), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			event, err := os.ReadFile(filepath.Join("..", "..", "pipeline", "testdata", "streams", "view-"+view+".json"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Invoke(ctx, event)
			v, _ := projections.ReadView(ctx, st)
			if view == "new-and-old-images" {
				if err != nil || string(out) != `{"batchItemFailures":[]}` || len(v.Aggregates) == 0 {
					t.Fatalf("%s %v, %d aggregates", out, err, len(v.Aggregates))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "NEW_AND_OLD_IMAGES is needed") || len(v.Aggregates) != 0 {
				t.Fatalf("%s %v, %d aggregates; want the invocation refused", out, err, len(v.Aggregates))
			}
		})
	}
}

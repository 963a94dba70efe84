package kinesisprojector_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// The function's `sam local invoke` event.
var kinesisEvent = filepath.Join("testdata", "event.json")

func newKinesis(ctx context.Context, cfg projector.Config, t driver.Table, metrics io.Writer) (*projector.Handler, error) {
	return kinesisprojector.New(ctx, cfg, seed.Environment(), t, quiet(), metrics)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestKinesisEvent runs the Kinesis projector's event through its handler
// — a lambda.Handler, which lambda.Start calls with the event's bytes: the
// records are applied; the same event delivered again, and with its
// records duplicated and reversed, changes nothing.
func TestKinesisEvent(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	var metrics bytes.Buffer
	p, err := newKinesis(ctx, projector.Config{Table: "local", Ignore: []string{"User"}}, st, &metrics)
	if err != nil {
		t.Fatal(err)
	}
	var h lambda.Handler = p
	event, err := os.ReadFile(kinesisEvent)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(ctx, event)
	if err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	first, _ := projections.ReadView(ctx, st)
	if len(first.Aggregates) == 0 || !strings.Contains(metrics.String(), `"Records"`) {
		t.Fatalf("nothing applied (%v), or no metrics", first.Aggregates)
	}

	// Redelivered, duplicated and reordered: Kinesis may do all of it.
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	var messy []json.RawMessage
	for i := len(ev.Records) - 1; i >= 0; i-- {
		messy = append(messy, ev.Records[i], ev.Records[i])
	}
	messyEvent, _ := json.Marshal(map[string]any{"Records": messy})
	for _, e := range [][]byte{event, messyEvent} {
		if out, err := h.Invoke(ctx, e); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s %v", out, err)
		}
	}
	again, _ := projections.ReadView(ctx, st)
	if d := projections.Diff(again, first); len(d) > 0 {
		t.Errorf("redelivery changed the aggregates: %v", d)
	}
}

// TestPoisonRecordIsReported: a record the projections reject is named in
// the partial batch response by its Kinesis sequence number.
func TestPoisonRecordIsReported(t *testing.T) {
	ctx := context.Background()
	p, err := newKinesis(ctx, projector.Config{Table: "local"}, boltstoretest.Open(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := `{"awsRegion":"eu-west-1","eventID":"53ff51b6-184c-42c1-a828-2a438d09425b","eventName":"INSERT","userIdentity":null,"recordFormat":"application/json","tableName":"app",` +
		`"dynamodb":{"ApproximateCreationDateTime":1796034600123,"Keys":{"PK":{"S":"USER#u1"},"SK":{"S":"ORDER#2026-11-30#o1"}},` +
		`"NewImage":{"PK":{"S":"USER#u1"},"SK":{"S":"ORDER#2026-11-30#o1"},"EntityType":{"S":"Order"},"status":{"S":"LOST"},"total":{"N":"1"},"orderDate":{"S":"2026-11-30"},"version":{"N":"1"}},"SizeBytes":100},"eventSource":"aws:dynamodb"}`
	event := `{"Records":[{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"A","sequenceNumber":"49656632116218945776331460766507834718496431279652880999",` +
		`"data":"` + base64.StdEncoding.EncodeToString([]byte(payload)) + `","approximateArrivalTimestamp":1796034600.5},"eventSource":"aws:kinesis","eventVersion":"1.0",` +
		`"eventID":"shardId-000000000000:49656632116218945776331460766507834718496431279652880999","eventName":"aws:kinesis:record","awsRegion":"eu-west-1",` +
		`"eventSourceARN":"arn:aws:kinesis:eu-west-1:111122223333:stream/app-changes"}]}`
	out, err := p.Invoke(ctx, []byte(event))
	if err != nil || string(out) != `{"batchItemFailures":[{"itemIdentifier":"49656632116218945776331460766507834718496431279652880999"}]}` {
		t.Errorf("%s %v", out, err)
	}
}

// TestProjectionsSubset: with PROJECTIONS, the function takes an empty
// table and marks it; it refuses a table built for other projections, and
// one the full projector fills.
func TestProjectionsSubset(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	if _, err := newKinesis(ctx, projector.Config{Table: "t", Projections: []string{"nope"}}, st, nil); err == nil || !strings.Contains(err.Error(), "PROJECTIONS: unknown projection nope") {
		t.Errorf("an unknown projection: %v", err)
	}
	p, err := newKinesis(ctx, projector.Config{Table: "t", Projections: []string{"season-standings"}}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	event, _ := os.ReadFile(kinesisEvent)
	if out, err := p.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	v, _ := projections.ReadView(ctx, st)
	if len(v.Aggregates) == 0 {
		t.Fatal("nothing applied")
	}
	for k := range v.Aggregates {
		if k.Projection != "season-standings" {
			t.Errorf("a season-standings table got %v", k)
		}
	}
	for _, names := range [][]string{nil, {"cart-contents"}} {
		if _, err := newKinesis(ctx, projector.Config{Table: "t", Projections: names}, st, nil); !errors.Is(err, engine.ErrProjectionSet) || !strings.Contains(err.Error(), "table t:") {
			t.Errorf("PROJECTIONS=%v on a season-standings table: %v, want ErrProjectionSet naming the table", names, err)
		}
	}
	full := boltstoretest.Open(t)
	fp, err := newKinesis(ctx, projector.Config{Table: "f"}, full, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := fp.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	if _, err := newKinesis(ctx, projector.Config{Table: "f", Projections: []string{"season-standings"}}, full, nil); !errors.Is(err, engine.ErrProjectionSet) {
		t.Errorf("a subset on a full table: %v", err)
	}
	// The Streams projector refuses it too.
	if _, err := projector.New(ctx, projector.Config{Table: "t"}, seed.Environment(), st, quiet(), nil); !errors.Is(err, engine.ErrProjectionSet) {
		t.Errorf("the Streams projector on a season-standings table: %v", err)
	}
}

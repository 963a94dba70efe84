package function_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tributary/tributary/functions/function"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
	"github.com/tributary/tributary/projections/spec"
)

// The functions' `sam local invoke` events.
var (
	streamsEvent = filepath.Join("..", "projector", "testdata", "event.json")
	kinesisEvent = filepath.Join("..", "kinesis-projector", "testdata", "event.json")
)

func newKinesis(ctx context.Context, cfg function.ProjectorConfig, t projections.Table, metrics io.Writer) (*pipeline.Processor, error) {
	return function.NewKinesisProjector(ctx, cfg, t, seed.Set(), quiet(), metrics)
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadProjectorConfig(t *testing.T) {
	c, err := function.LoadProjectorConfig(env(map[string]string{
		"AGGREGATE_TABLE": "aggs", "UNKNOWN_TYPE_POLICY": "fail", "PERMANENT_FAILURES": "skip",
		"IGNORE_TYPES": "User, Cart", "TOMBSTONE_TTL_DAYS": "30", "PROJECTIONS": " season-leaderboard ,order-totals", "TYPE_ATTRIBUTE": "kind",
		"VERSION_ATTRIBUTE": "rev",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Table != "aggs" || c.Unknown != pipeline.FailUnknown || c.Permanent != pipeline.SkipPermanent ||
		strings.Join(c.Ignore, "|") != "User|Cart" || c.TombstoneTTL != 30*24*time.Hour ||
		strings.Join(c.Projections, "|") != "season-leaderboard|order-totals" || c.Decode.TypeAttribute != "kind" ||
		c.Decode.VersionAttribute != "rev" {
		t.Errorf("config %+v", c)
	}
	_, err = function.LoadProjectorConfig(env(map[string]string{"PERMANENT_FAILURES": "drop", "TOMBSTONE_TTL_DAYS": "0", "UNKNOWN_TYPE_POLICY": "drop"}))
	for _, want := range []string{"AGGREGATE_TABLE is required", "PERMANENT_FAILURES", "TOMBSTONE_TTL_DAYS", "UNKNOWN_TYPE_POLICY"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %s", err, want)
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestStreamsEvent runs the Streams projector's event through its handler
// as the stock main builds it — a lambda.Handler, which lambda.Start calls
// with the event's bytes: the records are applied and the response is an
// empty partial batch response; the same event delivered again changes
// nothing.
func TestStreamsEvent(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	p, err := function.NewStreamsProjector(ctx, function.ProjectorConfig{Table: "local"}, st, seed.Set(), quiet(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var h lambda.Handler = p
	event, err := os.ReadFile(streamsEvent)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if out, err := h.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("delivery %d: %s %v", i+1, out, err)
		}
	}
	v, _ := projections.ReadView(ctx, st)
	paid := v.Aggregates[projections.AggregateKey{Projection: "order-totals", Key: "ORDERS#PAID#DAY#2026-11-30"}]
	if paid["orders"].String() != "1" || paid["revenue"].String() != "120.5" {
		t.Errorf("ORDERS#PAID#DAY#2026-11-30: %v, want orders=1 revenue=120.5 (as DynamoDB shows it) after two deliveries", paid)
	}
}

// TestKinesisEvent runs the Kinesis projector's event through its handler
// — a lambda.Handler, which lambda.Start calls with the event's bytes: the
// records are applied; the same event delivered again, and with its
// records duplicated and reversed, changes nothing.
func TestKinesisEvent(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	var metrics bytes.Buffer
	p, err := newKinesis(ctx, function.ProjectorConfig{Table: "local", Ignore: []string{"User"}}, st, &metrics)
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
	p, err := newKinesis(ctx, function.ProjectorConfig{Table: "local"}, boltstoretest.Open(t), nil)
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
	if _, err := newKinesis(ctx, function.ProjectorConfig{Table: "t", Projections: []string{"nope"}}, st, nil); err == nil || !strings.Contains(err.Error(), "PROJECTIONS: unknown projection nope") {
		t.Errorf("an unknown projection: %v", err)
	}
	p, err := newKinesis(ctx, function.ProjectorConfig{Table: "t", Projections: []string{"season-standings"}}, st, nil)
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
		if _, err := newKinesis(ctx, function.ProjectorConfig{Table: "t", Projections: names}, st, nil); !errors.Is(err, projections.ErrProjectionSet) || !strings.Contains(err.Error(), "table t:") {
			t.Errorf("PROJECTIONS=%v on a season-standings table: %v, want ErrProjectionSet naming the table", names, err)
		}
	}
	full := boltstoretest.Open(t)
	fp, err := newKinesis(ctx, function.ProjectorConfig{Table: "f"}, full, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := fp.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	if _, err := newKinesis(ctx, function.ProjectorConfig{Table: "f", Projections: []string{"season-standings"}}, full, nil); !errors.Is(err, projections.ErrProjectionSet) {
		t.Errorf("a subset on a full table: %v", err)
	}
	// The Streams projector refuses it too.
	if _, err := function.NewStreamsProjector(ctx, function.ProjectorConfig{Table: "t"}, st, seed.Set(), quiet(), nil); !errors.Is(err, projections.ErrProjectionSet) {
		t.Errorf("the Streams projector on a season-standings table: %v", err)
	}
}

// TestHandOver starts the stock Streams projector (in a child process: this
// test binary again) with TRIBUTARY_MAIN naming a script: the process
// becomes the script, before reading any configuration, and the script
// does not see TRIBUTARY_MAIN; a path that cannot be run fails the init,
// naming it.
func TestHandOver(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_HANDOVER") == "1" {
		function.Projector(seed.Set())
		return
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "projector")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"team main, AGGREGATE_TABLE=$AGGREGATE_TABLE TRIBUTARY_MAIN=${TRIBUTARY_MAIN:-unset}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	child := func(main string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHandOver$")
		cmd.Env = append(os.Environ(), "TRIBUTARY_TEST_HANDOVER=1", "TRIBUTARY_MAIN="+main, "AGGREGATE_TABLE=desk")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := child(script)
	if err != nil || strings.TrimSpace(out) != "team main, AGGREGATE_TABLE=desk TRIBUTARY_MAIN=unset" {
		t.Errorf("hand-over: %v\n%s", err, out)
	}
	out, err = child(filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(out, "init failed") || !strings.Contains(out, "TRIBUTARY_MAIN "+filepath.Join(dir, "missing")) {
		t.Errorf("a missing main: %v\n%s", err, out)
	}
}

// TestFilterTypes: a projector whose mapping's filter would drop a type its
// projections read refuses to start, naming the type; a filter that passes
// more is fine.
func TestFilterTypes(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		filter  []string
		missing string
	}{
		{"exact", seed.Set().EntityTypes(), ""},
		{"more", append(seed.Set().EntityTypes(), "User"), ""},
		{"fewer", []string{"CartItem", "Comment", "Document", "Match", "Player"}, "also read Order,"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := function.NewStreamsProjector(ctx, function.ProjectorConfig{Table: "t", FilterTypes: tt.filter}, boltstoretest.Open(t), seed.Set(), quiet(), nil)
			switch {
			case tt.missing == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.missing != "" && (err == nil || !strings.Contains(err.Error(), tt.missing)):
				t.Errorf("%v, want an error saying %q", err, tt.missing)
			}
		})
	}
}

// TestSpecFile: with PROJECTIONS_FILE the projector runs the spec's
// projections instead of its main's: the stock spec (the seed projections
// written as a spec) over the stock event gives the Go set's aggregates; a
// spec with a problem stops the init naming file, line and field, and a
// TYPE_ATTRIBUTE other than the spec's is refused.
func TestSpecFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stock := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(stock, seed.SpecYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	event, err := os.ReadFile(streamsEvent)
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]*projections.View{}
	for name, cfg := range map[string]function.ProjectorConfig{
		"go":   {Table: "t"},
		"spec": {Table: "t", SpecFile: stock, LoadSpec: spec.LoadSet},
	} {
		st := boltstoretest.Open(t)
		p, err := function.NewStreamsProjector(ctx, cfg, st, seed.Set(), quiet(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := p.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s: %s %v", name, out, err)
		}
		views[name] = mustView(t, st)
	}
	if len(views["go"].Aggregates) == 0 {
		t.Fatal("nothing applied")
	}
	if d := projections.Diff(views["spec"], views["go"]); len(d) > 0 {
		t.Errorf("the stock spec and the Go set differ: %v", d)
	}

	_, err = function.NewStreamsProjector(ctx, function.ProjectorConfig{Table: "t", SpecFile: stock}, boltstoretest.Open(t), seed.Set(), quiet(), nil)
	if err == nil || !strings.Contains(err.Error(), "loads no spec") {
		t.Errorf("a spec file for a main without a spec loader: %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nprojections:\n  - name: x\n    entityTypes: [T]\n    counters:\n      - key: \"K#{nope\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = function.NewStreamsProjector(ctx, function.ProjectorConfig{Table: "t", SpecFile: bad, LoadSpec: spec.LoadSet}, boltstoretest.Open(t), nil, quiet(), nil)
	if err == nil || !strings.Contains(err.Error(), "PROJECTIONS_FILE") || !strings.Contains(err.Error(), bad+":6: projection x: counters[0].key") {
		t.Errorf("a bad spec: %v", err)
	}
	_, err = function.NewStreamsProjector(ctx, function.ProjectorConfig{Table: "t", SpecFile: stock, LoadSpec: spec.LoadSet, Decode: pipeline.Options{TypeAttribute: "kind"}}, boltstoretest.Open(t), nil, quiet(), nil)
	if err == nil || !strings.Contains(err.Error(), `TYPE_ATTRIBUTE "kind"`) {
		t.Errorf("another type attribute: %v", err)
	}
}

func mustView(t *testing.T, r projections.Reader) *projections.View {
	t.Helper()
	v, err := projections.ReadView(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRefusesViewTypes: the Streams projector's filter criteria match
// removals and type changes by their old image, and its projections need
// new images: a stream of any view type but NEW_AND_OLD_IMAGES fails the
// invocation, at its first record and before anything is applied.
func TestRefusesViewTypes(t *testing.T) {
	ctx := context.Background()
	for _, view := range []string{"keys-only", "new-image", "old-image", "new-and-old-images"} {
		t.Run(view, func(t *testing.T) {
			st := boltstoretest.Open(t)
			p, err := function.NewStreamsProjector(ctx, function.ProjectorConfig{Table: "local"}, st, seed.Set(), quiet(), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			event, err := os.ReadFile(filepath.Join("..", "..", "pipeline", "testdata", "streams", "view-"+view+".json"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Invoke(ctx, event)
			v := mustView(t, st)
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

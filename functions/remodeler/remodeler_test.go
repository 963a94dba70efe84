package remodeler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/functions/remodeler"
	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
)

var update = flag.Bool("update", false, "rewrite testdata/event.json")

// The function's `sam local invoke` event (TestFixture writes it).
var event = filepath.Join("testdata", "event.json")

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func comment(id, body string) pipeline.Item {
	return pipeline.Item{"PK": s("WS#acme"), "SK": s("DOC#d1#CMT#" + id), "EntityType": s("Comment"), "docId": s("d1"), "commentId": s(id),
		"body": s(body), "ttl": &types.AttributeValueMemberN{Value: "1830297600"}}
}

// fixtureRecords are the event's changes: two comments created, one
// edited, the other removed by TTL, and a match (not part of the
// comments-table remodel).
func fixtureRecords() []sim.Record {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	keys := func(it pipeline.Item) pipeline.Item { return pipeline.Item{"PK": it["PK"], "SK": it["SK"]} }
	c1, c2, c1b := comment("c1", "LGTM"), comment("c2", "Typo"), comment("c1", "LGTM (edited)")
	match := pipeline.Item{"PK": s("PLAYER#p1"), "SK": s("MATCH#2026-11-30T10:00:00Z#m1"), "EntityType": s("Match"), "matchId": s("m1")}
	return []sim.Record{
		{Kind: pipeline.Insert, Keys: keys(c1), New: c1, Seq: "90000000000000000000001", Time: at, EventID: "0f6e1b3a2c4d4e5f8a9b0c1d2e3f4a01"},
		{Kind: pipeline.Insert, Keys: keys(c2), New: c2, Seq: "90000000000000000000002", Time: at.Add(10 * time.Millisecond), EventID: "0f6e1b3a2c4d4e5f8a9b0c1d2e3f4a02"},
		{Kind: pipeline.Modify, Keys: keys(c1), Old: c1, New: c1b, Seq: "90000000000000000000003", Time: at.Add(200 * time.Millisecond), EventID: "0f6e1b3a2c4d4e5f8a9b0c1d2e3f4a03"},
		{Kind: pipeline.Remove, Keys: keys(c2), Old: c2, TTL: true, Seq: "90000000000000000000004", Time: at.Add(700 * time.Millisecond), EventID: "0f6e1b3a2c4d4e5f8a9b0c1d2e3f4a04"},
		{Kind: pipeline.Insert, Keys: keys(match), New: match, Seq: "90000000000000000000005", Time: at.Add(900 * time.Millisecond), EventID: "0f6e1b3a2c4d4e5f8a9b0c1d2e3f4a05"},
	}
}

// TestFixture: testdata/event.json is the Kinesis event of
// fixtureRecords, as DynamoDB's streaming destination writes them (go
// test -update rewrites it).
func TestFixture(t *testing.T) {
	got := sim.KinesisEvent(sim.ToKinesis(fixtureRecords(), 0, 0, sim.NewKinesisRand(1)))
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.WriteFile(event, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(event)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Error("testdata/event.json is not the event of fixtureRecords: go test -update rewrites it")
	}
}

func TestLoadConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string // a problem the error names; "" for none
	}{
		{"nothing", map[string]string{}, "TARGET_TABLE is required"},
		{"no transform", map[string]string{"TARGET_TABLE": "t"}, "TRANSFORM is required"},
		{"the ledger is the target", map[string]string{"TARGET_TABLE": "t", "TRANSFORM": "x", "LEDGER_TABLE": "t"}, "LEDGER_TABLE t is TARGET_TABLE"},
		{"a bad source", map[string]string{"TARGET_TABLE": "t", "TRANSFORM": "x", "SOURCE": "sqs"}, `SOURCE "sqs": want kinesis or streams`},
		{"a bad wait", map[string]string{"TARGET_TABLE": "t", "TRANSFORM": "x", "CLAIM_WAIT_SECONDS": "soon"}, `CLAIM_WAIT_SECONDS "soon"`},
		{"an empty filter", map[string]string{"TARGET_TABLE": "t", "TRANSFORM": "x", "FILTER_ENTITY_TYPES": " , "}, "FILTER_ENTITY_TYPES is set but names no entity type"},
		{"fine", map[string]string{"TARGET_TABLE": "t", "TRANSFORM": "x", "SOURCE": "streams", "CLAIM_WAIT_SECONDS": "60"}, ""},
	} {
		cfg, err := remodeler.LoadConfig(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
		if tt.want == "" && (cfg.LedgerTable != "t-ledger" || cfg.Source != pipeline.SourceStreams || cfg.ClaimWait != time.Minute) {
			t.Errorf("%s: %+v", tt.name, cfg)
		}
	}
	// Every problem at once.
	_, err := remodeler.LoadConfig(func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "TARGET_TABLE") || !strings.Contains(err.Error(), "TRANSFORM") {
		t.Errorf("two problems: %v", err)
	}
}

// newHandler makes the remodeler of the seed environment's comments-table
// over an embedded target.
func newHandler(t *testing.T, dir string, metrics io.Writer) (*remodeler.Handler, *boltstore.TargetStore) {
	t.Helper()
	cfg := remodeler.Config{Table: "comments", LedgerTable: "comments-ledger", Transform: "comments-table", Source: pipeline.SourceKinesis}
	r, err := remodeler.NewRemodel(cfg, seed.Environment(), target.Key{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := boltstore.OpenTarget(filepath.Join(dir, "target.db"), r.Name(), r.Key(), boltstore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Error(err)
		}
	})
	h, err := remodeler.New(context.Background(), cfg, r, ts, quiet(), metrics)
	if err != nil {
		t.Fatal(err)
	}
	return h, ts
}

func targetItems(t *testing.T, ts *boltstore.TargetStore) []string {
	t.Helper()
	var out []string
	if err := ts.ScanRows(context.Background(), func(row driver.StoredRow) error {
		out = append(out, string(pipeline.AppendItem(nil, row.Attrs)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKinesisEvent runs the function's event through its handler: the
// edited comment is in the target under its new key, the removed one is
// not; the same event again, and its records duplicated and reversed,
// change nothing; each batch reports its CatchUpLag.
func TestKinesisEvent(t *testing.T) {
	ctx := context.Background()
	var metrics bytes.Buffer
	h, ts := newHandler(t, t.TempDir(), &metrics)
	data, err := os.ReadFile(event)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"EntityType":{"S":"Comment"},"PK":{"S":"DOC#d1"},"SK":{"S":"CMT#c1"},"body":{"S":"LGTM (edited)"},"commentId":{"S":"c1"},"docId":{"S":"d1"},"sourceSK":{"S":"DOC#d1#CMT#c1"},"ttl":{"N":"1830297600"},"workspacePK":{"S":"WS#acme"}}`}
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	var messy []json.RawMessage
	for i := len(ev.Records) - 1; i >= 0; i-- {
		messy = append(messy, ev.Records[i], ev.Records[i])
	}
	messyEvent, _ := json.Marshal(map[string]any{"Records": messy})
	for i, payload := range [][]byte{data, data, messyEvent} {
		out, err := h.Invoke(ctx, payload)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("invocation %d: %s %v", i+1, out, err)
		}
		if got := targetItems(t, ts); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("invocation %d: the target holds\n%s\nwant\n%s", i+1, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	lines := 0
	for line := range strings.Lines(metrics.String()) {
		if strings.Contains(line, `"CatchUpLag":`) {
			lines++
		}
	}
	if lines != 3 {
		t.Errorf("%d metric records with CatchUpLag for 3 batches:\n%s", lines, metrics.String())
	}
}

// TestRefusesAnotherTarget: a target another transform built stops the
// function at init, naming the table.
func TestRefusesAnotherTarget(t *testing.T) {
	dir := t.TempDir()
	h, ts := newHandler(t, dir, nil)
	data, _ := os.ReadFile(event)
	if out, err := h.Invoke(context.Background(), data); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	other := seed.Environment()
	moved := *other.Transforms[0]
	moved.Version = "2"
	other.Transforms = []*projections.Transform{&moved}
	cfg := remodeler.Config{Table: "comments", Transform: "comments-table"}
	r, err := remodeler.NewRemodel(cfg, other, ts.Key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remodeler.New(context.Background(), cfg, r, ts, quiet(), nil); !errors.Is(err, engine.ErrProjectionSet) || !strings.Contains(err.Error(), "TARGET_TABLE comments:") {
		t.Errorf("another version of the transform on the target: %v", err)
	}
	if _, err := remodeler.NewRemodel(remodeler.Config{Table: "t", Transform: "nope"}, seed.Environment(), target.Key{}); err == nil || !strings.Contains(err.Error(), `TRANSFORM: no transform "nope" (known: comments-table)`) {
		t.Errorf("an unknown transform: %v", err)
	}
}

// TestFilterChecked: a mapping filter that would drop records the
// transform takes stops the function at init.
func TestFilterChecked(t *testing.T) {
	copying := seed.Environment()
	all := *copying.Transforms[0]
	all.CopyOthers = true
	copying.Transforms = []*projections.Transform{&all}
	for _, tt := range []struct {
		name   string
		env    *projections.Environment
		filter []string
		want   string
	}{
		{"the transform's type", seed.Environment(), []string{"Comment", "Document"}, ""},
		{"a type missing", seed.Environment(), []string{"Document"}, "transform comments-table also rewrites Comment, whose records it would drop"},
		{"a transform that copies the others", copying, []string{"Comment"}, "copies every other type too"},
	} {
		_, err := remodeler.NewRemodel(remodeler.Config{Table: "t", Transform: "comments-table", FilterTypes: tt.filter}, tt.env, target.Key{})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

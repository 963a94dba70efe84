package projector_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/spec"
)

// The function's `sam local invoke` event.
var streamsEvent = filepath.Join("testdata", "event.json")

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadProjectorConfig(t *testing.T) {
	c, err := projector.LoadConfig(lookup(map[string]string{
		"AGGREGATE_TABLE": "aggs", "UNKNOWN_TYPE_POLICY": "fail", "PERMANENT_FAILURES": "skip",
		"IGNORE_TYPES": "User, Cart", "TOMBSTONE_TTL_DAYS": "30", "PROJECTIONS": " season-leaderboard ,order-totals", "TYPE_ATTRIBUTE": "kind",
		"VERSION_ATTRIBUTE": "rev",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Table != "aggs" || c.Unknown != pipeline.FailUnknown || c.Permanent != pipeline.SkipPermanent ||
		strings.Join(c.Ignore, "|") != "User|Cart" || c.TombstoneTTL != 30*24*time.Hour ||
		strings.Join(c.Projections, "|") != "season-leaderboard|order-totals" || c.Schema.TypeAttribute != "kind" ||
		c.Schema.VersionAttribute != "rev" {
		t.Errorf("config %+v", c)
	}
	_, err = projector.LoadConfig(lookup(map[string]string{"PERMANENT_FAILURES": "drop", "TOMBSTONE_TTL_DAYS": "0", "UNKNOWN_TYPE_POLICY": "drop"}))
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
	p, err := projector.New(ctx, projector.Config{Table: "local"}, seed.Environment(), st, quiet(), io.Discard)
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

// TestHandOver starts the stock Streams projector (in a child process: this
// test binary again) with TRIBUTARY_MAIN naming a script: the process
// becomes the script, before reading any configuration, and the script
// does not see TRIBUTARY_MAIN; a path that cannot be run fails the init,
// naming it.
func TestHandOver(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_HANDOVER") == "1" {
		projector.Main(seed.Environment())
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
			_, err := projector.New(ctx, projector.Config{Table: "t", FilterTypes: tt.filter}, seed.Environment(), boltstoretest.Open(t), quiet(), nil)
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
	withSpec := func(lookup func(string) (string, bool)) (*projections.Environment, error) {
		env := seed.Environment()
		env.LoadSpec = spec.Load
		return entry.Resolve(env, lookup)
	}
	views := map[string]*projections.View{}
	for name, vars := range map[string]map[string]string{
		"go":   nil,
		"spec": {"PROJECTIONS_FILE": stock},
	} {
		env, err := withSpec(lookup(vars))
		if err != nil {
			t.Fatal(err)
		}
		st := boltstoretest.Open(t)
		p, err := projector.New(ctx, projector.Config{Table: "t"}, env, st, quiet(), nil)
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

	_, err = entry.Resolve(seed.Environment(), lookup(map[string]string{"PROJECTIONS_FILE": stock}))
	if err == nil || !strings.Contains(err.Error(), "loads no spec") {
		t.Errorf("a spec file for a main without a spec loader: %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nprojections:\n  - name: x\n    entityTypes: [T]\n    counters:\n      - key: \"K#{nope\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = withSpec(lookup(map[string]string{"PROJECTIONS_FILE": bad}))
	if err == nil || !strings.Contains(err.Error(), "PROJECTIONS_FILE") || !strings.Contains(err.Error(), bad+":6: projection x: counters[0].key") {
		t.Errorf("a bad spec: %v", err)
	}
	env, err := withSpec(lookup(map[string]string{"PROJECTIONS_FILE": stock}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = projector.New(ctx, projector.Config{Table: "t", Schema: pipeline.Schema{TypeAttribute: "kind"}}, env, boltstoretest.Open(t), quiet(), nil)
	if err == nil || !strings.Contains(err.Error(), `TYPE_ATTRIBUTE "kind"`) {
		t.Errorf("another type attribute: %v", err)
	}
}

func mustView(t *testing.T, r driver.Reader) *projections.View {
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
			p, err := projector.New(ctx, projector.Config{Table: "local"}, seed.Environment(), st, quiet(), io.Discard)
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

// TestEmptyFilterTypes: a mapping whose filter passes no entity type
// (FILTER_ENTITY_TYPES set from an empty ProjectedEntityTypes) stops the
// function at init instead of starting one that receives nothing.
func TestEmptyFilterTypes(t *testing.T) {
	for _, v := range []string{"", " ", ",", " , "} {
		_, err := projector.LoadConfig(lookup(map[string]string{"AGGREGATE_TABLE": "t", "FILTER_ENTITY_TYPES": v}))
		if err == nil || !strings.Contains(err.Error(), "FILTER_ENTITY_TYPES is set but names no entity type") {
			t.Errorf("FILTER_ENTITY_TYPES=%q: %v", v, err)
		}
	}
	c, err := projector.LoadConfig(lookup(map[string]string{"AGGREGATE_TABLE": "t"}))
	if err != nil || c.FilterTypes != nil {
		t.Errorf("no FILTER_ENTITY_TYPES: %+v %v", c, err)
	}
}

// TestEnvironmentSchema: the attributes a function is given must agree
// with those its environment declares (a spec's, a Go main's); where the
// environment declares none, the variables name them.
func TestEnvironmentSchema(t *testing.T) {
	ctx := context.Background()
	declared := seed.Environment()
	declared.Schema = pipeline.Schema{TypeAttribute: "EntityType", KeyAttributes: []string{"PK", "SK"}, TTLAttribute: "expires"}
	for _, tt := range []struct {
		name string
		vars map[string]string
		want string // "" for no error
	}{
		{"agreeing", map[string]string{"TYPE_ATTRIBUTE": "EntityType", "KEY_ATTRIBUTES": "PK,SK", "TTL_ATTRIBUTE": "expires", "VERSION_ATTRIBUTE": "rev"}, ""},
		{"silent", nil, ""},
		{"another type", map[string]string{"TYPE_ATTRIBUTE": "kind"}, `TYPE_ATTRIBUTE "kind", but this table's environment reads the entity type from "EntityType"`},
		{"other keys", map[string]string{"KEY_ATTRIBUTES": "pk,sk"}, "KEY_ATTRIBUTES pk,sk, but this table's environment has the key attributes PK,SK"},
		{"another TTL", map[string]string{"TTL_ATTRIBUTE": "ttl"}, `TTL_ATTRIBUTE "ttl", but this table's environment reads the expiry from "expires"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"AGGREGATE_TABLE": "t"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			cfg, err := projector.LoadConfig(lookup(vars))
			if err != nil {
				t.Fatal(err)
			}
			_, err = projector.New(ctx, cfg, declared, boltstoretest.Open(t), quiet(), nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestLayerOfAnotherAccount starts the stock Streams projector (in a child
// process) with a projections layer of an account the stack does not
// allow: the init fails, naming the layer and the accounts allowed, before
// it hands over to a main in the layer or reads a spec from it.
func TestLayerOfAnotherAccount(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LAYER") == "1" {
		projector.Main(seed.Environment())
		return
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "projector")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho layer code ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	child := func(layer, accounts string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLayerOfAnotherAccount$")
		cmd.Env = append(os.Environ(), "TRIBUTARY_TEST_LAYER=1", "TRIBUTARY_MAIN="+script, "AGGREGATE_TABLE=t",
			"PROJECTIONS_LAYER="+layer, "LAYER_ACCOUNTS="+accounts)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	foreign := "arn:aws:lambda:eu-west-1:999999999999:layer:projections:3"
	out, err := child(foreign, "111122223333,444455556666")
	if err == nil || strings.Contains(out, "layer code ran") || !strings.Contains(out, "init failed") ||
		!strings.Contains(out, "is account 999999999999's layer") || !strings.Contains(out, "(111122223333, 444455556666)") {
		t.Errorf("a foreign layer: %v\n%s", err, out)
	}
	own := "arn:aws:lambda:eu-west-1:444455556666:layer:projections:3"
	if out, err := child(own, "111122223333,444455556666"); err != nil || strings.TrimSpace(out) != "layer code ran" {
		t.Errorf("a listed account's layer: %v\n%s", err, out)
	}
}

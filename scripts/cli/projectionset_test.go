package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// teamOrders is a team's own projection over the seed Order type: orders
// per user.
type teamOrders struct{}

func (teamOrders) Name() string          { return "orders-per-user" }
func (teamOrders) EntityTypes() []string { return []string{"Order"} }
func (teamOrders) Definition() string    { return "v1: Order -> USER#<PK> orders=1" }
func (teamOrders) Contribute(item pipeline.Item) (projections.Contribution, error) {
	pk, _ := item["PK"].(*types.AttributeValueMemberS)
	if pk == nil {
		return projections.Contribution{}, errors.New("PK: want S")
	}
	return projections.Contribution{Counters: []projections.Counter{{Key: pk.Value, Values: map[string]decimal.Decimal{"orders": decimal.FromInt(1)}}}}, nil
}

// runWith runs one command line of a binary built with opts.
func runWith(t *testing.T, opts Options, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), opts, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestEveryEntryPointRefusesAnotherSetsStore: a team's binary builds a store
// with its own projection of Order items; then every stock entry point that
// builds an engine (or checks aggregates against a set) refuses that store
// with an error that names both sets and how to rebuild, and the team's
// aggregates are untouched. The same holds the other way round, and for a
// store built by a subset of the stock set.
func TestEveryEntryPointRefusesAnotherSetsStore(t *testing.T) {
	ctx := context.Background()
	team := Options{Environment: &projections.Environment{Projections: projections.MustSet(teamOrders{})}}
	stockSubset, err := seed.Set().Select("order-totals")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	events := fixtures + "streams/event.json"

	// Each entry point, given a store directory and the options of the
	// binary (or the set of the function) that runs it.
	type entry struct {
		name string
		run  func(t *testing.T, opts Options, dir string) error
	}
	cli := func(args ...string) func(t *testing.T, opts Options, dir string) error {
		return func(t *testing.T, opts Options, dir string) error {
			code, stdout, stderr := runWith(t, opts, append(args, "--store", dir)...)
			if code == 0 {
				return nil
			}
			return errors.New(stdout + stderr)
		}
	}
	function := func(kinesis bool) func(t *testing.T, opts Options, dir string) error {
		return func(t *testing.T, opts Options, dir string) error {
			st, err := boltstore.Open(filepath.Join(dir, StoreFile))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := st.Close(); err != nil {
					t.Error(err)
				}
			}()
			cfg := projector.Config{Table: dir}
			if kinesis {
				_, err = kinesisprojector.New(ctx, cfg, opts.Environment, st, quiet, io.Discard)
			} else {
				_, err = projector.New(ctx, cfg, opts.Environment, st, quiet, io.Discard)
			}
			return err
		}
	}
	entries := []entry{
		{"process", cli("process", "--events", events)},
		{"replay", cli("replay", "--from", "kinesis://app-changes", "--checkpoint-dir", t.TempDir())},
		{"redrive", cli("redrive", "--from", "../../internal/capabilities/redrive/testdata/destination")},
		{"verify", cli("verify", "--export", fullExport)},
		{"projector function", function(false)},
		{"kinesis-projector function", function(true)},
	}
	for _, tt := range []struct {
		name          string
		builder, user Options
	}{
		{"stock on a team's store", team, stockOptions},
		{"a team's binary on a stock store", stockOptions, team},
		{"stock on a stock subset's store", Options{Environment: &projections.Environment{Projections: stockSubset}}, stockOptions},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if code, stdout, stderr := runWith(t, tt.builder, "process", "--store", dir, "--events", events); code != 0 {
				t.Fatalf("building the store: exit %d\n%s%s", code, stdout, stderr)
			}
			before := storeView(t, dir)
			if len(before.Aggregates) == 0 {
				t.Fatal("the builder wrote nothing")
			}
			for _, e := range entries {
				t.Run(e.name, func(t *testing.T) {
					err := e.run(t, tt.user, dir)
					if err == nil {
						t.Fatal("accepted another set's store")
					}
					for _, want := range []string{"projection set mismatch", tt.builder.Environment.Projections.String(), tt.user.Environment.Projections.String(), "--rebuild-into", "tributary backfill --export LOC --table NEW_TABLE"} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error does not say %q:\n%v", want, err)
						}
					}
					if d := projections.Diff(storeView(t, dir), before); len(d) > 0 {
						t.Errorf("the store changed: %v", d)
					}
				})
			}
		})
	}
}

// TestTypeAttribute: a team binary whose projections dispatch on another
// attribute (Options.TypeAttribute, or --type-attribute) processes, and
// without it every record is one of no projection's: the same events then
// leave no aggregate. A flag that contradicts the binary's is refused.
func TestTypeAttribute(t *testing.T) {
	data, err := os.ReadFile(fixtures + "streams/event.json")
	if err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(t.TempDir(), "kind.json")
	if err := os.WriteFile(events, bytes.ReplaceAll(data, []byte(`"EntityType"`), []byte(`"kind"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	set := projections.MustSet(teamOrders{})
	tests := []struct {
		name   string
		opts   Options
		flags  []string
		orders bool // the aggregates hold orders-per-user counts
	}{
		{"Environment.Schema.TypeAttribute", Options{Environment: &projections.Environment{Projections: set, Schema: pipeline.Schema{TypeAttribute: "kind"}}}, nil, true},
		{"--type-attribute", Options{Environment: &projections.Environment{Projections: set}}, []string{"--type-attribute", "kind"}, true},
		{"neither", Options{Environment: &projections.Environment{Projections: set}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			code, stdout, stderr := runWith(t, tt.opts, append([]string{"process", "--events", events, "--store", dir}, tt.flags...)...)
			if code != 0 {
				t.Fatalf("process: exit %d\n%s%s", code, stdout, stderr)
			}
			code, out, stderr := runWith(t, tt.opts, "aggregates", "--store", dir, "--json")
			if code != 0 {
				t.Fatalf("aggregates: exit %d %s", code, stderr)
			}
			if got := strings.Contains(out, `"orders"`); got != tt.orders {
				t.Errorf("aggregates hold orders: %t, want %t\n%s", got, tt.orders, out)
			}
		})
	}
	opts := Options{Environment: &projections.Environment{Projections: set, Schema: pipeline.Schema{TypeAttribute: "kind"}}}
	for _, cmd := range [][]string{
		{"process", "--events", events, "--store", t.TempDir()},
		{"redrive", "--from", "../../internal/capabilities/redrive/testdata/destination", "--store", t.TempDir()},
		{"replay", "--from", "kinesis://app-changes", "--store", t.TempDir()},
	} {
		code, _, stderr := runWith(t, opts, append(cmd, "--type-attribute", "EntityType")...)
		if code != 2 || !strings.Contains(stderr, `--type-attribute "EntityType", but this table's environment reads the entity type from "kind"`) {
			t.Errorf("%s with a contradicting --type-attribute: exit %d %s", cmd[0], code, stderr)
		}
	}
}

package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// counter and summer are two projections of the same entity type.
type counter struct{}

func (counter) Name() string          { return "thing-count" }
func (counter) EntityTypes() []string { return []string{"Thing"} }
func (counter) Contribute(pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{Counters: []projections.Counter{{Key: "ALL", Values: map[string]decimal.Decimal{"things": decimal.MustParse("1")}}}}, nil
}

type summer struct{ definition string }

func (summer) Name() string          { return "thing-sum" }
func (summer) EntityTypes() []string { return []string{"Thing"} }
func (s summer) Definition() string  { return s.definition }
func (summer) Contribute(item pipeline.Item) (projections.Contribution, error) {
	v := decimal.MustParse(item["value"].(*types.AttributeValueMemberN).Value)
	return projections.Contribution{Counters: []projections.Counter{{Key: "ALL", Values: map[string]decimal.Decimal{"value": v}}}}, nil
}

// other reads another entity type.
type other struct{}

func (other) Name() string          { return "other" }
func (other) EntityTypes() []string { return []string{"Other", "Thing"} }
func (other) Contribute(pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{}, nil
}

func thing(v int, value string, at time.Time) pipeline.Change {
	keys := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "THING#1"}, "SK": &types.AttributeValueMemberS{Value: "T"}}
	img := pipeline.Item{"PK": keys["PK"], "SK": keys["SK"], "EntityType": &types.AttributeValueMemberS{Value: "Thing"},
		"value": &types.AttributeValueMemberN{Value: value}}
	kind := pipeline.Insert
	if v > 1 {
		kind = pipeline.Modify
	}
	return pipeline.Change{Kind: kind, Keys: keys, New: img, NewType: "Thing", Version: int64(v), HasVersion: true,
		Time: at, Precision: pipeline.Millisecond, Position: pipeline.Position{Source: pipeline.SourceKinesis}}
}

// TestForeignEngineCorruptsATable shows why a table belongs to one set: the
// ledger entry of an item covers every projection of its type, so an engine
// of other projections retracts what the item gave the table's ones, and
// the change it applied is then stale for the table's own engine.
func TestForeignEngineCorruptsATable(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	full := engine.New(st, engine.Config{Logger: quiet()}, counter{}, summer{})
	filtered := engine.New(st, engine.Config{Logger: quiet()}, counter{})
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	if err := full.HandleBatch(ctx, []pipeline.Change{thing(1, "10", t0)}); err != nil {
		t.Fatal(err)
	}
	v2 := thing(2, "15", t0.Add(time.Second))
	if err := filtered.HandleBatch(ctx, []pipeline.Change{v2}); err != nil {
		t.Fatal(err)
	}
	if err := full.HandleBatch(ctx, []pipeline.Change{v2}); err != nil { // the table's own engine, a little later
		t.Fatal(err)
	}
	want, _ := projections.Recompute([]pipeline.Item{v2.New}, "", counter{}, summer{})
	if d := projections.Diff(mustView(t, st), want); len(d) == 0 {
		t.Fatal("the foreign engine left the table exact; the reasoning in open.go is wrong")
	}
}

// TestCheckSet: an empty table takes the first set and is marked for it;
// the same set, in any order, is accepted; any other set — a subset, a
// superset, or the same names with a changed definition — is refused with
// an error that names both sets and how to rebuild, and so is a table that
// holds aggregates without a marker.
func TestCheckSet(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	if m, err := engine.ReadMarker(ctx, st); m != nil || err != nil {
		t.Fatalf("new table: %v, %v", m, err)
	}
	set := projections.MustSet(summer{"v1"}, counter{})
	if err := engine.CheckSet(ctx, st, set); err != nil {
		t.Fatal(err)
	}
	m, err := engine.ReadMarker(ctx, st)
	if err != nil || m == nil || len(m.Set) != 2 || m.Set[0] != set.IDs()[0] || m.Set[1] != set.IDs()[1] {
		t.Fatalf("marker: %+v, %v", m, err)
	}
	if err := engine.CheckSet(ctx, st, projections.MustSet(counter{}, summer{"v1"})); err != nil {
		t.Errorf("the same set in another order: %v", err)
	}
	e, err := engine.Open(ctx, st, set, engine.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.HandleBatch(ctx, []pipeline.Change{thing(1, "3", time.Now())}); err != nil {
		t.Fatal(err)
	}
	if v := mustView(t, st); len(v.Aggregates) != 2 { // engines never see the marker
		t.Errorf("aggregates %v", v.Aggregates)
	}
	for _, tt := range []struct {
		name string
		set  *projections.Set
		want []string
	}{
		{"subset", projections.MustSet(counter{}), []string{"not in this engine: thing-sum"}},
		{"superset", projections.MustSet(counter{}, summer{"v1"}, other{}), []string{"not in the table: other"}},
		{"changed definition", projections.MustSet(counter{}, summer{"v2"}), []string{"definition changed: thing-sum"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := engine.CheckSet(ctx, st, tt.set)
			var me *engine.SetMismatchError
			if !errors.Is(err, engine.ErrProjectionSet) || !errors.As(err, &me) {
				t.Fatalf("CheckSet: %v, want a *SetMismatchError", err)
			}
			for _, w := range append(tt.want, set.String(), tt.set.String(), "--rebuild-into", "tributary backfill --export", "docs/backfill.md") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, err := engine.Open(ctx, st, tt.set, engine.Config{}); !errors.Is(err, engine.ErrProjectionSet) {
				t.Errorf("Open: %v, want ErrProjectionSet", err)
			}
		})
	}

	// A table with aggregates and no marker.
	unmarked := boltstoretest.Open(t)
	e = engine.New(unmarked, engine.Config{Logger: quiet()}, counter{})
	if err := e.HandleBatch(ctx, []pipeline.Change{thing(1, "3", time.Now())}); err != nil {
		t.Fatal(err)
	}
	err = engine.CheckSet(ctx, unmarked, projections.MustSet(counter{}))
	if !errors.Is(err, engine.ErrProjectionSet) || !strings.Contains(err.Error(), "records no projection set") ||
		!strings.Contains(err.Error(), "tributary projections adopt") {
		t.Errorf("an unmarked table with aggregates: %v", err)
	}
	// Adopting it records the set; then the set is accepted.
	old, err := engine.Adopt(ctx, unmarked, projections.MustSet(counter{}))
	if err != nil || old != nil {
		t.Fatalf("Adopt: %v, %v", old, err)
	}
	if err := engine.CheckSet(ctx, unmarked, projections.MustSet(counter{})); err != nil {
		t.Errorf("after Adopt: %v", err)
	}
}

// TestCheckSetLegacyMarker: a marker of the first form (names only) is
// another set's until adopted.
func TestCheckSetLegacyMarker(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	body := []byte(`{"projections":["thing-count"],"since":"2026-11-01T00:00:00Z"}`)
	if err := st.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: engine.MarkerKey, Body: body}}}); err != nil {
		t.Fatal(err)
	}
	set := projections.MustSet(counter{})
	err := engine.CheckSet(ctx, st, set)
	if !errors.Is(err, engine.ErrProjectionSet) || !strings.Contains(err.Error(), "predates fingerprints") {
		t.Fatalf("legacy marker: %v", err)
	}
	old, err := engine.Adopt(ctx, st, set)
	if err != nil || old == nil || len(old.Set) != 1 || old.Set[0].Name != "thing-count" {
		t.Fatalf("Adopt: %+v, %v", old, err)
	}
	if err := engine.CheckSet(ctx, st, set); err != nil {
		t.Errorf("after Adopt: %v", err)
	}
}

// TestCheckSetRace: engines of two sets starting on one empty table at
// once: exactly one set wins, every engine of it starts, the others are
// refused.
func TestCheckSetRace(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	sets := []*projections.Set{projections.MustSet(counter{}), projections.MustSet(counter{}, summer{})}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = engine.CheckSet(ctx, st, sets[i%2])
		}()
	}
	wg.Wait()
	m, err := engine.ReadMarker(ctx, st)
	if err != nil || m == nil {
		t.Fatalf("marker %v, %v", m, err)
	}
	for i, err := range errs {
		won := len(m.Set) == len(sets[i%2].IDs())
		if won != (err == nil) {
			t.Errorf("engine %d of set %s: %v, with the table marked %v", i, sets[i%2], err, m.Set)
		}
	}
}

// TestDryRunChecksWithoutWriting: Open over a DryRun of an empty table
// accepts the set and leaves the table unmarked.
func TestDryRunChecksWithoutWriting(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	if _, err := engine.Open(ctx, engine.NewDryRun(st), projections.MustSet(counter{}), engine.Config{}); err != nil {
		t.Fatal(err)
	}
	if m, err := engine.ReadMarker(ctx, st); m != nil || err != nil {
		t.Errorf("a dry run marked the table: %v, %v", m, err)
	}
}

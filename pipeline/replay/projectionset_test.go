package replay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/replay"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// counter and summer are two projections of the same entity type.
type counter struct{}

func (counter) Name() string          { return "thing-count" }
func (counter) EntityTypes() []string { return []string{"Thing"} }
func (counter) Contribute(pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{Counters: []projections.Counter{{Key: "ALL", Values: map[string]decimal.Decimal{"things": decimal.MustParse("1")}}}}, nil
}

type summer struct{}

func (summer) Name() string          { return "thing-sum" }
func (summer) EntityTypes() []string { return []string{"Thing"} }
func (summer) Contribute(item pipeline.Item) (projections.Contribution, error) {
	v := decimal.MustParse(item["value"].(*types.AttributeValueMemberN).Value)
	return projections.Contribution{Counters: []projections.Counter{{Key: "ALL", Values: map[string]decimal.Decimal{"value": v}}}}, nil
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

// TestFilteredEngineCorruptsASharedStore shows why a replay of some
// projections must not write to a store the full projector writes: the
// ledger entry of an item covers every projection of its type, so the
// filtered engine retracts the others' contributions, and the change it
// applied is then stale for the projector.
func TestFilteredEngineCorruptsASharedStore(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	full := projections.New(st, projections.Config{Logger: quiet()}, counter{}, summer{})
	filtered := projections.New(st, projections.Config{Logger: quiet()}, counter{})
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	if err := full.HandleBatch(ctx, []pipeline.Change{thing(1, "10", t0)}); err != nil {
		t.Fatal(err)
	}
	v2 := thing(2, "15", t0.Add(time.Second))
	if err := filtered.HandleBatch(ctx, []pipeline.Change{v2}); err != nil {
		t.Fatal(err)
	}
	if err := full.HandleBatch(ctx, []pipeline.Change{v2}); err != nil { // the projector, a little later
		t.Fatal(err)
	}
	want, _ := projections.Recompute([]pipeline.Item{v2.New}, "", counter{}, summer{})
	if d := projections.Diff(mustView(t, st), want); len(d) == 0 {
		t.Fatal("the filtered engine left the shared store exact; the reasoning in projectionset.go is wrong")
	}
	// Which is why a filtered replay refuses such a store.
	if err := replay.CheckProjectionSet(ctx, st, st, []string{"thing-count"}); !errors.Is(err, replay.ErrProjectionSet) {
		t.Errorf("a filtered replay into a store with aggregates: %v, want ErrProjectionSet", err)
	}
}

func TestProjectionSetMarker(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	if set, err := replay.ProjectionSet(ctx, st); set != nil || err != nil {
		t.Fatalf("new store: %v, %v", set, err)
	}
	// A subset takes an empty store and marks it.
	if err := replay.CheckProjectionSet(ctx, st, st, []string{"thing-sum", "thing-count"}); err != nil {
		t.Fatal(err)
	}
	set, err := replay.ProjectionSet(ctx, st)
	if err != nil || len(set) != 2 || set[0] != "thing-count" || set[1] != "thing-sum" {
		t.Fatalf("marker: %v, %v", set, err)
	}
	// The same subset again, in any order: fine.
	if err := replay.CheckProjectionSet(ctx, st, st, []string{"thing-count", "thing-sum"}); err != nil {
		t.Error(err)
	}
	// Another subset, or every projection: refused.
	for _, names := range [][]string{{"thing-count"}, nil} {
		if err := replay.CheckProjectionSet(ctx, st, st, names); !errors.Is(err, replay.ErrProjectionSet) {
			t.Errorf("%v into a store marked %v: %v, want ErrProjectionSet", names, set, err)
		}
	}
	// Engines never see the marker: it is no item's ledger entry.
	e := projections.New(st, projections.Config{Logger: quiet()}, counter{}, summer{})
	if err := e.HandleBatch(ctx, []pipeline.Change{thing(1, "3", time.Now())}); err != nil {
		t.Fatal(err)
	}
	if v := mustView(t, st); len(v.Aggregates) != 2 {
		t.Errorf("aggregates %v", v.Aggregates)
	}
	// Every projection into an unmarked store: fine, and marks nothing.
	other := boltstoretest.Open(t)
	if err := replay.CheckProjectionSet(ctx, other, other, nil); err != nil {
		t.Error(err)
	}
	if set, _ := replay.ProjectionSet(ctx, other); set != nil {
		t.Errorf("a full replay marked the store %v", set)
	}
}

func TestSelect(t *testing.T) {
	all := []projections.Projection{counter{}, summer{}}
	got, err := replay.Select(all, []string{"thing-sum"})
	if err != nil || len(got) != 1 || got[0].Name() != "thing-sum" {
		t.Errorf("Select: %v, %v", got, err)
	}
	if got, _ := replay.Select(all, nil); len(got) != 2 {
		t.Errorf("Select(nil): %v", got)
	}
	if _, err := replay.Select(all, []string{"thing-sum", "nope"}); err == nil || err.Error() != "unknown projection nope (known: thing-count, thing-sum)" {
		t.Errorf("Select(nope): %v", err)
	}
}

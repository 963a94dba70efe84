package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// thingCount counts every Thing; strictThings refuses a Thing whose "bad"
// attribute is set.
type thingCount struct{}

func (thingCount) Name() string          { return "thing-count" }
func (thingCount) EntityTypes() []string { return []string{"Thing"} }
func (thingCount) Contribute(pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{Counters: []projections.Counter{{Key: "ALL", Values: map[string]decimal.Decimal{"n": decimal.MustParse("1")}}}}, nil
}

type strictThings struct{}

func (strictThings) Name() string          { return "strict-things" }
func (strictThings) EntityTypes() []string { return []string{"Thing"} }
func (strictThings) Contribute(it pipeline.Item) (projections.Contribution, error) {
	if _, bad := it["bad"]; bad {
		return projections.Contribution{}, (&projections.ItemError{Projection: "strict-things", Attr: "bad", Err: errors.New("must not be set")}).SetKeys(it, "PK", "SK")
	}
	return projections.Contribution{Counters: []projections.Counter{{Key: "GOOD", Values: map[string]decimal.Decimal{"n": decimal.MustParse("1")}}}}, nil
}

// An item one projection refuses adds nothing to any projection, as the
// engine applies nothing of a record it fails; the check of a table
// against an export lists it among the differences, naming projection and
// item, and goes on with the other items.
func TestRefusedItemAddsNothing(t *testing.T) {
	ctx := context.Background()
	thing := func(id string, bad bool) pipeline.Item {
		it := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "THING#" + id}, "SK": &types.AttributeValueMemberS{Value: "A"},
			"EntityType": &types.AttributeValueMemberS{Value: "Thing"}}
		if bad {
			it["bad"] = &types.AttributeValueMemberBOOL{Value: true}
		}
		return it
	}
	ps := []projections.Projection{thingCount{}, strictThings{}}

	v := projections.NewView()
	add := v.Adder("", ps...)
	if err := add(thing("1", true)); err == nil || !strings.Contains(err.Error(), "strict-things: item THING#1/A: bad: ") || strings.Count(err.Error(), "strict-things") != 1 {
		t.Errorf("refused item: %v", err)
	}
	if len(v.Aggregates) != 0 {
		t.Errorf("a refused item added %v", v.Aggregates)
	}

	check := engine.NewAsOfCheck(time.Now(), "", ps...)
	st := boltstoretest.Open(t)
	if err := check.AddLedgers(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := check.AddExportItems([]pipeline.Item{thing("1", true), thing("2", false), thing("3", true)}, []string{"PK", "SK"}); err != nil {
		t.Fatalf("a refused item stopped the check: %v", err)
	}
	if len(check.Refused) != 2 || !strings.HasPrefix(check.Refused[0], "strict-things export item PK=THING#1 SK=A: refused: bad: must not be set") ||
		!strings.HasPrefix(check.Refused[1], "strict-things export item PK=THING#3 SK=A: refused: bad: must not be set") {
		t.Fatalf("refused: %q", check.Refused)
	}
	diff, err := check.Diff(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	// The empty table lacks the two aggregates item 2 makes, each of 1
	// (thing-count's would want 3 if the refused items added to it); the
	// refused items are listed.
	want := []string{
		"strict-things GOOD n: got 0, want 1",
		check.Refused[0],
		check.Refused[1],
		"thing-count ALL n: got 0, want 1",
	}
	if !slices.Equal(diff, want) {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(diff, "\n"), strings.Join(want, "\n"))
	}
}

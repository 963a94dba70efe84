package projections_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// Every aggregate value is printed as a JSON string of its exact decimal,
// as DynamoDB JSON writes numbers: a reader that parses JSON numbers as
// floats (jq, JavaScript, most JSON libraries) would round 9007199254740993
// to …992 and a 38-digit sum to 1.2345678901234568e+37.
func TestJSONLinesValuesAreExact(t *testing.T) {
	values := map[string]string{
		"small":    "3",
		"zero":     "0",
		"past2^53": "9007199254740993",
		"revenue":  "12345678901234567890123456789012345678",
		"negative": "-12.50",
		"tiny":     "0.000000000000000000000000000000000000001",
	}
	v := &projections.View{Aggregates: map[projections.AggregateKey]map[string]decimal.Decimal{{Projection: "p", Key: "K"}: {}}}
	for n, s := range values {
		v.Aggregates[projections.AggregateKey{Projection: "p", Key: "K"}][n] = decimal.MustParse(s)
	}
	line := bytes.TrimSuffix(v.AppendJSONLines(nil), []byte("\n"))
	var got struct {
		Values map[string]any `json:"values"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	for n, want := range values {
		s, ok := got.Values[n].(string)
		if !ok || s != want {
			t.Errorf("%s read back as %#v, want the string %q\n%s", n, got.Values[n], want, line)
		}
	}
}

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

	check := projections.NewAsOfCheck(time.Now(), "", ps...)
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

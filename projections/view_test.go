package projections_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// refuser is a projection of Thing items that fails as it is told.
type refuser struct{ fail func() error }

func (refuser) Name() string          { return "refuser" }
func (refuser) EntityTypes() []string { return []string{"Thing"} }
func (r refuser) Contribute(pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{}, r.fail()
}

// A refused item's error names the projection once, is a *RefusedError
// carrying what Contribute returned, and reaches its cause; a panic is one
// too.
func TestRecomputeNamesTheRefusingProjection(t *testing.T) {
	boom := errors.New("boom")
	item := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "THING#1"}, "EntityType": &types.AttributeValueMemberS{Value: "Thing"}}
	for _, tc := range []struct {
		name  string
		fail  func() error
		want  string
		cause error
	}{
		{"plain error", func() error { return boom }, "recompute: projection refuser: boom", boom},
		{"its own ItemError", func() error {
			return &projections.ItemError{Projection: "refuser", PK: "THING#1", Attr: "n", Err: projections.ErrMissing}
		}, "recompute: refuser: item THING#1/?: n: missing", projections.ErrMissing},
		{"another's ItemError", func() error {
			return &projections.ItemError{Projection: "other", PK: "THING#1", Err: boom}
		}, "recompute: projection refuser: other: item THING#1/?: boom", boom},
		{"panic", func() error { panic("kaput") }, "recompute: projection refuser: panic: kaput", pipeline.ErrPermanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := projections.Recompute([]pipeline.Item{item}, "", refuser{tc.fail})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			re, ok := errors.AsType[*projections.RefusedError](err)
			if !ok || re.Projection != "refuser" {
				t.Errorf("%#v is not a *RefusedError naming refuser", err)
			}
			if !errors.Is(err, tc.cause) {
				t.Errorf("%v does not reach %v", err, tc.cause)
			}
		})
	}
}

// Add sums values into an aggregate, and Prune leaves out what sums to
// zero, as ReadView shows a table.
func TestViewAddAndPrune(t *testing.T) {
	v := projections.NewView()
	k := projections.AggregateKey{Projection: "p", Key: "K"}
	v.Add(k, map[string]decimal.Decimal{"n": decimal.MustParse("1.5"), "m": decimal.MustParse("2")})
	v.Add(k, map[string]decimal.Decimal{"n": decimal.MustParse("-1.5")})
	v.Add(projections.AggregateKey{Projection: "p", Key: "GONE"}, map[string]decimal.Decimal{"n": decimal.MustParse("0")})
	v.Prune()
	if len(v.Aggregates) != 1 || len(v.Aggregates[k]) != 1 || v.Aggregates[k]["m"].String() != "2" {
		t.Errorf("after Add and Prune: %v", v.Aggregates)
	}
}

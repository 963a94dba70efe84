package projections_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
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

func TestNewSet(t *testing.T) {
	set, err := projections.NewSet(summer{}, counter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "thing-count,thing-sum" {
		t.Errorf("Names %s", got)
	}
	if ps := set.Projections(); ps[0].Name() != "thing-sum" {
		t.Errorf("Projections lost the given order: %v", ps)
	}
	for _, tt := range []struct {
		name string
		ps   []projections.Projection
		want string
	}{
		{"none", nil, "empty projection set"},
		{"nil", []projections.Projection{counter{}, nil}, "projection 1 of the set is nil"},
		{"duplicate", []projections.Projection{counter{}, counter{}}, `two projections named "thing-count"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := projections.NewSet(tt.ps...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSet: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	a, b := projections.Fingerprint(summer{"v1"}), projections.Fingerprint(summer{"v2"})
	if a == b {
		t.Error("a changed Definition keeps its fingerprint")
	}
	if a != projections.Fingerprint(summer{"v1"}) {
		t.Error("the fingerprint is not deterministic")
	}
	if len(a) != 16 {
		t.Errorf("fingerprint %q, want 16 hexadecimal digits", a)
	}
}

func TestSelect(t *testing.T) {
	all := projections.MustSet(counter{}, summer{}, other{})
	sub, err := all.Select("thing-sum")
	if err != nil || strings.Join(sub.Names(), ",") != "thing-sum" {
		t.Fatalf("Select: %v, %v", sub, err)
	}
	if got := strings.Join(sub.Ignored(), ","); got != "Other" {
		t.Errorf("Ignored %q, want Other (read by other, not by thing-sum)", got)
	}
	if same, _ := all.Select(); same != all {
		t.Error("Select() is not the set itself")
	}
	if _, err := all.Select("thing-sum", "nope"); err == nil || err.Error() != "unknown projection nope (known: other, thing-count, thing-sum)" {
		t.Errorf("Select(nope): %v", err)
	}
}

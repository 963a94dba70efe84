package projections_test

import (
	"bytes"
	"encoding/json"
	"testing"

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

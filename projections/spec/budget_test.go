package spec_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// whenSpec is a spec of one projection, p, over items of type T with the
// attributes decl declares, and the condition when.
func whenSpec(decl, when string) []byte {
	return fmt.Appendf(nil, "version: 1\nprojections:\n  - name: p\n    entityTypes: [T]\n    item: {%s}\n    when: '%s'\n    counters: [{key: K, values: {c: 1}}]\n",
		decl, strings.ReplaceAll(when, "'", "''"))
}

// item is a T item with the given attributes.
func item(kv ...any) pipeline.Item {
	return edit(pipeline.Item{"EntityType": s("T"), "PK": s("T#1"), "SK": s("A")}, kv...)
}

// list is an L of n strings.
func list(n int) types.AttributeValue {
	l := &types.AttributeValueMemberL{}
	for i := range n {
		l.Value = append(l.Value, s(fmt.Sprint("t", i)))
	}
	return l
}

// TestEvaluationBudget: an item whose evaluation goes over its budget, in
// steps or in memory, stops there: its error is permanent and names the
// projection, the field and the expression, and it comes in milliseconds,
// whatever the expression's loops and values.
func TestEvaluationBudget(t *testing.T) {
	const (
		steps = "evaluation stopped: it takes more than the 1048576 steps an item may take"
		bytes = "evaluation stopped: it builds values of more than the 8388608 bytes an item may take"
	)
	long := strings.Repeat("abcdefgh", 50_000) // 400 KB: an item's most
	cases := []struct {
		name, decl, when string
		item             pipeline.Item
		want             string // the error after the field and expression; "" for none
	}{
		{name: "nested loops over a range the item sizes", decl: "n: int", when: "let r = 1..n; all(r, {all(r, # > 0)})",
			item: item("n", n("900000")), want: steps},
		{name: "a loop whose body scans a long string", decl: "n: int, s: S", when: `all(1..n, {s contains "zzz" || true})`,
			item: item("n", n("100000"), "s", s(long)), want: steps},
		{name: "a string doubled in a loop", decl: "n: int, s: S", when: `reduce(1..n, #acc + #acc, s) != ""`,
			item: item("n", n("60"), "s", s("ab")), want: bytes},
		{name: "repeat of a long string", decl: "n: int, s: S", when: "len(repeat(s, n)) > 0",
			item: item("n", n("1000000"), "s", s(long)), want: bytes},
		{name: "a quadratic builtin", decl: "l: L", when: "len(uniq(l)) > 0", item: item("l", list(20_000)), want: steps},
		{name: "sorting by keys in a loop", decl: "l: L", when: "all(l, {len(sortBy(l, #)) > 0})", item: item("l", list(2_000)), want: steps},
		{name: "text of a list in a loop", decl: "l: L", when: "all(l, {len(toJSON(l)) > 0})", item: item("l", list(20_000)), want: steps},
		{name: "strings built in a loop", decl: "n: int, s: S", when: `all(1..n, {s + s != ""})`, item: item("n", n("100"), "s", s(long)), want: bytes},
		{name: "a loop within the budget", decl: "l: L", when: `all(l, {# != ""})`, item: item("l", list(10_000))},
		{name: "the seed's checks", decl: "PK: S", when: `PK matches "^T#[^#]+$"`, item: item()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := spec.Parse("budget.yaml", whenSpec(tc.decl, tc.when))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = sp.Projections()[0].Contribute(tc.item)
			took := time.Since(start)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := "p: item T#1/A: when: " + tc.when + ": " + tc.want
			var ie *projections.ItemError
			switch {
			case err == nil:
				t.Fatalf("no error in %v", took)
			case err.Error() != want:
				t.Errorf("error\n got %v\nwant %s", err, want)
			case !errors.As(err, &ie) || !errors.Is(err, pipeline.ErrPermanent):
				t.Errorf("%v (%T) is not a permanent *projections.ItemError", err, err)
			}
			// The budget is some milliseconds: a loaded machine running
			// the race detector stays far within this.
			if took > 5*time.Second {
				t.Errorf("the evaluation stopped after %v", took)
			}
		})
	}
}

// TestEvaluationBudgetInChecks: a check whose evaluation goes over the
// budget is not a failed check but an evaluation stopped, under its own
// field.
func TestEvaluationBudgetInChecks(t *testing.T) {
	sp, err := spec.Parse("budget.yaml", []byte(`version: 1
projections:
  - name: p
    entityTypes: [T]
    item: {n: int}
    checks:
      - expr: "let r = 1..n; all(r, {all(r, # > 0)})"
        message: never said
    counters: [{key: K, values: {c: 1}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = sp.Projections()[0].Contribute(item("n", n("900000")))
	const want = "p: item T#1/A: checks[0]: let r = 1..n; all(r, {all(r, # > 0)}): evaluation stopped: it takes more than the 1048576 steps an item may take"
	if err == nil || err.Error() != want || !errors.Is(err, pipeline.ErrPermanent) {
		t.Errorf("error\n got %v\nwant %s (permanent)", err, want)
	}
}

// TestIntOverflow: an integer operation whose result is beyond the 64-bit
// integers (expr would wrap it around, to a number of the other sign)
// fails the item, permanently, naming the expression and the operation;
// results at the edge are what they are.
func TestIntOverflow(t *testing.T) {
	const big = "4611686018427387904" // 2^62
	cases := []struct {
		name, decl, when string
		item             pipeline.Item
		want             string // after the expression; "" when it holds
	}{
		{name: "product", decl: "n: int", when: "n * n > 0", item: item("n", n("4294967296")),
			want: "integer overflow: n * n is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "sum", decl: "a: int, b: int", when: "a + b > 0", item: item("a", n(big), "b", n(big)),
			want: "integer overflow: a + b is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "difference", decl: "a: int, b: int", when: "a - b < 0", item: item("a", n("-"+big), "b", n("4611686018427387905")),
			want: "integer overflow: a - b is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "negation", decl: "a: int", when: "-a > 0", item: item("a", n("-9223372036854775808")),
			want: "integer overflow: -a is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "sum of an array", decl: "a: int", when: "sum([a, a, a]) > 0", item: item("a", n(big)),
			want: "integer overflow: sum([a, a, a]) is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "sum by a predicate", decl: "a: int", when: "sum([a, a], {# + 1}) > 0", item: item("a", n(big)),
			want: "integer overflow: sum([a, a], # + 1) is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "absolute value", decl: "a: int", when: "abs(a) > 0", item: item("a", n("-9223372036854775808")),
			want: "integer overflow: abs(a) is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "in a loop", decl: "a: int", when: "all(1..3, {# * a > 0})", item: item("a", n(big)),
			want: "integer overflow: # * a is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "at the edge", decl: "a: int, b: int", when: "a + (b - 1) + a == 9223372036854775807 && -(a - 1 + a) < 0", item: item("a", n(big), "b", n("0"))},
		{name: "a product of -1", decl: "a: int", when: "a * -1 == -9223372036854775807", item: item("a", n("9223372036854775807"))},
		{name: "sums at the edge", decl: "a: int", when: "sum([a, a - 1], {# + 0}) == 9223372036854775807 && abs(-a) == a && sum([a, -a, a]) == a", item: item("a", n(big))},
		{name: "floats", decl: "x: N", when: "x * x + x - x > 0 && sum([x, x]) > 0", item: item("x", n("9E+18"))},
		{name: "durations", decl: "a: int", when: `duration("1h") * a > duration("1h")`, item: item("a", n(big)),
			want: `integer overflow: duration("1h") * a is beyond the 64-bit integers (±9223372036854775807)`},
		{name: "a float made an int", decl: "x: N", when: "int(x) > 0", item: item("x", n("1E+19")),
			want: "integer overflow: int(x) is beyond the 64-bit integers (±9223372036854775807)"},
		{name: "a range from the least integer", decl: "a: int", when: "a..5 == []", item: item("a", n("-9223372036854775808")),
			want: "evaluation stopped: it builds values of more than the 8388608 bytes an item may take"},
		// Arithmetic on the 64-bit integers a time's methods give, and
		// loops of integer arithmetic, cost what they did before checks.
		{name: "int64s", decl: "a: S", when: `date(a).Unix() - date("2020-01-01T00:00:00Z").Unix() > 3600 && int(1E+18) > 0`, item: item("a", s("2021-01-01T00:00:00Z"))},
		{name: "a loop", decl: "a: int", when: "all(1..10000, {# * a > 0})", item: item("a", n("10000"))},
		{name: "a sum by a predicate", decl: "a: int", when: "sum(1..a, {# * 2}) > 0", item: item("a", n("10000"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := spec.Parse("overflow.yaml", whenSpec(tc.decl, tc.when))
			if err != nil {
				t.Fatal(err)
			}
			c, err := sp.Projections()[0].Contribute(tc.item)
			if tc.want == "" {
				if err != nil || len(c.Counters) != 1 {
					t.Errorf("%s: %+v, %v; want it to hold", tc.when, c, err)
				}
				return
			}
			want := "p: item T#1/A: when: " + tc.when + ": " + tc.want
			if err == nil || err.Error() != want || !errors.Is(err, pipeline.ErrPermanent) {
				t.Errorf("error\n got %v\nwant %s (permanent)", err, want)
			}
		})
	}
}

// TestIntOverflowAtLoad: an integer operation on literals, or a sum of a
// range of constant bounds, that expr would compute at compile time and
// wrap around is refused at load, naming where.
func TestIntOverflowAtLoad(t *testing.T) {
	for when, want := range map[string]string{
		"9223372036854775807 + 1 < 0":                       "when: 9223372036854775807 + 1 < 0: integer overflow: an operation on literals gives a number beyond the 64-bit integers (1:21)",
		"sum(4611686018427387904..4611686018427387904) < 0": "when: sum(4611686018427387904..4611686018427387904) < 0: integer overflow: the sum is beyond the 64-bit integers (1:1)",
	} {
		_, err := spec.Parse("overflow.yaml", whenSpec("n: int", when))
		if err == nil || !strings.Contains(err.Error(), "overflow.yaml:6: projection p: "+want) {
			t.Errorf("%s: %v\nwant %s", when, err, want)
		}
	}
	if _, err := spec.Parse("overflow.yaml", whenSpec("n: int", "9223372036854775806 + 1 > 0 && sum(4611686018427387903..4611686018427387903) > 0")); err != nil {
		t.Errorf("at the edge: %v", err)
	}
}

// TestNotFinite: an arithmetic result that is not a finite number (expr's
// / is a float division, and a float overflows) fails the item,
// permanently, naming the expression and the operation, wherever it is.
func TestNotFinite(t *testing.T) {
	cases := []struct {
		name, decl, when string
		item             pipeline.Item
		want             string // after the expression
	}{
		{name: "division by zero", decl: "n: int", when: "1 / (n - n) > 0", item: item("n", n("7")),
			want: "not a finite number: 1 / (n - n) gives +Inf"},
		{name: "zero by zero", decl: "n: N", when: "n / n == n / n", item: item("n", n("0")),
			want: "not a finite number: n / n gives NaN"},
		{name: "overflow", decl: "x: N", when: "x * x * x > 0", item: item("x", n("9E+125")),
			want: "not a finite number: x * x * x gives +Inf"},
		{name: "power", decl: "x: N", when: "x ** 3 < 0", item: item("x", n("-9E+125")),
			want: "not a finite number: x ** 3 gives -Inf"},
		{name: "text read as a number", decl: "s: S", when: "float(s) >= 0 || float(s) < 0", item: item("s", s("NaN")),
			want: "not a finite number: float(s) gives NaN"},
		{name: "in a loop", decl: "l: L", when: "all(l, {1 / # > 0})", item: item("l", &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1"), n("0")}}),
			want: "not a finite number: 1 / # gives +Inf"},
		{name: "a value of unknown type", decl: "m: M", when: "m.a / m.b > 1", item: item("m", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": n("1"), "b": n("0")}}),
			want: "not a finite number: m.a / m.b gives +Inf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := spec.Parse("finite.yaml", whenSpec(tc.decl, tc.when))
			if err != nil {
				t.Fatal(err)
			}
			_, err = sp.Projections()[0].Contribute(tc.item)
			want := "p: item T#1/A: when: " + tc.when + ": " + tc.want
			if err == nil || err.Error() != want || !errors.Is(err, pipeline.ErrPermanent) {
				t.Errorf("error\n got %v\nwant %s (permanent)", err, want)
			}
		})
	}
	// A finite quotient is what it was.
	sp, err := spec.Parse("finite.yaml", whenSpec("n: int", "7 / n > 3"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := sp.Projections()[0].Contribute(item("n", n("2"))); err != nil || len(c.Counters) != 1 {
		t.Errorf("7 / 2 > 3: %+v %v", c, err)
	}
}

package spec_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// BenchmarkLoadSeedSpec measures loading the stock spec: parsing the YAML,
// validating it and compiling its expressions — what a function does at
// init.
func BenchmarkLoadSeedSpec(b *testing.B) {
	for b.Loop() {
		if _, err := spec.Parse("seed.yaml", seed.SpecYAML); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContribute compares the Go seed projections with their spec
// twins over the demo workload's images, one sub-benchmark each, so that
// -count interleaves the rounds: ns/op is per image.
func BenchmarkContribute(b *testing.B) {
	images, err := seedImages()
	if err != nil {
		b.Fatal(err)
	}
	type work struct {
		p    projections.Projection
		imgs []pipeline.Item
	}
	var goWork, specWork []work
	for _, pr := range pairs(b) {
		var imgs []pipeline.Item
		for _, et := range pr.goP.EntityTypes() {
			imgs = append(imgs, images[et]...)
		}
		goWork = append(goWork, work{pr.goP, imgs})
		specWork = append(specWork, work{pr.specP, imgs})
	}
	for _, side := range []struct {
		name string
		ws   []work
	}{{"go", goWork}, {"spec", specWork}} {
		b.Run(side.name, func(b *testing.B) {
			var n int
			b.ReportAllocs()
			for b.Loop() {
				for _, w := range side.ws {
					for _, img := range w.imgs {
						if _, err := w.p.Contribute(img); err != nil {
							b.Fatal(err)
						}
						n++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/image")
		})
	}
}

// BenchmarkBudget measures evaluations that go to the end of an item's
// budget, one sub-benchmark for each kind of work the meter charges (a
// loop's nodes, scanning, comparing, hashing, sorting, building strings
// and arrays, parsing, matching): ns/op is how long an item whose
// expression is stopped by its budget takes, the worst a projection's
// expressions can cost an item. "seed" is the stock spec's order-totals
// on an order, for scale.
func BenchmarkBudget(b *testing.B) {
	long := strings.Repeat("abcdefghij", 40_000)
	l := list(20_000)
	js := "[" + strings.Repeat("1,", 100_000) + "1]"
	decl := "n: int, s: S, t: S, js: S, l: L, m: M"
	it := item("n", n("900000"), "s", s(long), "t", s(long[:len(long)-1]+"x"), "js", s(js), "l", l,
		"m", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": s("b")}})
	for _, bc := range []struct{ name, when string }{
		{"loop", "all(1..n, {# > 0})"},
		{"nested-loops", "let r = 1..n; all(r, {all(r, # > 0)})"},
		{"map-literals", "all(1..n, {len({a: #, b: #, c: #}) > 0})"},
		{"array-literals", "all(1..n, {len([#, #, #, #, #, #, #, #]) > 0})"},
		{"count-runes", "all(1..n, {len(s) > 0})"},
		{"compare-strings", "all(1..n, {s < t})"},
		{"compare-lists", "all(1..n, {l == l})"},
		{"hash-keys", "all(1..n, {m[s] == nil})"},
		{"match-text", `all(1..n, {s matches "^[a-j]+$"})`},
		{"match-program", `all(1..n, {s matches "(a|b|c|d|e|f|g|h|i|j)*(x|y)+z" || true})`},
		{"upper", `all(1..n, {upper(s) != ""})`},
		{"replace", `all(1..n, {replace(s, "a", "bb") != ""})`},
		{"split", `all(1..n, {len(split(s, "a")) > 0})`},
		{"join", `all(1..n, {len(join(l, ",")) > 0})`},
		{"json-out", "all(1..n, {len(toJSON(l)) > 0})"},
		{"json-in", "all(1..n, {fromJSON(js) != nil})"},
		{"base64", `all(1..n, {toBase64(s) != ""})`},
		{"dates", `all(1..n, {date("2026-01-02", "2006-01-02").Format("2006-01-02 Monday January") != ""})`},
		{"numbers-as-text", `all(1..n, {string(# * 1.5) != ""})`},
		{"filter", `all(1..n, {len(filter(l, # == "x")) >= 0})`},
		{"sort", "len(sortBy(1..n, -#)) > 0"},
		{"group", "len(groupBy(1..n, #)) > 0"},
		{"uniq", "all(1..n, {len(uniq(1..1000)) > 0})"},
		{"flatten", "all(1..n, {len(flatten([l, l])) > 0})"},
		{"double-a-string", `reduce(1..n, #acc + #acc, "ab") != ""`},
	} {
		sp, err := spec.Parse("budget.yaml", whenSpec(decl, bc.when))
		if err != nil {
			b.Fatal(err)
		}
		p := sp.Projections()[0]
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Contribute(it); err == nil || !strings.Contains(err.Error(), "stopped") {
					b.Fatalf("%s: %v, not stopped by the budget", bc.when, err)
				}
			}
		})
	}
	sp, err := spec.Parse("seed.yaml", seed.SpecYAML)
	if err != nil {
		b.Fatal(err)
	}
	p := projection(b, sp, "order-totals")
	order := pipeline.Item{"EntityType": s("Order"), "PK": s("USER#u1"), "SK": s("ORDER#2026-11-30#o1"), "status": s("PAID"),
		"total": n("120.50"), "orderDate": s("2026-11-30")}
	b.Run("seed", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Contribute(order); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/seed"
)

// worstSpecs are specs at the limits of what load accepts, each the
// largest of its kind: what BenchmarkLoadWorst measures, against the
// stock spec.
func worstSpecs() []struct {
	name string
	data []byte
} {
	return []struct {
		name string
		data []byte
	}{
		{"seed", seed.SpecYAML},
		{"projections", manyProjections()},
		{"attributes", manyAttributes()},
		{"expression-nodes", expressionNodes()},
		{"patterns", patterns()},
		{"aliases", aliases()},
	}
}

// fill appends blocks to a spec's start until the next would pass
// maxFileBytes.
func fill(start string, block func(i int) string) []byte {
	var b strings.Builder
	b.WriteString(start)
	for i := 0; ; i++ {
		next := block(i)
		if b.Len()+len(next) > maxFileBytes {
			return []byte(b.String())
		}
		b.WriteString(next)
	}
}

// manyProjections fills the file with projections: the first ones with
// two checks each, up to maxExpressions, the others without.
func manyProjections() []byte {
	return fill("version: 1\nprojections:\n", func(i int) string {
		checks := ""
		if 2*(i+1) <= maxExpressions {
			checks = "    checks: ['b in [\"x\", \"y\", \"z\"]', 'a >= 0 && a < 1000']\n"
		}
		return fmt.Sprintf("  - name: p%d\n    entityTypes: [T%d]\n    item: {PK: S, a: N, b: S}\n%s    counters: [{key: \"K#{PK}#{b}\", values: {n: 1, s: a}}]\n", i, i, checks)
	})
}

// manyAttributes is a projection that declares 22,000 attributes, with
// as many checks as the file then holds, each reading one.
func manyAttributes() []byte {
	var b strings.Builder
	b.WriteString("version: 1\nprojections:\n  - name: p\n    entityTypes: [T]\n    item: {")
	for i := range 22_000 {
		fmt.Fprintf(&b, "a%d: S, ", i)
	}
	b.WriteString("n: int}\n    counters: [{key: K, values: {c: 1}}]\n    checks:\n")
	for i := 0; i < maxExpressions; i++ {
		check := fmt.Sprintf("      - a%d != \"\"\n", i)
		if b.Len()+len(check) > maxFileBytes {
			break
		}
		b.WriteString(check)
	}
	return []byte(b.String())
}

// expressionNodes is expressions of maxExprNodes nodes each, up to the
// spec's maxSpecExprNodes.
func expressionNodes() []byte {
	terms := (maxExprNodes - 3) / 2 // n + n + … + n > 0
	expr := strings.Repeat("n + ", terms-1) + "n > 0"
	var b strings.Builder
	b.WriteString("version: 1\nprojections:\n  - name: p\n    entityTypes: [T]\n    item: {n: int}\n    checks:\n")
	for i := 0; (i+1)*maxExprNodes <= maxSpecExprNodes; i++ {
		fmt.Fprintf(&b, "      - %q\n", expr)
	}
	b.WriteString("    counters: [{key: K, values: {c: 1}}]\n")
	return []byte(b.String())
}

// patterns is checks of the costliest patterns to compile for their
// patternCost (a case-folded rune repeated), four to a check, up to
// maxPatternCost.
func patterns() []byte {
	cost, _ := patternCost(`(?i)\x{10FFFF}{100}`)
	n := int(maxPatternCost / cost)
	var b strings.Builder
	b.WriteString("version: 1\nprojections:\n  - name: p\n    entityTypes: [T]\n    item: {s: S}\n    checks:\n")
	for i := 0; i < n; i += 4 {
		b.WriteString("      - '")
		for j := i; j < min(i+4, n); j++ {
			if j > i {
				b.WriteString(" || ")
			}
			fmt.Fprintf(&b, `s matches "(?i)\\x{10FFFF}{100}"`)
		}
		b.WriteString("'\n")
	}
	b.WriteString("    counters: [{key: K, values: {c: 1}}]\n")
	return []byte(b.String())
}

// aliases is a projection aliased as many times as maxExpressions allows
// (each alias compiles its expressions again: the aliases share its name,
// which is the spec's error), after a "billion laughs" of aliases, each
// level ten times the one before, within maxNodes.
func aliases() []byte {
	var b strings.Builder
	b.WriteString("version: 1\nx0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for k := 1; k <= 3; k++ {
		fmt.Fprintf(&b, "x%d: &a%d [%s]\n", k, k, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", k-1), 10), ", "))
	}
	// a3 stands for 11,111 values: three more lines of it, and the
	// projections' values, stay within maxNodes.
	b.WriteString("y: [*a3, *a3, *a3]\n")
	b.WriteString("projections:\n  - &p {name: p, entityTypes: [T], item: {a: N, b: S}, checks: ['b in [\"x\", \"y\"]', 'a >= 0 && a < 1000'], counters: [{key: K, values: {c: 1}}]}\n")
	for i := 1; 2*(i+1) <= maxExpressions; i++ {
		b.WriteString("  - *p\n")
	}
	return []byte(b.String())
}

// BenchmarkLoadWorst loads the specs at the limits of what load accepts
// (worstSpecs) and the stock spec, one sub-benchmark each, so that -count
// interleaves them: ns/op is the load time, B/op the memory it allocates.
func BenchmarkLoadWorst(b *testing.B) {
	for _, ws := range worstSpecs() {
		b.Run(ws.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Parse("worst.yaml", ws.data)
			}
			b.ReportMetric(float64(len(ws.data)), "file-bytes")
		})
	}
}

// TestWorstSpecs: the specs BenchmarkLoadWorst measures are at the limits
// and within them: those that may load do, the alias bomb only for its
// unknown fields.
func TestWorstSpecs(t *testing.T) {
	for _, ws := range worstSpecs() {
		_, err := Parse("worst.yaml", ws.data)
		switch {
		case ws.name == "aliases":
			if err == nil || strings.Contains(err.Error(), "values") {
				t.Errorf("%s: %v", ws.name, err)
			}
		case err != nil:
			t.Errorf("%s (%d bytes): %.600v", ws.name, len(ws.data), err)
		}
	}
}

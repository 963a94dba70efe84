package spec

import (
	"fmt"
	"regexp/syntax"

	"github.com/expr-lang/expr/ast"
)

// What a spec may cost to load, beyond its size (maxFileBytes) and its
// values (maxNodes): compiling its expressions, and the regular
// expressions of their matches. docs/projections-spec.md, "Cost", gives
// the worst accepted load time and memory, measured.
const (
	// maxExpressions bounds a spec's expressions, every alias counting
	// those it stands for: each costs a compilation.
	maxExpressions = 2000
	// maxSpecExprNodes bounds the nodes of all a spec's expressions.
	maxSpecExprNodes = 50_000
	// maxPatternCost bounds what compiling a spec's patterns costs, as
	// patternCost counts (about 10 ns a unit): the size of their programs,
	// each character class by its ranges.
	maxPatternCost = 2_000_000
)

// loadBudget is what a spec's expressions have cost to load so far.
type loadBudget struct {
	exprs, nodes int
	patterns     float64
}

// charge adds a parsed expression to the budget: an error if the spec
// goes over it.
func (b *loadBudget) charge(tree ast.Node) error {
	b.exprs++
	if b.exprs > maxExpressions {
		return fmt.Errorf("the spec has more than %d expressions, aliases counting those they stand for", maxExpressions)
	}
	c := &loadCounter{}
	ast.Walk(&tree, c)
	b.nodes += c.nodes
	if b.nodes > maxSpecExprNodes {
		return fmt.Errorf("with the expressions before it, the spec's expressions have more than %d nodes", maxSpecExprNodes)
	}
	for _, p := range c.patterns {
		cost, _ := patternCost(p)
		b.patterns += cost
		if b.patterns > maxPatternCost {
			return fmt.Errorf("with those before it, the spec's patterns cost more than %d to compile (%s costs %.0f: 16 an instruction of its program, a repetition what it repeats as many times, a character class also its ranges)",
				maxPatternCost, clip(p), cost)
		}
	}
	return nil
}

type loadCounter struct {
	nodes    int
	patterns []string
}

func (c *loadCounter) Visit(node *ast.Node) {
	c.nodes++
	if n, ok := (*node).(*ast.BinaryNode); ok && n.Operator == "matches" {
		if p, ok := n.Right.(*ast.StringNode); ok {
			c.patterns = append(c.patterns, p.Value)
		}
	}
}

// patternCost returns, from its syntax alone (without compiling it), what
// compiling regular expression p costs, in units of about 10 ns: each
// instruction of its program 16, each range of a character class one more
// in every instruction that holds it (the ranges are copied), and 8 for
// parsing each range; and how many instructions its program has at most,
// what matching it costs per byte. A pattern that does not parse costs 1:
// the checker reports it.
func patternCost(p string) (compile float64, insts int) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return 1, 1
	}
	parse, copies, i := regexpCost(re)
	return parse + copies, int(min(i, 1<<30))
}

// regexpCost returns what parsing re costs, what its program's
// instructions cost (as many times as repetitions copy them), and how many
// instructions it has.
func regexpCost(re *syntax.Regexp) (parse, copies, insts float64) {
	const inst = 16
	switch re.Op {
	case syntax.OpLiteral:
		n := float64(len(re.Rune))
		return n, n * inst, n
	case syntax.OpCharClass:
		ranges := float64(len(re.Rune) / 2)
		return 8 * ranges, inst + ranges, 1
	case syntax.OpRepeat:
		p, c, i := regexpCost(re.Sub[0])
		n := float64(max(re.Max, re.Min+1, 1))
		return p + 1, n*c + inst, n*i + 1
	}
	parse, copies, insts = 1, inst, 1
	for _, sub := range re.Sub {
		p, c, i := regexpCost(sub)
		parse += p
		copies += c
		insts += i
	}
	return parse, copies, insts
}

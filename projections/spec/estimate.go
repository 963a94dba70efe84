package spec

import (
	"github.com/expr-lang/expr/ast"
)

// estimate is what evaluating n may cost whatever the item: its loops run
// to their end, over collections whose size the expression alone fixes
// (ranges of constant bounds, array literals, repeat of constants, and
// variables bound to them), while the item's own values count as empty.
// An expression whose estimate is over the budget would stop on every
// item: load refuses it. The weights are the meter's (weight), so that
// what load accepts on this ground is what evaluation can run.
func estimate(n ast.Node) (steps, bytes float64) {
	e := estimator{}
	c := e.cost(n)
	return c.steps, c.bytes
}

// cost is an estimate: steps and bytes, and what is known of the value: an
// integer's value, or a collection's or string's size.
type cost struct {
	steps, bytes float64
	size         float64 // elements or bytes; 0 if unknown
	ival         *int64  // an integer known at load
}

type estimator struct {
	vars []estVar // let variables in scope, innermost last
}

type estVar struct {
	name string
	c    cost
}

func (e *estimator) lookup(name string) (cost, bool) {
	for i := len(e.vars) - 1; i >= 0; i-- {
		if e.vars[i].name == name {
			return e.vars[i].c, true
		}
	}
	return cost{}, false
}

// sum adds the costs of nodes to c.
func (e *estimator) sum(c *cost, nodes ...ast.Node) {
	for _, n := range nodes {
		if n == nil {
			continue
		}
		x := e.cost(n)
		c.steps += x.steps
		c.bytes += x.bytes
	}
}

func (e *estimator) cost(n ast.Node) cost {
	s, b := selfWeight(n)
	c := cost{steps: float64(s), bytes: float64(b)}
	switch n := n.(type) {
	case *ast.IntegerNode:
		v := int64(n.Value)
		c.ival = &v
	case *ast.StringNode:
		c.size = float64(len(n.Value))
	case *ast.BytesNode:
		c.size = float64(len(n.Value))
	case *ast.IdentifierNode:
		if v, ok := e.lookup(n.Value); ok {
			c.size, c.ival = v.size, v.ival
		}
	case *ast.UnaryNode:
		x := e.cost(n.Node)
		c.steps += x.steps
		c.bytes += x.bytes
		if x.ival != nil && (n.Operator == "-" || n.Operator == "+") {
			v := *x.ival
			if n.Operator == "-" {
				v = -v
			}
			c.ival = &v
		}
	case *ast.BinaryNode:
		l, r := e.cost(n.Left), e.cost(n.Right)
		c.steps += l.steps + r.steps
		c.bytes += l.bytes + r.bytes
		switch n.Operator {
		case "..":
			if l.ival != nil && r.ival != nil {
				size := max(float64(*r.ival)-float64(*l.ival)+1, 0)
				c.size = size
				if !isConstRange(n) { // else in its weight
					c.steps += size / 4
					c.bytes += size * 8
				}
			}
		case "+":
			if isText(n.Type()) {
				c.size = l.size + r.size
				c.steps += c.size / copyPerStep
				c.bytes += c.size
			}
		}
	case *ast.ArrayNode:
		e.sum(&c, n.Nodes...)
		c.size = float64(len(n.Nodes))
	case *ast.MapNode:
		e.sum(&c, n.Pairs...)
		c.size = float64(len(n.Pairs))
	case *ast.VariableDeclaratorNode:
		v := e.cost(n.Value)
		e.vars = append(e.vars, estVar{n.Name, v})
		x := e.cost(n.Expr)
		e.vars = e.vars[:len(e.vars)-1]
		c.steps += v.steps + x.steps
		c.bytes += v.bytes + x.bytes
		c.size, c.ival = x.size, x.ival
	case *ast.SequenceNode:
		for i, m := range n.Nodes {
			x := e.cost(m)
			c.steps += x.steps
			c.bytes += x.bytes
			if i == len(n.Nodes)-1 {
				c.size, c.ival = x.size, x.ival
			}
		}
	case *ast.BuiltinNode:
		return e.builtin(n)
	case *ast.PredicateNode:
		e.sum(&c, n.Node)
	case *ast.ConditionalNode:
		// Either branch may run: the dearer counts.
		cond, a, b := e.cost(n.Cond), e.cost(n.Exp1), e.cost(n.Exp2)
		c.steps += cond.steps + max(a.steps, b.steps)
		c.bytes += cond.bytes + max(a.bytes, b.bytes)
	case *ast.ChainNode:
		e.sum(&c, n.Node)
	case *ast.MemberNode:
		e.sum(&c, n.Node, n.Property)
	case *ast.SliceNode:
		e.sum(&c, n.Node, n.From, n.To)
	case *ast.CallNode:
		e.sum(&c, n.Arguments...)
		e.sum(&c, n.Callee)
	case *ast.PairNode:
		e.sum(&c, n.Key, n.Value)
	}
	return c
}

func (e *estimator) builtin(n *ast.BuiltinNode) cost {
	s, b := selfWeight(n)
	c := cost{steps: float64(s), bytes: float64(b)}
	args := make([]cost, len(n.Arguments))
	for i, a := range n.Arguments {
		if _, ok := a.(*ast.PredicateNode); ok {
			continue
		}
		args[i] = e.cost(a)
		c.steps += args[i].steps
		c.bytes += args[i].bytes
	}
	// A loop: its body, with what it weighs, as many times as the
	// collection has elements (all of them: a short cut depends on the
	// item).
	for _, a := range n.Arguments {
		p, ok := a.(*ast.PredicateNode)
		if !ok || len(args) == 0 {
			continue
		}
		body := e.cost(p.Node)
		iters := args[0].size
		c.steps += iters * (body.steps + iterSteps + callSteps)
		c.bytes += iters * (body.bytes + sliceBytes)
		switch n.Name {
		case "sortBy":
			c.steps += iters * sortFactor * (elemSteps + compareSteps)
			c.bytes += iters * 4 * sliceBytes
		case "groupBy":
			c.steps += iters * groupSteps
			c.bytes += iters * groupBytes
		}
		if n.Name == "map" || n.Name == "filter" || n.Name == "sortBy" {
			c.size = iters
		}
	}
	switch n.Name {
	case "repeat":
		if len(args) == 2 && args[1].ival != nil {
			c.size = args[0].size * float64(max(*args[1].ival, 0))
			c.steps += c.size / copyPerStep
			c.bytes += c.size
		}
	case "count", "sum":
		if len(n.Arguments) == 1 {
			c.steps += args[0].size * iterSteps
		}
	case "max", "min", "mean", "median", "sort", "uniq", "flatten", "reverse", "take", "concat", "join", "toJSON", "string":
		for _, a := range args {
			c.steps += a.size * elemSteps
		}
		if n.Name == "sort" || n.Name == "median" {
			for _, a := range args {
				c.steps += a.size * sortFactor * (elemSteps + compareSteps)
			}
		}
		if n.Name == "uniq" && len(args) == 1 {
			c.steps += args[0].size * args[0].size * elemSteps
		}
	}
	return c
}

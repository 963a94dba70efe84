package spec

import (
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// How an expression is bounded. expr (v1.17) has a memory budget for some
// of the values it builds and a limit on an expression's nodes, but no
// budget of steps and no context: a loop runs to its end. So every
// compiled expression is instrumented, in its syntax tree, before expr
// compiles it to bytecode (the tree is expr's public API: nothing of expr
// is patched or copied):
//
//   - the body of every loop (the predicate of all, filter, map, reduce,
//     sortBy, ...) first charges the meter with its own weight, so that
//     every iteration costs at least the nodes it evaluates, nested loops
//     multiply, and an item's steps are bounded whatever the loops;
//   - every operation whose cost depends on the size of its operands (a
//     comparison of strings or arrays, +, in, matches, contains, len of a
//     string, and the builtins that scan, copy or build strings and arrays:
//     repeat, replace, join, split, toJSON, sort, ...) charges the meter
//     with what its operands cost, before it runs, in steps and in bytes;
//   - every arithmetic result that may be a float is checked finite, and
//     every integer +, -, *, unary -, abs and sum checked not to overflow
//     the 64-bit integers, which expr would wrap around.
//
// The meter is an entry of the evaluation's environment under a name no
// expression can write, charged by a function no expression can name. A
// builtin, a method or a call the table below does not know is refused at
// load, so that nothing evaluates unmetered. And at load, an expression
// whose loops over constant ranges alone go over the budget is refused
// (estimate), as it would fail on every item.

// costOp says how a builtin's arguments are metered.
type costOp struct {
	op     int  // the meter operation; -1 for none
	args   int  // how many leading arguments it reads; 0 for all
	finite bool // the result may be a float: check it
	ifText bool // only when the first argument may be a string (len, int, float)
}

const noOp = -1

// builtinCosts are the builtins a spec may call, and how each is metered.
// The predicate builtins' loops are metered by their bodies; count and sum
// without a predicate loop over their argument.
var builtinCosts = map[string]costOp{
	"all": {op: noOp}, "none": {op: noOp}, "any": {op: noOp}, "one": {op: noOp},
	"filter": {op: noOp}, "map": {op: noOp}, "find": {op: noOp}, "findIndex": {op: noOp},
	"findLast": {op: noOp}, "findLastIndex": {op: noOp}, "reduce": {op: noOp},
	"groupBy": {op: noOp}, "sortBy": {op: noOp},
	"count": {op: opLoop, args: 1}, "sum": {op: opLoop, args: 1, finite: true},
	"len":  {op: opScan, ifText: true},
	"type": {op: noOp}, "abs": {op: noOp}, "ceil": {op: noOp}, "floor": {op: noOp}, "round": {op: noOp},
	"first": {op: noOp}, "last": {op: noOp},
	"bitand": {op: noOp}, "bitor": {op: noOp}, "bitxor": {op: noOp}, "bitnand": {op: noOp},
	"bitnot": {op: noOp}, "bitshl": {op: noOp}, "bitshr": {op: noOp}, "bitushr": {op: noOp},
	"get":    {op: opScan},
	"int":    {op: opScan, ifText: true},
	"float":  {op: opScan, ifText: true, finite: true},
	"string": {op: opJSON, args: 1}, "toJSON": {op: opJSON, args: 1},
	"fromJSON": {op: opFromJSON, args: 1},
	"toBase64": {op: opBase64, args: 1}, "fromBase64": {op: opBase64, args: 1},
	"trim":       {op: opTrim},
	"trimPrefix": {op: opScan}, "trimSuffix": {op: opScan},
	"indexOf": {op: opScan}, "lastIndexOf": {op: opScan}, "hasPrefix": {op: opScan}, "hasSuffix": {op: opScan},
	"upper": {op: opCase, args: 1}, "lower": {op: opCase, args: 1},
	"split": {op: opSplit, args: 2}, "splitAfter": {op: opSplit, args: 2},
	"replace": {op: opReplace, args: 3},
	"repeat":  {op: opRepeat, args: 2},
	"join":    {op: opJoin},
	"max":     {op: opDeep}, "min": {op: opDeep},
	"mean": {op: opDeep, finite: true}, "median": {op: opSort, args: 1, finite: true},
	"duration": {op: opScan}, "date": {op: opScan},
	"take":      {op: opConcat, args: 1},
	"reverse":   {op: opConcat, args: 1},
	"concat":    {op: opConcat},
	"fromPairs": {op: opCopy, args: 1}, "uniq": {op: opUniq, args: 1}, "flatten": {op: opCopy, args: 1},
	"sort": {op: opSort, args: 1},
}

// methodsAllowed are the methods an expression may call, by receiver type:
// those of the values date() and duration() return, each costing what its
// node does (a Format layout must be written in the expression).
var methodsAllowed = map[reflect.Type]map[string]bool{
	reflect.TypeOf(time.Time{}): set("Add", "AddDate", "After", "Before", "Compare", "Day", "Equal", "Format",
		"Hour", "IsZero", "Minute", "Month", "Nanosecond", "Round", "Second", "String", "Sub", "Truncate",
		"UTC", "Unix", "UnixMicro", "UnixMilli", "UnixNano", "Weekday", "Year", "YearDay"),
	reflect.TypeOf(time.Duration(0)): set("Abs", "Hours", "Microseconds", "Milliseconds", "Minutes",
		"Nanoseconds", "Round", "Seconds", "String", "Truncate"),
	reflect.TypeOf(time.Month(0)):   set("String"),
	reflect.TypeOf(time.Weekday(0)): set("String"),
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// shape checks a checked tree for what cannot be metered: a builtin or a
// method the tables do not know, a pattern of matches that is not a
// literal. It also collects the patterns, for the spec's regexp budget.
type shape struct {
	src      string
	err      error
	patterns []string
}

func (s *shape) fail(n ast.Node, format string, args ...any) {
	if s.err == nil {
		fe := &file.Error{Location: n.Location(), Message: fmt.Sprintf(format, args...)}
		s.err = exprError(fe.Bind(file.NewSource(s.src)))
	}
}

func (s *shape) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		if _, ok := builtinCosts[n.Name]; !ok {
			s.fail(n, "%s() is not available in a spec", n.Name)
		}
		// expr sums a range of constant bounds at compile time, as
		// (n - m + 1) * (m + n) / 2, wrapping around.
		if a, b, ok := constRangeSum(n); ok && b >= a {
			count := new(big.Int).Sub(big.NewInt(b), big.NewInt(a))
			count.Add(count, big.NewInt(1))
			total := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
			total.Mul(total, count)
			if !total.IsInt64() {
				s.fail(n, "%v: the sum is beyond the 64-bit integers", errIntOverflow)
			}
		}
	case *ast.BinaryNode:
		// expr computes an operation on literals at compile time,
		// wrapping around.
		if a, okA := intLiteral(n.Left); okA {
			if b, okB := intLiteral(n.Right); okB {
				op, arith := map[string]int64{"+": intAdd, "-": intSub, "*": intMul}[n.Operator]
				if arith && overflows(op, []any{a, b}) {
					s.fail(n, "%v: an operation on literals gives a number beyond the 64-bit integers", errIntOverflow)
				}
			}
		}
		if n.Operator == "matches" {
			p, ok := n.Right.(*ast.StringNode)
			if !ok {
				s.fail(n, "the pattern of matches must be a string literal")
				return
			}
			s.patterns = append(s.patterns, p.Value)
		}
	case *ast.CallNode:
		m, ok := n.Callee.(*ast.MemberNode)
		if !ok {
			s.fail(n, "%s is not a function a spec may call", n.Callee)
			return
		}
		name, _ := m.Property.(*ast.StringNode)
		if name == nil {
			s.fail(n, "%s is not a method a spec may call", m.Property)
			return
		}
		if !methodsAllowed[m.Node.Type()][name.Value] {
			s.fail(n, "%s() is not a method a spec may call", name.Value)
			return
		}
		for _, a := range n.Arguments {
			if isText(a.Type()) {
				if _, ok := a.(*ast.StringNode); !ok {
					s.fail(a, "the argument of %s must be a string literal", name.Value)
				}
			}
		}
	}
}

// instrumenter rewrites a checked tree so that its evaluation charges the
// meter (see above). It visits children before their parent (ast.Walk),
// so that a loop's body is instrumented before its weight is taken.
type instrumenter struct {
	texts  map[ast.Node]string // the operations' texts as written, for messages
	ints   map[ast.Node]bool   // the operations whose operands are ints (texter)
	lets   int                 // let names issued
	arith  []string            // the text of each arithmetic node checked finite
	insts  []int               // the program size of each pattern, in the order of shape.patterns
	nmatch int                 // patterns seen
}

func (v *instrumenter) name() string {
	v.lets++
	return fmt.Sprintf("\x00v%d", v.lets)
}

func meterIdent() ast.Node { return &ast.IdentifierNode{Value: meterName} }

// call is meterFunc(meter, op, args...).
func call(op int, args ...ast.Node) ast.Node {
	return &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: meterFunc},
		Arguments: append([]ast.Node{meterIdent(), &ast.IntegerNode{Value: op}}, args...),
	}
}

func ints(xs ...int64) []ast.Node {
	out := make([]ast.Node, len(xs))
	for i, x := range xs {
		out[i] = &ast.IntegerNode{Value: int(x)}
	}
	return out
}

// bind replaces *node by
//
//	let v1 = o1; ...; let vN = oN; (meterFunc(meter, op, consts..., v1, ..., vN); node)
//
// where o1 … oN, operands of node, are replaced by v1 … vN: the operands
// are evaluated in their order, then charged, then the operation runs on
// them.
func (v *instrumenter) bind(node *ast.Node, op int, consts []ast.Node, operands ...*ast.Node) {
	loc := (*node).Location()
	type let struct {
		name  string
		value ast.Node
	}
	lets := make([]let, len(operands))
	args := consts
	for i, o := range operands {
		name := v.name()
		lets[i] = let{name, *o}
		id := &ast.IdentifierNode{Value: name}
		id.SetLocation((*o).Location())
		*o = id
		args = append(args, &ast.IdentifierNode{Value: name})
	}
	var out ast.Node = &ast.SequenceNode{Nodes: []ast.Node{call(op, args...), *node}}
	for i := len(lets) - 1; i >= 0; i-- {
		out = &ast.VariableDeclaratorNode{Name: lets[i].name, Value: lets[i].value, Expr: out}
	}
	out.SetLocation(loc)
	*node = out
}

// after replaces *node by
//
//	let v = node; (meterFunc(meter, op, args..., v); v)
//
// charging or checking the node's value where the node was evaluated.
func (v *instrumenter) after(node *ast.Node, op int, args ...ast.Node) {
	loc := (*node).Location()
	name := v.name()
	out := &ast.VariableDeclaratorNode{Name: name, Value: *node, Expr: &ast.SequenceNode{Nodes: []ast.Node{
		call(op, append(args, &ast.IdentifierNode{Value: name})...),
		&ast.IdentifierNode{Value: name},
	}}}
	out.SetLocation(loc)
	*node = out
}

// finite checks the value of *node finite, naming it by the text of n,
// the operation it is (or wraps).
func (v *instrumenter) finite(node *ast.Node, n ast.Node) {
	v.after(node, opFinite, &ast.IntegerNode{Value: int(v.textOf(n))})
}

// textOf records the text of n, an arithmetic operation, for the messages
// of its checks, and returns its index.
func (v *instrumenter) textOf(n ast.Node) int64 {
	text, ok := v.texts[n]
	if !ok {
		text = n.String()
	}
	v.arith = append(v.arith, text)
	return int64(len(v.arith) - 1)
}

// texter records, before the instrumentation rewrites their children,
// the text of the operations it may check finite: of those of at most
// maxTextNodes nodes (expr renders a node by rendering its children, so
// that rendering every node of a long chain would be cubic), else their
// operator and position.
type texter struct {
	texts map[ast.Node]string
	sizes map[ast.Node]int // nodes in each subtree
	lines []int            // the rune offset of each line's start
	// ints holds the operations whose operands are all ints (not int64s,
	// durations or values of unknown type), as the checker typed them.
	ints map[ast.Node]bool
}

const maxTextNodes = 32

func newTexter(src string) *texter {
	t := &texter{texts: map[ast.Node]string{}, sizes: map[ast.Node]int{}, lines: []int{0}, ints: map[ast.Node]bool{}}
	i := 0
	for _, r := range src {
		i++
		if r == '\n' {
			t.lines = append(t.lines, i)
		}
	}
	return t
}

// position renders a rune offset as expr does: (line:column), from 1.
func (t *texter) position(from int) string {
	line := sort.SearchInts(t.lines, from+1) - 1
	return fmt.Sprintf("(%d:%d)", line+1, from-t.lines[line]+1)
}

func (t *texter) Visit(node *ast.Node) {
	n := *node
	size := 1
	for _, c := range children(n) {
		size += t.sizes[c]
	}
	t.sizes[n] = size
	var op string
	switch n := n.(type) {
	case *ast.BinaryNode:
		op = n.Operator
		t.ints[n] = isInt(n.Left.Type()) && isInt(n.Right.Type())
	case *ast.BuiltinNode:
		op = n.Name + "()"
		t.ints[n] = len(n.Arguments) == 1 && isInt(n.Arguments[0].Type())
	case *ast.UnaryNode:
		t.ints[n] = isInt(n.Node.Type())
		return
	default:
		return
	}
	if size <= maxTextNodes {
		t.texts[n] = n.String()
		return
	}
	t.texts[n] = "the " + op + " " + t.position(n.Location().From)
}

// children returns n's children, as ast.Walk visits them.
func children(n ast.Node) []ast.Node {
	switch n := n.(type) {
	case *ast.UnaryNode:
		return []ast.Node{n.Node}
	case *ast.BinaryNode:
		return []ast.Node{n.Left, n.Right}
	case *ast.ChainNode:
		return []ast.Node{n.Node}
	case *ast.MemberNode:
		return []ast.Node{n.Node, n.Property}
	case *ast.SliceNode:
		return []ast.Node{n.Node, n.From, n.To}
	case *ast.CallNode:
		return append([]ast.Node{n.Callee}, n.Arguments...)
	case *ast.BuiltinNode:
		return n.Arguments
	case *ast.PredicateNode:
		return []ast.Node{n.Node}
	case *ast.VariableDeclaratorNode:
		return []ast.Node{n.Value, n.Expr}
	case *ast.SequenceNode:
		return n.Nodes
	case *ast.ConditionalNode:
		return []ast.Node{n.Cond, n.Exp1, n.Exp2}
	case *ast.ArrayNode:
		return n.Nodes
	case *ast.MapNode:
		return n.Pairs
	case *ast.PairNode:
		return []ast.Node{n.Key, n.Value}
	}
	return nil
}

func (v *instrumenter) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		v.binary(node, n)
	case *ast.MemberNode:
		if !isLiteral(n.Property) && mayBeText(n.Property.Type()) {
			v.after(&n.Property, opScan)
		}
	case *ast.BuiltinNode:
		v.builtin(node, n)
	case *ast.UnaryNode:
		switch {
		case n.Operator != "-" || isLiteral(n.Node):
		case isInt(n.Type()) && v.ints[n]:
			*node = v.intOp(n, intNeg, n.Node, &ast.IntegerNode{})
		case mayBeInteger(n.Type()):
			v.bind(node, opInt, ints(v.textOf(n), intNeg), &n.Node)
		}
	}
}

// intOp is intFunc(meter, text, op, a, b): the integer operation op of a
// and b, checked not to overflow, in n's place (whose text it keeps).
func (v *instrumenter) intOp(n ast.Node, op int64, a, b ast.Node) ast.Node {
	out := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: intFunc},
		Arguments: append(append([]ast.Node{meterIdent()}, ints(v.textOf(n), op)...), a, b),
	}
	out.SetLocation(n.Location())
	return out
}

func (v *instrumenter) binary(node *ast.Node, n *ast.BinaryNode) {
	t := n.Type()
	switch n.Operator {
	case "==", "!=", "<", ">", "<=", ">=":
		if isScalarLiteral(n.Left) || isScalarLiteral(n.Right) || (isCheap(n.Left.Type()) && isCheap(n.Right.Type())) {
			return
		}
		v.bind(node, opDeep, nil, &n.Left, &n.Right)
	case "in":
		switch {
		case isConstArray(n.Right) || isConstRange(n.Right):
			if !isLiteral(n.Left) && !isCheap(n.Left.Type()) {
				v.bind(node, opScan, nil, &n.Left)
			}
		default:
			v.bind(node, opDeep, nil, &n.Left, &n.Right)
		}
	case "+", "-", "*":
		op := map[string]int64{"+": intAdd, "-": intSub, "*": intMul}[n.Operator]
		switch {
		case isLiteral(n.Left) && isLiteral(n.Right):
			// Refused at load if it overflows (shape).
		case isInt(t) && v.ints[n]:
			// Of two ints: the operation itself, checked.
			*node = v.intOp(n, op, n.Left, n.Right)
		case n.Operator == "+" && mayBeText(t):
			v.bind(node, opPlus, ints(v.textOf(n)), &n.Left, &n.Right)
		case mayBeInteger(t):
			// Of int64s, durations or values of unknown type: checked
			// beside the operation.
			v.bind(node, opInt, ints(v.textOf(n), op), &n.Left, &n.Right)
		}
		if mayBeFloat(t) {
			v.finite(node, n)
		}
	case "/", "**", "^", "%":
		if mayBeFloat(t) {
			v.finite(node, n)
		}
	case "..":
		if !isConstRange(n) {
			v.bind(node, opRange, nil, &n.Left, &n.Right)
		}
	case "matches":
		insts := 1
		if v.nmatch < len(v.insts) {
			insts = v.insts[v.nmatch]
		}
		v.nmatch++
		if !isLiteral(n.Left) {
			v.bind(node, opMatch, ints(int64(insts)), &n.Left)
		}
	case "contains", "startsWith", "endsWith":
		var ops []*ast.Node
		for _, o := range []*ast.Node{&n.Left, &n.Right} {
			if !isLiteral(*o) {
				ops = append(ops, o)
			}
		}
		if len(ops) > 0 {
			v.bind(node, opScan, nil, ops...)
		}
	}
}

func (v *instrumenter) builtin(node *ast.Node, n *ast.BuiltinNode) {
	for i, a := range n.Arguments {
		p, ok := a.(*ast.PredicateNode)
		if !ok {
			continue
		}
		steps, bytes := weight(p.Node)
		steps += iterSteps
		bytes += sliceBytes
		switch n.Name {
		case "sortBy":
			// The element and its key, each in an array that grows, and
			// the key compared.
			v.after(&p.Node, opKey, ints(steps+sortFactor*compareSteps, bytes+4*sliceBytes, sortFactor)...)
		case "groupBy":
			v.after(&p.Node, opKey, ints(steps+groupSteps, bytes+groupBytes, 1)...)
		default:
			p.Node = &ast.SequenceNode{Nodes: []ast.Node{call(opTick, ints(steps, bytes)...), p.Node}}
		}
		n.Arguments[i] = p
	}
	switch {
	case n.Name == "sum" && len(n.Arguments) == 2 && mayBeInt(n.Type()):
		// sum(a, predicate) adds the predicate's values: as
		// sum(map(a, predicate)), its integer sum is checked below.
		n.Arguments = []ast.Node{&ast.BuiltinNode{Name: "map", Arguments: n.Arguments}}
	case n.Name == "abs" && len(n.Arguments) == 1 && isInt(n.Type()) && v.ints[n]:
		// abs of the least integer has no 64-bit result, as its negation.
		*node = v.intOp(n, intAbs, n.Arguments[0], &ast.IntegerNode{})
		return
	case n.Name == "abs" && len(n.Arguments) == 1 && mayBeInteger(n.Type()):
		v.bind(node, opInt, ints(v.textOf(n), intAbs), &n.Arguments[0])
		return
	case n.Name == "int" && len(n.Arguments) == 1 && mayBeFloat(n.Arguments[0].Type()):
		// A float beyond the 64-bit integers converts to what the machine
		// makes of it: refused. (The text it may be is charged too.)
		v.bind(node, opToInt, ints(v.textOf(n)), &n.Arguments[0])
		return
	}
	c := builtinCosts[n.Name]
	switch {
	case c.op == noOp:
	case (n.Name == "count" || n.Name == "sum") && len(n.Arguments) != 1:
	case (n.Name == "count" || n.Name == "sum") && isConstRange(n.Arguments[0]):
	case c.ifText && (len(n.Arguments) == 0 || !mayBeText(n.Arguments[0].Type())):
	default:
		k := len(n.Arguments)
		if c.args > 0 {
			k = min(k, c.args)
		}
		ops := make([]*ast.Node, k)
		for i := range ops {
			ops[i] = &n.Arguments[i]
		}
		switch {
		case n.Name == "sum" && mayBeInt(n.Type()):
			v.bind(node, opSum, ints(v.textOf(n)), ops...)
		case k > 0:
			v.bind(node, c.op, nil, ops...)
		}
	}
	if c.finite && mayBeFloat(n.Type()) {
		v.finite(node, n)
	}
}

// weight is what evaluating n's nodes once costs, without its loops: the
// steps of its nodes and calls, and of its literal strings by their
// length; in memory, the arrays, maps and ranges of constant bounds it
// builds.
func weight(n ast.Node) (steps, bytes int64) {
	w := &weigher{}
	ast.Walk(&n, w)
	return w.steps, w.bytes
}

type weigher struct{ steps, bytes int64 }

func (w *weigher) Visit(node *ast.Node) {
	s, b := selfWeight(*node)
	w.steps = satAdd(w.steps, s)
	w.bytes = satAdd(w.bytes, b)
}

// selfWeight is what evaluating node costs, its children aside.
func selfWeight(node ast.Node) (steps, bytes int64) {
	steps = nodeSteps
	switch n := node.(type) {
	case *ast.StringNode:
		steps += int64(len(n.Value) / bytesPerStep)
	case *ast.BytesNode:
		steps += int64(len(n.Value) / bytesPerStep)
	case *ast.ArrayNode:
		// An allocation, and each element boxed: about 100 ns an element.
		steps += int64(len(n.Nodes)) * 10
		bytes += int64(len(n.Nodes)) * 2 * sliceBytes
	case *ast.MapNode:
		steps += int64(len(n.Pairs)) * 20
		bytes += int64(len(n.Pairs)) * 4 * sliceBytes
	case *ast.BuiltinNode:
		steps += callSteps
		if n.Name == "date" || n.Name == "duration" {
			// Parsing text as a time: about a microsecond.
			steps += 10 * callSteps
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == intFunc {
			// A checked integer operation: one call, whose three constant
			// arguments (meter, text, operation) cost nothing more.
			steps += callSteps - 3*nodeSteps
			break
		}
		// A method of a time (Format the dearest): by reflection.
		steps += 10 * callSteps
	case *ast.BinaryNode:
		if a, b, ok := constRange(n); ok {
			size := rangeLen(a, b)
			steps = satAdd(steps, size/4)
			bytes = satAdd(bytes, satMul(size, 8))
		}
	}
	return steps, bytes
}

func isLiteral(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode, *ast.BytesNode:
		return true
	case *ast.UnaryNode:
		return (n.Operator == "-" || n.Operator == "+") && isLiteral(n.Node)
	}
	return false
}

// isScalarLiteral reports a literal other than bytes: what compares with
// anything in time bounded by the literal.
func isScalarLiteral(n ast.Node) bool {
	_, bytes := n.(*ast.BytesNode)
	return isLiteral(n) && !bytes
}

func isConstArray(n ast.Node) bool {
	a, ok := n.(*ast.ArrayNode)
	if !ok {
		return false
	}
	for _, e := range a.Nodes {
		if !isLiteral(e) {
			return false
		}
	}
	return true
}

func isConstRange(n ast.Node) bool {
	_, _, ok := constRange(n)
	return ok
}

// constRange returns the bounds of a range a..b written with integer
// literals.
// constRangeSum reports sum(m..n) of constant bounds, and the bounds.
// (With a predicate, the sum is instrumented, which keeps expr from
// computing it at compile time.)
func constRangeSum(n *ast.BuiltinNode) (a, b int64, ok bool) {
	if n.Name != "sum" || len(n.Arguments) != 1 {
		return 0, 0, false
	}
	return constRange(n.Arguments[0])
}

func constRange(n ast.Node) (a, b int64, ok bool) {
	r, isBin := n.(*ast.BinaryNode)
	if !isBin || r.Operator != ".." {
		return 0, 0, false
	}
	a, okA := intLiteral(r.Left)
	b, okB := intLiteral(r.Right)
	return a, b, okA && okB
}

func intLiteral(n ast.Node) (int64, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return int64(n.Value), true
	case *ast.UnaryNode:
		if x, ok := intLiteral(n.Node); ok {
			switch n.Operator {
			case "-":
				return -x, true
			case "+":
				return x, true
			}
		}
	}
	return 0, false
}

// isCheap reports a type whose values compare in constant time: numbers,
// bools, times and durations.
func isCheap(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return t == reflect.TypeOf(time.Time{})
}

func isUnknown(t reflect.Type) bool { return t == nil || t.Kind() == reflect.Interface }

func isText(t reflect.Type) bool {
	return t != nil && (t.Kind() == reflect.String || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8)
}

func mayBeText(t reflect.Type) bool { return isUnknown(t) || isText(t) }

func mayBeInt(t reflect.Type) bool { return isUnknown(t) || isInt(t) }

func isInt(t reflect.Type) bool { return t != nil && t.Kind() == reflect.Int }

// mayBeInteger reports a type whose values may be signed integers of 64
// bits: ints, int64s and durations among them.
func mayBeInteger(t reflect.Type) bool {
	return isUnknown(t) || t.Kind() == reflect.Int || t.Kind() == reflect.Int64
}

func mayBeFloat(t reflect.Type) bool {
	return isUnknown(t) || t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32
}

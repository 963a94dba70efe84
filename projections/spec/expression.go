package spec

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/parser/lexer"
	exprtypes "github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// An expression is a compiled condition or check: an expr-lang
// expression of type bool over the projection's declared attributes.
type expression struct {
	src   string // as written
	canon string // its tokens, one space apart: the form fingerprints hash
	prg   *vm.Program
	// steps and bytes are what evaluating it costs the meter, loops
	// aside (they charge their own).
	steps, bytes int64
	// arith are the texts of its arithmetic operations checked finite,
	// by the index the program passes.
	arith []string
	// estSteps and estBytes are what it may cost whatever the item
	// (estimate).
	estSteps, estBytes float64
	// field and line are where the spec writes it.
	field string
	line  int
}

// disabledBuiltins are expr functions a projection may not call: they
// would make it depend on the clock, the machine's time zone database or
// a map's iteration order, and a projection must be pure.
var disabledBuiltins = []string{"now", "timezone", "keys", "values", "toPairs"}

// exprKeywords are words expr reserves, which cannot name a variable.
var exprKeywords = map[string]bool{
	"true": true, "false": true, "nil": true, "and": true, "or": true, "not": true,
	"in": true, "matches": true, "contains": true, "startsWith": true, "endsWith": true,
	"let": true, "if": true, "else": true,
}

// builtinNames are expr's functions, which a variable would shadow.
var builtinNames = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range builtin.Builtins {
		m[f.Name] = true
	}
	return m
}()

// exprType is the type expressions see for a declared attribute (see
// toNative); an optional one may be nil and is typed any.
func exprType(v *variable) exprtypes.Type {
	if v.optional {
		return exprtypes.Any
	}
	switch v.typ {
	case typeS:
		return exprtypes.String
	case typeN:
		return exprtypes.Float64
	case typeInt:
		return exprtypes.Int
	case typeBOOL:
		return exprtypes.Bool
	case typeB:
		return exprtypes.TypeOf([]byte(nil))
	case typeSS:
		return exprtypes.TypeOf([]string(nil))
	case typeNS:
		return exprtypes.TypeOf([]float64(nil))
	case typeBS:
		return exprtypes.TypeOf([][]byte(nil))
	case typeL:
		return exprtypes.TypeOf([]any(nil))
	case typeM:
		return exprtypes.TypeOf(map[string]any(nil))
	}
	return exprtypes.Any
}

// compileExpr compiles src against the declared variables, marking the
// ones it reads. The error is expr's own message with its position, or
// what makes the expression impure or unbounded. The compiled program is
// instrumented (see instrument.go): evaluated with a meter, it stops at
// the budget.
func compileExpr(src string, vars []variable, index map[string]int, b *loadBudget) (e *expression, err error) {
	defer func() {
		// expr reports errors as errors; this is a guard, so that no
		// spec can make loading panic.
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("the expression library failed on it: %v", r)
		}
	}()
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty")
	}
	// The environment holds the variables the expression names, so that
	// compiling it costs what it is, however many the projection
	// declares.
	toks, err := lexer.Lex(file.NewSource(src))
	if err != nil {
		return nil, exprError(err)
	}
	env := exprtypes.Map{meterName: exprtypes.Any}
	var read []int // the variables it reads
	for _, t := range toks {
		if t.Kind != lexer.Identifier {
			continue
		}
		if t.Value == "$env" {
			return nil, errors.New("$env is not available in a spec: name the declared attributes")
		}
		if i, ok := index[t.Value]; ok {
			if _, seen := env[t.Value]; !seen {
				env[t.Value] = exprType(&vars[i])
				read = append(read, i)
			}
		}
	}
	config := conf.CreateNew()
	opts := []expr.Option{expr.Env(env), expr.AsBool(), expr.MaxNodes(maxExprNodes), expr.Function(meterFunc, meterCall),
		expr.Function(intFunc, intCall, new(func(any, int, int, int, int) int))}
	for _, b := range disabledBuiltins {
		opts = append(opts, expr.DisableBuiltin(b))
	}
	for _, o := range opts {
		o(config)
	}
	for name := range config.Disabled {
		delete(config.Builtins, name)
	}
	tree, err := parser.ParseWithConfig(src, config)
	if err != nil {
		return nil, exprError(err)
	}
	// What compiling it costs, before anything compiles its patterns.
	if err := b.charge(tree.Node); err != nil {
		return nil, err
	}
	// Before the checker and the optimiser rewrite anything.
	impure := &impurity{}
	ast.Walk(&tree.Node, impure)
	if impure.err != nil {
		return nil, impure.err
	}
	if _, err := checker.Check(tree, config); err != nil {
		return nil, exprError(err)
	}
	sh := &shape{src: src}
	ast.Walk(&tree.Node, sh)
	if sh.err != nil {
		return nil, sh.err
	}
	estSteps, estBytes := estimate(tree.Node)
	if estSteps > maxSteps || estBytes > maxBytes {
		return nil, fmt.Errorf("it may take %s", describeLimit(estSteps, estBytes))
	}
	texts := newTexter(src)
	ast.Walk(&tree.Node, texts)
	inst := &instrumenter{texts: texts.texts, ints: texts.ints}
	for _, p := range sh.patterns {
		_, insts := patternCost(p)
		inst.insts = append(inst.insts, insts)
	}
	ast.Walk(&tree.Node, inst)
	if _, err := checker.Check(tree, config); err != nil {
		return nil, fmt.Errorf("the expression cannot be metered: %v", exprError(err))
	}
	if err := optimizer.Optimize(&tree.Node, config); err != nil {
		return nil, exprError(err)
	}
	// The optimiser computes operations on literals: 1 / 0 is +Inf
	// before any item comes.
	nf := &notFinite{src: src}
	ast.Walk(&tree.Node, nf)
	if nf.err != nil {
		return nil, nf.err
	}
	prg, err := compiler.Compile(tree, config)
	if err != nil {
		return nil, exprError(err)
	}
	steps, bytes := weight(tree.Node)
	for _, i := range read {
		vars[i].inExpr = true
	}
	canon := make([]string, 0, len(toks))
	for _, t := range toks {
		switch t.Kind {
		case lexer.EOF:
			continue
		case lexer.String:
			canon = append(canon, strconv.Quote(t.Value))
		case lexer.Bytes:
			canon = append(canon, "b"+strconv.Quote(t.Value))
		case lexer.Identifier:
			canon = append(canon, t.Value)
		default:
			canon = append(canon, t.Value)
		}
	}
	return &expression{src: src, canon: strings.Join(canon, " "), prg: prg, steps: steps, bytes: bytes, arith: inst.arith,
		estSteps: estSteps, estBytes: estBytes}, nil
}

// notFinite finds a literal number that is not finite, as the optimiser
// computes 1 / 0 or 10 ** 400.
type notFinite struct {
	src string
	err error
}

func (v *notFinite) Visit(node *ast.Node) {
	var f float64
	switch n := (*node).(type) {
	case *ast.FloatNode:
		f = n.Value
	case *ast.ConstantNode:
		f, _ = n.Value.(float64)
	default:
		return
	}
	if v.err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		fe := &file.Error{Location: (*node).Location(), Message: fmt.Sprintf("an operation on literals gives %v, %v", f, errNotFinite)}
		v.err = exprError(fe.Bind(file.NewSource(v.src)))
	}
}

var errDateZone = errors.New("date() with a time zone depends on the machine's time zone database: write times with their offset, or in UTC")

// impurity finds, before the expression is optimised, what would make it
// depend on the machine: a time zone named to date() (it needs the
// machine's zoneinfo) and the Local method of a time (the machine's zone).
type impurity struct{ err error }

func (v *impurity) Visit(node *ast.Node) {
	if v.err != nil {
		return
	}
	switch n := (*node).(type) {
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == "date" && len(n.Arguments) > 2 {
			v.err = errDateZone
		}
	case *ast.BuiltinNode:
		if n.Name == "date" && len(n.Arguments) > 2 {
			v.err = errDateZone
		}
	case *ast.MemberNode:
		if p, ok := n.Property.(*ast.StringNode); ok && (p.Value == "Local" || p.Value == "In") {
			v.err = fmt.Errorf("%s() depends on the machine's time zone", p.Value)
		}
	}
}

// maxExprNodes bounds an expression's size (expr's default).
const maxExprNodes = 10000

// exprError renders an expr error on one line: its message and where in
// the expression.
func exprError(err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := fe.Message
		if fe.Line > 0 {
			msg = fmt.Sprintf("%s (%d:%d)", msg, fe.Line, fe.Column+1)
		}
		return errors.New(msg)
	}
	return err
}

// eval runs e over env, charging m (which env holds as meterName). A
// result that is not a bool is an error. An error's message is expr's,
// without the position: the caller shows the expression. An evaluation
// the meter stops is a *limitError.
func (e *expression) eval(env map[string]any, m *meter) (bool, error) {
	m.e = e
	if err := m.charge(e.steps, e.bytes); err != nil {
		return false, err
	}
	out, err := expr.Run(e.prg, env)
	if err != nil {
		var le *limitError
		if errors.As(err, &le) {
			return false, le
		}
		var fe *file.Error
		if errors.As(err, &fe) {
			return false, errors.New(fe.Message)
		}
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("want true or false, got %s", describeNative(out))
	}
	return b, nil
}

func describeNative(x any) string {
	if x == nil {
		return "nil"
	}
	return reflect.TypeOf(x).String()
}

package spec

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/tributary/tributary/pipeline"
)

// Evaluation budget. Every evaluation of a projection's expressions on one
// item is metered: the work its nodes, its loops and its size-dependent
// operations do, in steps, and the memory the values they build take, in
// bytes. An item whose evaluation would go over either is that record's
// permanent error, naming the expression; no expression can run longer
// than the budget, whatever its shape. The figures are deterministic (they
// depend on the item and the spec, never on the machine or the clock), so
// an item fails or passes the same way everywhere, on every replay.
//
// A step is about 10 ns of work (docs/projections-spec.md gives the
// measured worst case of a whole budget).
const (
	// maxSteps is an item's budget of steps, for all of one projection's
	// expressions together.
	maxSteps = 1 << 20
	// maxBytes is an item's budget of memory for the values its
	// expressions build.
	maxBytes = 8 << 20
	// nodeSteps is what evaluating one node of an expression costs.
	nodeSteps = 3
	// callSteps is what a call of a builtin or a method, or of the meter,
	// costs beyond its node.
	callSteps = 10
	// iterSteps is what one iteration of a loop costs beyond its body.
	iterSteps = 16
	// elemSteps is what one element of a collection costs to visit,
	// compare, hash or copy.
	elemSteps = 3
	// bytesPerStep is how many bytes of text one step scans, compares or
	// hashes (counting runes, the slowest, about 1.3 ns a byte), and
	// copyPerStep how many it copies into a new value.
	bytesPerStep = 8
	copyPerStep  = 32
	// sortFactor is how many times a sort compares an element: for a sort
	// of up to a million elements (expr's memory budget), and
	// compareSteps what a comparison costs.
	sortFactor   = 20
	compareSteps = 5
	// sliceBytes is what one element of an array costs in memory (an
	// interface value).
	sliceBytes = 16
	// groupSteps and groupBytes are what an element costs groupBy beyond
	// its iteration: an entry of a map and an array.
	groupSteps, groupBytes = 50, 128
)

// errBudget is an evaluation stopped because it went over its budget.
var errBudget = errors.New("evaluation stopped")

// errNotFinite is an arithmetic result that is not a finite number (a
// division by zero, an overflow): it would compare as no number does.
var errNotFinite = errors.New("not a finite number")

// errIntOverflow is an integer operation whose result is beyond the 64-bit
// integers: expr would wrap it around, to a number of the other sign.
var errIntOverflow = errors.New("integer overflow")

// A limitError is an evaluation the meter stopped: over budget, or a
// result not finite. It is permanent: the same item fails the same way
// every time.
type limitError struct {
	err error // errBudget or errNotFinite, wrapped with the details
}

func (e *limitError) Error() string { return e.err.Error() }
func (e *limitError) Unwrap() []error {
	return []error{e.err, pipeline.ErrPermanent}
}

// meter is the account of one item's evaluation by one projection.
type meter struct {
	steps, bytes int64
	e            *expression // the expression being evaluated
}

// charge adds to the account; over the budget, the evaluation stops.
func (m *meter) charge(steps, bytes int64) error {
	m.steps = satAdd(m.steps, steps)
	m.bytes = satAdd(m.bytes, bytes)
	switch {
	case m.bytes > maxBytes:
		return &limitError{fmt.Errorf("%w: it builds values of more than the %d bytes an item may take", errBudget, maxBytes)}
	case m.steps > maxSteps:
		return &limitError{fmt.Errorf("%w: it takes more than the %d steps an item may take", errBudget, maxSteps)}
	}
	return nil
}

// left is the steps the account has left, at least 0.
func (m *meter) left() int64 { return max(maxSteps-m.steps, 0) }

// rangeLen is how many integers a..b holds, at most math.MaxInt64.
func rangeLen(a, b int64) int64 {
	if b < a {
		return 0
	}
	if d := uint64(b) - uint64(a); d < math.MaxInt64 {
		return int64(d) + 1
	}
	return math.MaxInt64
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// The operations the instrumented program reports to the meter (meterFunc's
// second argument). Each names how the operands it passes cost.
const (
	opTick     = iota // a loop iteration: steps, bytes (constants)
	opKey             // a sortBy or groupBy iteration: steps, bytes, factor, the key
	opLoop            // count(a) or sum(a): a loop over a's elements
	opUniq            // uniq(a): every element compared with those kept
	opScan            // operands scanned once: strings by length, collections by elements
	opDeep            // operands walked whole: compared, hashed, sorted or copied
	opSort            // an array sorted
	opCopy            // operands walked whole and copied into a new array
	opConcat          // a + b of texts or arrays, and the builtins that concatenate
	opPlus            // a + b of values that may be texts or integers: the index of its text, a, b
	opRepeat          // repeat(s, n)
	opReplace         // replace(s, old, new)
	opSplit           // split(s, sep[, n]) and splitAfter
	opCase            // upper(s), lower(s)
	opTrim            // trim(s, cutset)
	opJoin            // join(array[, glue])
	opJSON            // toJSON(x), string(x)
	opFromJSON        // fromJSON(s)
	opBase64          // toBase64(s), fromBase64(s)
	opRange           // a..b
	opMatch           // s matches pattern: the program's size (a constant), s
	opFinite          // an arithmetic result: the index of its text, the value
	opInt             // an integer operation: the index of its text, the operation (intAdd, ...), the operands
	opSum             // sum(a): a loop over a's elements, whose integer sum must not overflow; the index of its text, a
	opToInt           // int(x): the index of its text, x (a float must be within the 64-bit integers)
)

// The integer operations opInt checks.
const (
	intAdd = iota
	intSub
	intMul
	intNeg
	intAbs
)

// meterName is the environment entry of an evaluation's *meter, and
// meterFunc the function the instrumented program calls to charge it:
// names no expression can write.
const (
	meterName = "\x00meter"
	meterFunc = "\x00charge"
)

// intFunc is the function an instrumented program calls for an integer
// operation (intCall): a name no expression can write.
const intFunc = "\x00int"

// intCall is the function behind intFunc: intFunc(meter, text, op, a, b)
// is the integer operation op (intAdd, ...; b unused by intNeg and intAbs)
// of a and b, or the error that stops the evaluation where the result is
// beyond the 64-bit integers. It never panics on a value of an unexpected
// type.
func intCall(args ...any) (any, error) {
	if len(args) != 5 {
		return nil, errors.New("int: want 5 arguments")
	}
	m, _ := args[0].(*meter)
	op, _ := args[2].(int)
	a, ok := asInt(args[3])
	b, ok2 := asInt(args[4])
	if !ok || !ok2 {
		return nil, fmt.Errorf("int: operands %T and %T", args[3], args[4])
	}
	if overflows(int64(op), []any{a, b}) {
		return nil, m.overflow(args[1])
	}
	switch op {
	case intAdd:
		return int(a + b), nil
	case intSub:
		return int(a - b), nil
	case intMul:
		return int(a * b), nil
	case intNeg:
		return int(-a), nil
	case intAbs:
		return int(max(a, -a)), nil
	}
	return nil, fmt.Errorf("int: unknown operation %d", op)
}

// meterCall is the function behind meterFunc. Its arguments are the
// meter, an operation and the operation's operands; it returns true, or
// the error that stops the evaluation. It never panics on a value of an
// unexpected type: such a value costs what its shallow size says.
func meterCall(args ...any) (any, error) {
	if len(args) < 2 {
		return nil, errors.New("meter: too few arguments")
	}
	m, ok := args[0].(*meter)
	op, ok2 := args[1].(int)
	if !ok || !ok2 || m == nil {
		return nil, errors.New("meter: bad arguments")
	}
	x := args[2:]
	arg := func(i int) any {
		if i < len(x) {
			return x[i]
		}
		return nil
	}
	steps, bytes := int64(callSteps), int64(0)
	switch op {
	case opTick:
		steps, bytes = satAdd(steps, toInt64(arg(0))), toInt64(arg(1))
	case opKey:
		steps, bytes = satAdd(steps, toInt64(arg(0))), toInt64(arg(1))
		d := deepSize(arg(3), m.left())
		steps = satAdd(steps, satMul(d.steps(), toInt64(arg(2))))
	case opLoop:
		steps = satAdd(steps, satMul(shallowLen(arg(0)), iterSteps))
	case opUniq:
		n := shallowLen(arg(0))
		d := deepSize(arg(0), m.left())
		steps = satAdd(steps, satAdd(d.steps(), satMul(satMul(n, n), elemSteps)))
		bytes = satMul(n, sliceBytes)
	case opScan:
		for _, v := range x {
			steps = satAdd(steps, shallowSteps(v))
		}
	case opDeep:
		for _, v := range x {
			steps = satAdd(steps, deepSize(v, m.left()).steps())
		}
	case opSort:
		d := deepSize(arg(0), m.left())
		steps = satAdd(steps, satMul(satAdd(d.steps(), satMul(d.elems, compareSteps)), sortFactor))
		bytes = satMul(shallowLen(arg(0)), sliceBytes)
	case opCopy:
		for _, v := range x {
			d := deepSize(v, m.left())
			steps, bytes = satAdd(steps, d.steps()), satAdd(bytes, satMul(d.elems, sliceBytes))
		}
	case opConcat:
		for _, v := range x {
			b := shallowBytes(v)
			steps, bytes = satAdd(steps, b/copyPerStep+1), satAdd(bytes, b)
		}
	case opPlus:
		operands := []any{arg(1), arg(2)}
		if overflows(intAdd, operands) {
			return nil, m.overflow(arg(0))
		}
		for _, v := range operands {
			b := shallowBytes(v)
			steps, bytes = satAdd(steps, b/copyPerStep+1), satAdd(bytes, b)
		}
	case opRepeat:
		n := satMul(int64(len(str(arg(0)))), max(toInt64(arg(1)), 0))
		steps, bytes = satAdd(steps, n/copyPerStep), n
	case opReplace:
		s, old, repl := len(str(arg(0))), len(str(arg(1))), len(str(arg(2)))
		n := satAdd(int64(s), satMul(int64(s/max(old, 1)+1), int64(repl)))
		steps, bytes = satAdd(steps, int64((s+old)/bytesPerStep)+n/copyPerStep), n
	case opSplit:
		s, sep := len(str(arg(0))), len(str(arg(1)))
		parts := int64(s/max(sep, 1) + 1)
		steps, bytes = satAdd(steps, int64(s/bytesPerStep)+satMul(parts, elemSteps)), satMul(parts, sliceBytes)
	case opCase:
		s := int64(len(str(arg(0))))
		steps, bytes = steps+s/bytesPerStep, 3*s+1 // invalid UTF-8 becomes U+FFFD
	case opTrim:
		s, cut := int64(len(str(arg(0)))), int64(len(str(arg(1))))
		steps += satMul(s+1, cut+1) / bytesPerStep
	case opJoin:
		d := deepSize(arg(0), m.left())
		n := satAdd(d.bytes, satMul(shallowLen(arg(0)), int64(len(str(arg(1))))))
		steps, bytes = satAdd(steps, satAdd(d.steps(), n/copyPerStep)), satAdd(n, satMul(shallowLen(arg(0)), 2*sliceBytes))
	case opJSON:
		// Text up to 6 bytes a byte (escapes), and per value its
		// punctuation and an indentation as deep as it is nested.
		d := deepSize(arg(0), m.left())
		n := satAdd(satMul(d.bytes, 6), satMul(d.elems, 16+2*int64(d.depth)))
		steps, bytes = satAdd(steps, satAdd(satMul(d.steps(), 4), n/copyPerStep)), n
	case opFromJSON:
		s := int64(len(str(arg(0))))
		// encoding/json into interfaces: about 80 ns a byte, and "1,"
		// becomes a boxed float64 in a growing array.
		steps, bytes = satAdd(steps, satMul(s, 8)), satMul(s, 24)
	case opBase64:
		s := int64(len(str(arg(0))))
		steps, bytes = steps+s/2, 2*s+4
	case opRange:
		n := rangeLen(toInt64(arg(0)), toInt64(arg(1)))
		steps, bytes = satAdd(steps, n/4), satMul(n, 8)
	case opMatch:
		// About 20 ns a byte, and 2 ns a byte and instruction.
		steps = satAdd(steps, satMul(shallowLen(arg(1))+1, 10+toInt64(arg(0)))/5)
	case opFinite:
		if f, ok := arg(1).(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, &limitError{fmt.Errorf("%w: %s gives %v", errNotFinite, m.text(arg(0)), f)}
		}
		return true, nil
	case opInt:
		if overflows(toInt64(arg(1)), []any{arg(2), arg(3)}) {
			return nil, m.overflow(arg(0))
		}
		return true, nil
	case opSum:
		steps = satAdd(steps, satMul(shallowLen(arg(1)), iterSteps))
		if sumOverflows(arg(1)) {
			return nil, m.overflow(arg(0))
		}
	case opToInt:
		if f, ok := arg(1).(float64); ok && !(f >= -(1<<63) && f < 1<<63) {
			return nil, m.overflow(arg(0))
		}
		steps = satAdd(steps, shallowLen(arg(1))/bytesPerStep)
	default:
		return nil, fmt.Errorf("meter: unknown operation %d", op)
	}
	if err := m.charge(steps, bytes); err != nil {
		return nil, err
	}
	return true, nil
}

// text is the text of the arithmetic operation of index i, for messages.
func (m *meter) text(i any) string {
	if n := toInt64(i); m != nil && m.e != nil && n >= 0 && n < int64(len(m.e.arith)) {
		return clip(m.e.arith[n])
	}
	return "an operation"
}

// overflow is the error of the integer operation of text index i.
func (m *meter) overflow(i any) error {
	return &limitError{fmt.Errorf("%w: %s is beyond the 64-bit integers (±%d)", errIntOverflow, m.text(i), int64(math.MaxInt64))}
}

// overflows reports whether the integer operation op (intAdd, ...) of
// operands overflows int64, as Go's would wrap around. Operands that are
// not both signed integers (ints, int64s, durations; a float among them)
// are not an integer operation.
func overflows(op int64, operands []any) bool {
	if len(operands) == 0 {
		return false
	}
	a, ok := asInt(operands[0])
	if !ok {
		return false
	}
	if op == intNeg || op == intAbs {
		return a == math.MinInt64
	}
	if len(operands) < 2 {
		return false
	}
	b, ok := asInt(operands[1])
	if !ok {
		return false
	}
	switch op {
	case intAdd:
		return b > 0 && a > math.MaxInt64-b || b < 0 && a < math.MinInt64-b
	case intSub:
		return b < 0 && a > math.MaxInt64+b || b > 0 && a < math.MinInt64+b
	case intMul:
		if a == 0 || b == 0 {
			return false
		}
		if a == -1 || b == -1 {
			return a == math.MinInt64 || b == math.MinInt64
		}
		c := a * b
		return c/b != a
	}
	return false
}

// asInt is v as a 64-bit integer, when it is a signed integer.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case nil:
		return 0, false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	}
	return 0, false
}

// sumOverflows reports whether sum(a) adds integers past int64: the sum
// of a's int elements, in order, as expr adds them, up to the first
// float.
func sumOverflows(a any) bool {
	var xs []any
	switch a := a.(type) {
	case []any:
		xs = a
	case []int:
		for _, x := range a {
			xs = append(xs, x)
		}
	}
	acc := 0
	for _, v := range xs {
		x, ok := v.(int)
		if !ok {
			return false // a float: the sum goes on in floats
		}
		if overflows(intAdd, []any{acc, x}) {
			return true
		}
		acc += x
	}
	return false
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		switch {
		case x != x:
			return 0
		case x >= math.MaxInt64:
			return math.MaxInt64
		case x <= math.MinInt64:
			return math.MinInt64
		}
		return int64(x)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u)
		}
		return math.MaxInt64
	}
	return 0
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// shallowLen is a string's or bytes' length, a collection's elements, or
// 1.
func shallowLen(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	case []any:
		return int64(len(x))
	case map[string]any:
		return int64(len(x))
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Array, reflect.Map:
		return int64(rv.Len())
	}
	return 1
}

// shallowSteps is what scanning v once costs: a string or bytes by their
// length, a collection by its elements.
func shallowSteps(v any) int64 {
	switch v.(type) {
	case string, []byte:
		return shallowLen(v)/bytesPerStep + 1
	}
	return satMul(shallowLen(v), elemSteps) + 1
}

// shallowBytes is what a copy of v takes: a string's bytes, an array's
// elements.
func shallowBytes(v any) int64 {
	switch v.(type) {
	case string, []byte:
		return shallowLen(v)
	}
	return satMul(shallowLen(v), sliceBytes)
}

// size is what walking a value whole finds: its values (elements and
// entries, nested), the bytes of its strings, and how deep it nests.
type size struct {
	elems, bytes int64
	depth        int
}

func (s size) steps() int64 { return satAdd(satMul(s.elems, elemSteps), s.bytes/bytesPerStep) }

// deepSize walks v, stopping once the walk has cost more than limit steps
// (so that it costs no more than what it then charges).
func deepSize(v any, limit int64) size {
	w := sizer{limit: limit}
	w.walk(v, 0)
	return w.size
}

type sizer struct {
	size
	limit int64
}

func (w *sizer) over() bool { return w.steps() > w.limit }

func (w *sizer) walk(v any, depth int) {
	if w.over() {
		return
	}
	w.elems++
	w.depth = max(w.depth, depth)
	switch x := v.(type) {
	case nil, bool, int, float64:
		return
	case string:
		w.bytes += int64(len(x))
		return
	case []byte:
		w.bytes += int64(len(x))
		return
	case []string:
		for _, s := range x {
			w.elems++
			w.bytes += int64(len(s))
		}
		w.depth = max(w.depth, depth+1)
		return
	case []int:
		w.elems += int64(len(x))
		w.depth = max(w.depth, depth+1)
		return
	case []float64:
		w.elems += int64(len(x))
		w.depth = max(w.depth, depth+1)
		return
	case []any:
		for _, e := range x {
			if w.walk(e, depth+1); w.over() {
				return
			}
		}
		return
	case map[string]any:
		for k, e := range x {
			w.bytes += int64(len(k))
			if w.walk(e, depth+1); w.over() {
				return
			}
		}
		return
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		w.bytes += int64(rv.Len())
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			w.bytes += int64(rv.Len())
			return
		}
		for i := 0; i < rv.Len(); i++ {
			if w.walk(rv.Index(i).Interface(), depth+1); w.over() {
				return
			}
		}
	case reflect.Map:
		it := rv.MapRange()
		for it.Next() {
			w.walk(it.Key().Interface(), depth+1)
			if w.walk(it.Value().Interface(), depth+1); w.over() {
				return
			}
		}
	}
}

// describeLimit says, for a problem at load, how the static estimate
// goes over the budget: "up to 3.2e+12 steps on any item, more than the
// 1048576 an item may take".
func describeLimit(steps, bytes float64) string {
	if steps > maxSteps {
		return fmt.Sprintf("up to %s steps on any item, more than the %d an item may take", approx(steps), maxSteps)
	}
	return fmt.Sprintf("values of up to %s bytes on any item, more than the %d an item may take", approx(bytes), maxBytes)
}

// approx renders a large count briefly: 12345 or 8.1e+11.
func approx(f float64) string {
	if f < 1e9 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.2g", f)
}

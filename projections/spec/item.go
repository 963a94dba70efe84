package spec

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// attrType is a declared attribute type: a DynamoDB type, or int (an N
// holding a 64-bit integer), or any.
type attrType uint8

const (
	typeS attrType = iota
	typeN
	typeInt
	typeB
	typeBOOL
	typeL
	typeM
	typeSS
	typeNS
	typeBS
	typeAny
	typeNULL // never declared: what an item holds
	typeUnknown
)

var typeNames = [...]string{"S", "N", "int", "B", "BOOL", "L", "M", "SS", "NS", "BS", "any", "NULL", "unknown"}

func (t attrType) String() string { return typeNames[t] }

// declarable are the types an item declaration may name.
var declarable = []attrType{typeS, typeN, typeInt, typeB, typeBOOL, typeL, typeM, typeSS, typeNS, typeBS, typeAny}

// maxNesting is how deep DynamoDB nests M and L values.
const maxNesting = 32

// A variable is one declared item attribute.
type variable struct {
	name     string // as expressions and templates name it
	attr     string // the item's attribute name
	typ      attrType
	optional bool // absent or NULL is allowed: it reads as nil
	inExpr   bool // some expression reads it
	line     int
}

// val is a variable's value in one item.
type val struct {
	present bool                 // false: absent or NULL, for an optional variable
	av      types.AttributeValue // the item's value; nil if absent
	s       string               // S
	d       decimal.Decimal      // N and int, exactly
	i       int64                // int
	native  any                  // what expressions see (only if the variable is inExpr)
}

// dynamoType returns the DynamoDB type of av (typeNULL for NULL). absent
// is true for no value, a nil interface or a nil S, N or NULL member (as
// the seed projections read them); nilMember for a nil member of another
// type, a value that cannot be read.
func dynamoType(av types.AttributeValue) (t attrType, absent, nilMember bool) {
	switch v := av.(type) {
	case nil:
		return typeUnknown, true, false
	case *types.AttributeValueMemberS:
		return typeS, v == nil, false
	case *types.AttributeValueMemberN:
		return typeN, v == nil, false
	case *types.AttributeValueMemberNULL:
		return typeNULL, v == nil, false
	case *types.AttributeValueMemberB:
		return typeB, false, v == nil
	case *types.AttributeValueMemberBOOL:
		return typeBOOL, false, v == nil
	case *types.AttributeValueMemberL:
		return typeL, false, v == nil
	case *types.AttributeValueMemberM:
		return typeM, false, v == nil
	case *types.AttributeValueMemberSS:
		return typeSS, false, v == nil
	case *types.AttributeValueMemberNS:
		return typeNS, false, v == nil
	case *types.AttributeValueMemberBS:
		return typeBS, false, v == nil
	}
	return typeUnknown, false, false
}

// errNilMember is the cause for a nil member pointer other than S, N or
// NULL: a value that cannot be read.
var errNilMember = errors.New("a nil value")

// read reads variable v from item: present, of its type, and converted for
// expressions if they read it. An error is the attribute's *projections.ItemError
// (Attr set; the caller completes it).
func (v *variable) read(item pipeline.Item) (val, error) {
	av := item[v.attr]
	t, absent, nilMember := dynamoType(av)
	switch {
	case absent && v.optional:
		return val{}, nil
	case t == typeNULL && v.optional:
		return val{av: av}, nil // reads as nil; a row copies the NULL
	case absent:
		return val{}, attrErr(v.attr, projections.ErrMissing)
	case t == typeUnknown:
		return val{}, attrErr(v.attr, fmt.Errorf("want %s, got a value of unknown type %T", v.typ, av))
	}
	want := v.typ
	if want == typeInt {
		want = typeN
	}
	if want != typeAny && t != want {
		return val{}, attrErr(v.attr, fmt.Errorf("want %s, got %s", v.typ, t))
	}
	if nilMember {
		return val{}, attrErr(v.attr, fmt.Errorf("%w of type %s", errNilMember, t))
	}
	out := val{present: true, av: av}
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		out.s = x.Value
		out.native = x.Value
	case *types.AttributeValueMemberN:
		d, err := decimal.Parse(x.Value)
		if err != nil {
			return val{}, attrErr(v.attr, err)
		}
		out.d = d
		switch {
		case v.typ == typeInt:
			n, ok := d.Int64()
			if !ok {
				return val{}, attrErr(v.attr, fmt.Errorf("want a 64-bit integer, got %s", x.Value))
			}
			out.i, out.d = n, decimal.FromInt(n)
			out.native = int(n)
		case v.inExpr:
			// Parse accepted it: a decimal within float64's range.
			out.native, _ = strconv.ParseFloat(x.Value, 64)
		}
	}
	if v.inExpr && out.native == nil {
		native, err := toNative(av, 0)
		if err != nil {
			var pe *pathError
			if errors.As(err, &pe) {
				return val{}, attrErr(v.attr+pe.path, pe.err)
			}
			return val{}, attrErr(v.attr, err)
		}
		out.native = native
	}
	return out, nil
}

// pathError is a fault within a nested value, at path (".name", "[3]").
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }

func nested(err error, elem string) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &pathError{path: elem + pe.path, err: pe.err}
	}
	return &pathError{path: elem, err: err}
}

// toNative converts a value to what expressions see: S a string, N a
// float64 (the nearest), BOOL a bool, NULL nil, B []byte, SS []string, NS
// []float64, BS [][]byte, L []any and M map[string]any of the same.
func toNative(av types.AttributeValue, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("nested deeper than %d levels", maxNesting)
	}
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		if v == nil {
			return nil, errNilMember
		}
		return v.Value, nil
	case *types.AttributeValueMemberN:
		if v == nil {
			return nil, errNilMember
		}
		return float(v.Value)
	case *types.AttributeValueMemberBOOL:
		if v == nil {
			return nil, errNilMember
		}
		return v.Value, nil
	case *types.AttributeValueMemberNULL:
		return nil, nil
	case *types.AttributeValueMemberB:
		if v == nil {
			return nil, errNilMember
		}
		return v.Value, nil
	case *types.AttributeValueMemberSS:
		if v == nil {
			return nil, errNilMember
		}
		return v.Value, nil
	case *types.AttributeValueMemberNS:
		if v == nil {
			return nil, errNilMember
		}
		out := make([]float64, len(v.Value))
		for i, s := range v.Value {
			f, err := float(s)
			if err != nil {
				return nil, nested(err, "["+strconv.Itoa(i)+"]")
			}
			out[i] = f
		}
		return out, nil
	case *types.AttributeValueMemberBS:
		if v == nil {
			return nil, errNilMember
		}
		return v.Value, nil
	case *types.AttributeValueMemberL:
		if v == nil {
			return nil, errNilMember
		}
		out := make([]any, len(v.Value))
		for i, e := range v.Value {
			x, err := toNative(e, depth+1)
			if err != nil {
				return nil, nested(err, "["+strconv.Itoa(i)+"]")
			}
			out[i] = x
		}
		return out, nil
	case *types.AttributeValueMemberM:
		if v == nil {
			return nil, errNilMember
		}
		out := make(map[string]any, len(v.Value))
		for k, e := range v.Value {
			x, err := toNative(e, depth+1)
			if err != nil {
				return nil, nested(err, "."+k)
			}
			out[k] = x
		}
		return out, nil
	case nil:
		return nil, errors.New("no value")
	}
	return nil, fmt.Errorf("a value of unknown type %T", av)
}

// float parses an N value to the nearest float64, after checking that
// DynamoDB could hold it.
func float(s string) (float64, error) {
	if _, err := decimal.Parse(s); err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, err
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s is out of range", s)
	}
	return f, nil
}

// cloneValue copies av, so that a row does not keep the image's values.
func cloneValue(av types.AttributeValue, depth int) (types.AttributeValue, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("nested deeper than %d levels", maxNesting)
	}
	if t, absent, nilMember := dynamoType(av); absent || nilMember {
		if t == typeUnknown {
			return nil, errors.New("no value")
		}
		return nil, fmt.Errorf("%w of type %s", errNilMember, t)
	}
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}, nil
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}, nil
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}, nil
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: append([]byte(nil), v.Value...)}, nil
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: append([]string(nil), v.Value...)}, nil
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: append([]string(nil), v.Value...)}, nil
	case *types.AttributeValueMemberBS:
		out := make([][]byte, len(v.Value))
		for i, b := range v.Value {
			out[i] = append([]byte(nil), b...)
		}
		return &types.AttributeValueMemberBS{Value: out}, nil
	case *types.AttributeValueMemberL:
		out := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			c, err := cloneValue(e, depth+1)
			if err != nil {
				return nil, nested(err, "["+strconv.Itoa(i)+"]")
			}
			out[i] = c
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case *types.AttributeValueMemberM:
		out := make(map[string]types.AttributeValue, len(v.Value))
		for k, e := range v.Value {
			c, err := cloneValue(e, depth+1)
			if err != nil {
				return nil, nested(err, "."+k)
			}
			out[k] = c
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	}
	return nil, fmt.Errorf("a value of unknown type %T", av)
}

// attrErr is the partial *projections.ItemError for a fault in attribute name.
func attrErr(name string, err error) error { return &projections.ItemError{Attr: name, Err: err} }

// show renders an attribute's value for an error message: an S quoted, an
// N as written, anything else in DynamoDB JSON, cut short if long.
func show(av types.AttributeValue) string {
	t, absent, nilMember := dynamoType(av)
	switch {
	case absent:
		return "nothing"
	case nilMember:
		return "a nil " + t.String()
	case t == typeS:
		return strconv.Quote(clip(av.(*types.AttributeValueMemberS).Value))
	case t == typeN:
		return clip(av.(*types.AttributeValueMemberN).Value)
	case t == typeUnknown:
		return fmt.Sprintf("a value of unknown type %T", av)
	}
	return clip(string(pipeline.AppendValue(nil, av)))
}

// canonicalNumber renders d without trailing fraction zeros: the same
// number always renders the same, however it was written ("1.50", "15E-1").
func canonicalNumber(d decimal.Decimal) string {
	s := d.String()
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

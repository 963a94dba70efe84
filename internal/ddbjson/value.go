package ddbjson

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Type is a DynamoDB attribute value's type.
type Type uint8

// The types, by their key in DynamoDB JSON.
const (
	TypeS Type = 1 + iota
	TypeN
	TypeB
	TypeBOOL
	TypeNULL
	TypeSS
	TypeNS
	TypeBS
	TypeM
	TypeL
)

var typeNames = [...]string{"", "S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "M", "L"}

// typePaths are the types' keys as path elements.
var typePaths = [...]string{"", ".S", ".N", ".B", ".BOOL", ".NULL", ".SS", ".NS", ".BS", ".M", ".L"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "?"
}

// shortType reads the type keys of one or two letters, as they are written
// without escapes, at b[i] (the opening quote): it returns the type and
// the index after the closing quote, or 0 for String and typeOf to say.
func shortType(b []byte, i int) (Type, int) {
	for n := 1; n <= 2 && i+n+1 < len(b); n++ {
		if b[i+n+1] == '"' {
			return typeOf(b[i+1 : i+n+1]), i + n + 2
		}
	}
	return 0, 0
}

// typeOf returns the type whose key is k, or 0.
func typeOf(k []byte) Type {
	switch string(k) {
	case "S":
		return TypeS
	case "N":
		return TypeN
	case "B":
		return TypeB
	case "BOOL":
		return TypeBOOL
	case "NULL":
		return TypeNULL
	case "SS":
		return TypeSS
	case "NS":
		return TypeNS
	case "BS":
		return TypeBS
	case "M":
		return TypeM
	case "L":
		return TypeL
	}
	return 0
}

// Error is JSON that is not a DynamoDB attribute value. A syntax error has
// the byte offset of the fault; any other names the path, from the checked
// value, of the offending field as the decoders name it (".N",
// ".M.qty.N", ".SS[1]"; empty for the checked value itself).
type Error struct {
	Syntax bool
	Offset int
	Path   string
	Msg    string
}

func (e *Error) Error() string {
	if e.Syntax {
		return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
	}
	if e.Path == "" {
		return e.Msg
	}
	return strings.TrimPrefix(e.Path, ".") + ": " + e.Msg
}

// Within returns err with its path below elem (".name", "[3]"), for the
// callers that checked a value by its place.
func Within(err error, elem string) error {
	if e, ok := err.(*Error); ok && !e.Syntax {
		e.Path = elem + e.Path
	}
	return err
}

func syntaxError(at int, msg string) error { return &Error{Syntax: true, Offset: at, Msg: msg} }

func fieldError(path string, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Checker checks DynamoDB attribute values in JSON by the rules the
// pipeline's decoders apply as they build them, without building them:
// one object with one known type key; S a string, N a DynamoDB number
// (CheckNumber), B base64; BOOL true or false, NULL true; SS, NS and BS
// non-empty arrays of such; M an object of attribute values with no name
// given twice, L an array of them, nested at most MaxAttrDepth levels; every
// string valid UTF-8. It reuses its buffers and is not safe for concurrent
// use.
type Checker struct {
	buf   []byte
	bin   []byte
	names []*Names // one per level of M
	// Scalar is the value of the last S or N read (unescaped), valid until
	// the next call: after Value of an S or N, that value's.
	Scalar []byte
}

// Value checks the attribute value at b[i] (after white space), at nesting
// depth (0 for a top-level attribute), and returns the index after it and
// its type. An error is an *Error.
func (c *Checker) Value(b []byte, i, depth int) (next int, t Type, err error) {
	i = Space(b, i)
	if i >= len(b) || b[i] != '{' {
		return -1, 0, fieldError("", "want attribute value object, got %s", Kind(b, i))
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return -1, 0, fieldError("", "attribute value has no type")
	}
	if i >= len(b) || b[i] != '"' {
		return -1, 0, syntaxError(i, Want(b, i, "string"))
	}
	if t, next = shortType(b, i); t == 0 { // BOOL, NULL, escapes, unknown
		k, buf, n, at, msg := String(c.buf, b, i+1)
		c.buf = buf
		if n < 0 {
			return -1, 0, syntaxError(at, msg)
		}
		if t = typeOf(k); t == 0 {
			return -1, 0, fieldError("", "unknown attribute type %q", k)
		}
		next = n
	}
	if i = Space(b, next); i >= len(b) || b[i] != ':' {
		return -1, 0, syntaxError(i, Want(b, i, "':' after member name"))
	}
	i = Space(b, i+1)
	switch t {
	case TypeS, TypeN, TypeB:
		i, err = c.scalar(b, i, t)
	case TypeBOOL:
		if i >= len(b) || b[i] != 't' && b[i] != 'f' {
			return -1, 0, fieldError(".BOOL", "want boolean, got %s", Kind(b, i))
		}
		i, err = literal(b, i)
	case TypeNULL:
		if i >= len(b) || b[i] != 't' {
			return -1, 0, fieldError(".NULL", "want true, got %s", Kind(b, i))
		}
		i, err = literal(b, i)
	case TypeSS, TypeNS, TypeBS:
		i, err = c.set(b, i, t)
	case TypeM:
		if depth >= MaxAttrDepth {
			return -1, 0, fieldError(".M", "nested deeper than %d levels", MaxAttrDepth)
		}
		i, err = c.Map(b, i, depth+1)
		err = Within(err, ".M")
	case TypeL:
		if depth >= MaxAttrDepth {
			return -1, 0, fieldError(".L", "nested deeper than %d levels", MaxAttrDepth)
		}
		i, err = c.list(b, i, depth+1)
	}
	if err != nil {
		return -1, 0, err
	}
	i = Space(b, i)
	switch {
	case i < len(b) && b[i] == '}':
		return i + 1, t, nil
	case i < len(b) && b[i] == ',':
		return -1, 0, fieldError("", "attribute value has more than one type")
	}
	return -1, 0, syntaxError(i, Want(b, i, "',' or '}'"))
}

func literal(b []byte, i int) (int, error) {
	if next, _ := Literal(b, i); next >= 0 {
		return next, nil
	}
	return -1, syntaxError(i, "invalid literal")
}

// scalar checks the string of an S, N or B value (or of a set's element)
// at b[i].
func (c *Checker) scalar(b []byte, i int, t Type) (int, error) {
	path := typePaths[t]
	if i >= len(b) || b[i] != '"' {
		switch t {
		case TypeN:
			return -1, fieldError(path, "want number as a string, got %s", Kind(b, i))
		case TypeB:
			return -1, fieldError(path, "want base64 string, got %s", Kind(b, i))
		}
		return -1, fieldError(path, "want string, got %s", Kind(b, i))
	}
	v, buf, next, at, msg := String(c.buf, b, i+1)
	c.buf = buf
	if next < 0 {
		return -1, syntaxError(at, msg)
	}
	switch t {
	case TypeN:
		if !plainDecimal(v) {
			if why := checkNumber(v); why != "" {
				return -1, fieldError(path, "%q is not a number: %s", v, why)
			}
		}
	case TypeB:
		n := base64.StdEncoding.DecodedLen(len(v))
		if cap(c.bin) < n {
			c.bin = make([]byte, n)
		}
		if _, err := base64.StdEncoding.Decode(c.bin[:n], v); err != nil {
			return -1, fieldError(path, "invalid base64: %v", err)
		}
	}
	c.Scalar = v
	return next, nil
}

// set checks the array of an SS, NS or BS value at b[i].
func (c *Checker) set(b []byte, i int, t Type) (int, error) {
	path := typePaths[t]
	if i >= len(b) || b[i] != '[' {
		return -1, fieldError(path, "want array, got %s", Kind(b, i))
	}
	elem := TypeS + (t - TypeSS) // SS → S, NS → N, BS → B
	i = Space(b, i+1)
	if i < len(b) && b[i] == ']' {
		return -1, fieldError(path, "empty set")
	}
	for k := 0; ; k++ {
		next, err := c.scalar(b, i, elem)
		if err != nil {
			if e, ok := err.(*Error); ok && !e.Syntax {
				e.Path = path + "[" + strconv.Itoa(k) + "]"
			}
			return -1, err
		}
		if i = Space(b, next); i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		if i >= len(b) || b[i] != ',' {
			return -1, syntaxError(i, Want(b, i, "',' or ']'"))
		}
		i = Space(b, i+1)
	}
}

// list checks the array of an L value at b[i], whose elements are at depth.
func (c *Checker) list(b []byte, i, depth int) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return -1, fieldError(".L", "want array, got %s", Kind(b, i))
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for k := 0; ; k++ {
		next, _, err := c.Value(b, i, depth)
		if err != nil {
			return -1, Within(err, ".L["+strconv.Itoa(k)+"]")
		}
		if i = Space(b, next); i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		if i >= len(b) || b[i] != ',' {
			return -1, syntaxError(i, Want(b, i, "',' or ']'"))
		}
		i++
	}
}

// Map checks the object of attribute values at b[i] (after white space),
// an M value's whose values are at depth, and returns the index after it.
func (c *Checker) Map(b []byte, i, depth int) (int, error) {
	i = Space(b, i)
	if i >= len(b) || b[i] != '{' {
		return -1, fieldError("", "want object of attribute values, got %s", Kind(b, i))
	}
	for len(c.names) <= depth {
		c.names = append(c.names, new(Names))
	}
	names := c.names[depth]
	names.Reset(b)
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1, syntaxError(i, Want(b, i, "string"))
		}
		nameAt := i + 1
		name, buf, next, at, msg := String(c.buf, b, nameAt)
		c.buf = buf
		if next < 0 {
			return -1, syntaxError(at, msg)
		}
		if len(name) == next-1-nameAt && !names.Add(nameAt, next-1) || len(name) != next-1-nameAt && !names.AddCopy(name) {
			return -1, fieldError("."+string(name), "given twice")
		}
		if i = Space(b, next); i >= len(b) || b[i] != ':' {
			return -1, syntaxError(i, Want(b, i, "':' after member name"))
		}
		next, _, err := c.Value(b, i+1, depth)
		if err != nil {
			return -1, Within(err, "."+unquoted(b, nameAt))
		}
		if i = Space(b, next); i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		if i >= len(b) || b[i] != ',' {
			return -1, syntaxError(i, Want(b, i, "',' or '}'"))
		}
		i = Space(b, i+1)
	}
}

// unquoted returns the (valid) JSON string whose opening quote is at
// b[at-1], unescaped, for messages.
func unquoted(b []byte, at int) string {
	v, _, _, _, _ := String(nil, b, at)
	return string(v)
}

// TypeName names an attribute value's DynamoDB type as DynamoDB JSON
// does: "S", "N", "BOOL", "SS", ….
func TypeName(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	}
	return fmt.Sprintf("%T", av)
}

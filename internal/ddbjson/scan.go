package ddbjson

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// Limits derived from DynamoDB's.
const (
	// MaxAttrDepth is how deep M and L values may nest: 32 levels
	// (DynamoDB's documented limit), a top-level attribute's own M or L
	// being the first. The value inside the 32nd may be any but an M or L.
	MaxAttrDepth = 32
	// MaxItemBytes is DynamoDB's item size limit, 400 KB, as the item's
	// attribute names plus values are counted (pipeline.ItemSize).
	MaxItemBytes = 400 << 10
	// ItemDepth is the JSON nesting of the deepest item DynamoDB holds: the
	// item's object; per level of M or L, an attribute value's object and
	// the map or list; and the innermost attribute value's object and a
	// set's array.
	ItemDepth = 1 + 2*MaxAttrDepth + 2
)

// MaxDepth is the JSON nesting allowed in a record of a format whose items
// sit envelope levels deep (the objects and arrays around an item, as in
// {"Records":[{"dynamodb":{"NewImage":…}}]}, four): a skipped value may nest
// as deep as the record's deepest item.
func MaxDepth(envelope int) int { return envelope + ItemDepth }

// Space returns the index of the first byte at or after i that is not JSON
// white space, or len(b).
func Space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// plain marks the bytes that may appear as they are in the fast run of a
// JSON string: not a quote, a backslash, a control character (which JSON
// forbids raw) or a byte of a multi-byte UTF-8 sequence (which is checked).
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = false, false
	return t
}()

// stopMask flags the high bit of each byte of x that ends a run of plain
// bytes. For each condition the lowest flagged byte of a word is exact
// (borrows only flag bytes above a true one), so the lowest flag of the
// union is the first stop.
func stopMask(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return (((q - ones) &^ q) | ((bs - ones) &^ bs) | ((x - ones*0x20) &^ x) | x) & highs
}

// StringEnd returns the index of the first byte at or after i, inside a
// JSON string, that is a quote, a backslash, a control character or the
// start of invalid UTF-8; or len(b). Valid multi-byte UTF-8 is stepped over.
func StringEnd(b []byte, i int) int {
	for {
		// The run of plain bytes, eight at a time.
		for ; i+8 <= len(b); i += 8 {
			if t := stopMask(binary.LittleEndian.Uint64(b[i:])); t != 0 {
				i += bits.TrailingZeros64(t) >> 3
				goto stop
			}
		}
		for ; i < len(b) && plain[b[i]]; i++ {
		}
	stop:
		if i >= len(b) || b[i] < utf8.RuneSelf {
			return i
		}
		for i < len(b) && b[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i
			}
			i += size
		}
	}
}

// WordStop returns the place (0 to 7) of the first byte of word — eight
// bytes of a string, little-endian — that ends a run of plain bytes (a
// quote, a backslash, a control character, a non-ASCII byte), or 8: for a
// caller that has read them, to find inline where most names and short
// values end, before calling StringEnd for the rest.
func WordStop(word uint64) int { return bits.TrailingZeros64(stopMask(word)) >> 3 }

// String reads the JSON string whose opening quote is at b[i-1] and
// returns its value and the index past its closing quote. The value is a
// slice of b when the string has no escapes; otherwise it is unescaped into
// dst (appended to dst[:0]), which is returned grown for reuse. On a
// malformed string — a control character, a bad escape, invalid UTF-8, no
// closing quote — next is negative and at and msg say where and what.
func String(dst, b []byte, i int) (val, buf []byte, next, at int, msg string) {
	j := i
	if i+8 <= len(b) {
		// Most strings end within their first eight bytes.
		if j += WordStop(binary.LittleEndian.Uint64(b[i : i+8])); j < i+8 && b[j] == '"' {
			return b[i:j], dst, j + 1, 0, ""
		}
	}
	j = StringEnd(b, j)
	if j < len(b) && b[j] == '"' {
		return b[i:j], dst, j + 1, 0, ""
	}
	if j < len(b) && b[j] == '\\' {
		out, next, at, msg := unquote(dst[:0], b, i, j)
		if next < 0 {
			return nil, out, next, at, msg
		}
		return out, out, next, 0, ""
	}
	at, msg = stringFault(b, j)
	return nil, dst, -1, at, msg
}

// stringFault describes the byte at j that ends a string badly.
func stringFault(b []byte, j int) (int, string) {
	switch {
	case j >= len(b):
		return j, "unterminated string"
	case b[j] < 0x20:
		return j, "control character in string"
	}
	return j, "string is not valid UTF-8"
}

// SkipString checks the JSON string whose opening quote is at b[i-1], as
// String does, without unescaping it, and returns the index past its
// closing quote (or a negative index, where and what is wrong).
func SkipString(b []byte, i int) (next, at int, msg string) {
	for {
		j := StringEnd(b, i)
		if j >= len(b) || b[j] != '\\' {
			if j < len(b) && b[j] == '"' {
				return j + 1, 0, ""
			}
			at, msg := stringFault(b, j)
			return -1, at, msg
		}
		if j+1 >= len(b) {
			return -1, len(b), "unterminated string"
		}
		switch b[j+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = j + 2
		case 'u':
			if _, ok := hex4(b, j+2); !ok {
				return -1, j + 2, "bad \\u escape"
			}
			i = j + 6
		default:
			return -1, j + 1, "bad escape \\" + string(rune(b[j+1]))
		}
	}
}

// Number reads a JSON number at b[i] and returns the index after it: an
// optional minus, 0 or digits not starting with 0, an optional fraction and
// an optional exponent. (A 0 followed by digits ends after the 0; what
// follows is then the caller's to reject.)
func Number(b []byte, i int) (next, at int, msg string) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1, i, "want number"
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1, j, "want digit after decimal point"
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1, j, "want digit in exponent"
		}
		i = j
	}
	return i, 0, ""
}

// Literal reads true, false or null at b[i] and returns the index after it
// and its first byte ('t', 'f' or 'n'); next is negative if there is none.
func Literal(b []byte, i int) (next int, lit byte) {
	for _, l := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(l) && string(b[i:i+len(l)]) == l {
			return i + len(l), l[0]
		}
	}
	return -1, 0
}

// Kind names the JSON value that starts at b[i] (after white space), for
// messages.
func Kind(b []byte, i int) string {
	i = Space(b, i)
	if i >= len(b) {
		return "end of input"
	}
	switch b[i] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// Skip checks one JSON value at b[i] (after white space) and returns the
// index after it: its syntax, the UTF-8 of its strings, and that it nests at
// most depth objects and arrays.
func Skip(b []byte, i, depth int) (next, at int, msg string) {
	i = Space(b, i)
	if i >= len(b) {
		return -1, i, "unexpected end of input, want value"
	}
	switch c := b[i]; c {
	case '"':
		return SkipString(b, i+1)
	case '{', '[':
		if depth <= 0 {
			return -1, i, "nested too deeply"
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = Space(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, 0, ""
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1, i, Want(b, i, "string")
				}
				if i, at, msg = SkipString(b, i+1); i < 0 {
					return i, at, msg
				}
				if i = Space(b, i); i >= len(b) || b[i] != ':' {
					return -1, i, Want(b, i, "':' after member name")
				}
				i++
			}
			if i, at, msg = Skip(b, i, depth-1); i < 0 {
				return i, at, msg
			}
			i = Space(b, i)
			switch {
			case i < len(b) && b[i] == closing:
				return i + 1, 0, ""
			case i < len(b) && b[i] == ',':
				i = Space(b, i+1)
			default:
				return -1, i, Want(b, i, fmt.Sprintf("',' or %q", closing))
			}
		}
	case 't', 'f', 'n':
		if next, _ := Literal(b, i); next >= 0 {
			return next, 0, ""
		}
		return -1, i, "invalid literal"
	}
	return Number(b, i)
}

// Want is the message for b[i] when what was wanted: "want what, got 'x'",
// or "unexpected end of input, want what".
func Want(b []byte, i int, what string) string {
	if i >= len(b) {
		return "unexpected end of input, want " + what
	}
	return fmt.Sprintf("want %s, got %q", what, b[i])
}

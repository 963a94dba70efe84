package export

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/tributary/tributary/internal/jsonstr"
)

// scanner checks a full-export line, {"Item":{...}}, without building the
// item: it validates the JSON syntax of the whole line, checks that every
// top-level attribute value is a DynamoDB attribute value (an object with one
// known type key), and extracts the entity type. It is the fast path of
// repartitioning, where lines are copied byte for byte.
type scanner struct {
	b   []byte
	pos int
	buf []byte // unescaped strings
	typ []byte // the entity type found
	has bool   // whether typ was found in this line
}

// errSyntax is a JSON syntax error at the scanner's position.
type lineSyntaxError struct {
	Offset int
	Msg    string
}

func (e *lineSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

const maxDepth = 64

// scanItemLine returns the string value of the attribute typeAttr of the
// line's Item, and whether the item has it. A type attribute that is not a
// string is an error, as the decoders treat it. The returned slice is valid
// until the next call.
func (s *scanner) scanItemLine(line []byte, typeAttr string) (typ []byte, hasType bool, err error) {
	s.b, s.pos = line, 0
	// The shape of every line of a real export: {"Item":{...}}.
	if len(line) > 9 && string(line[:8]) == `{"Item":` && line[len(line)-1] == '}' {
		s.b, s.pos = line[:len(line)-1], 8
		typ, hasType, err = s.item(typeAttr)
		if err == nil && s.pos == len(s.b) {
			return typ, hasType, nil
		}
		s.b, s.pos = line, 0 // report any error as the full scan does
	}
	s.ws()
	if !s.eat('{') {
		return nil, false, s.syntax("want a JSON object")
	}
	sawItem := false
	first := true
	for {
		s.ws()
		if s.eat('}') {
			break
		}
		if !first && !s.eat(',') {
			return nil, false, s.syntax("want , or }")
		}
		first = false
		s.ws()
		key, err := s.str()
		if err != nil {
			return nil, false, err
		}
		s.ws()
		if !s.eat(':') {
			return nil, false, s.syntax("want :")
		}
		s.ws()
		switch string(key) {
		case "Item":
			if sawItem {
				return nil, false, errors.New("Item: appears twice")
			}
			sawItem = true
			typ, hasType, err = s.item(typeAttr)
			if err != nil {
				return nil, false, err
			}
		case "Keys", "NewImage", "OldImage":
			return nil, false, fmt.Errorf("%s: an incremental-export line in a full export", key)
		default:
			if err := s.skip(1); err != nil {
				return nil, false, err
			}
		}
	}
	s.ws()
	if s.pos != len(s.b) {
		return nil, false, s.syntax("data after the object")
	}
	if !sawItem {
		return nil, false, errors.New("Item: missing (want {\"Item\":{...}})")
	}
	return typ, hasType, nil
}

// item scans the Item object.
func (s *scanner) item(typeAttr string) (typ []byte, hasType bool, err error) {
	if !s.eat('{') {
		return nil, false, fmt.Errorf("Item: want an object of attribute values")
	}
	s.has = false
	s.ws()
	if s.eat('}') {
		return nil, false, errors.New("Item: empty")
	}
	state := atAttr
	for state != closed {
		switch state {
		case atAttr:
			if state = s.fastAttrs(typeAttr); state == atAttr {
				s.ws()
				if err := s.attr(typeAttr); err != nil {
					return nil, false, err
				}
				state = afterAttr
			}
		case afterAttr:
			s.ws()
			switch {
			case s.eat(','):
				s.ws()
				state = atAttr
			case s.eat('}'):
				state = closed
			default:
				return nil, false, s.syntax("want , or }")
			}
		}
	}
	if s.has {
		return s.typ, true, nil
	}
	return nil, false, nil
}

// The eight bytes from the closing quote of an attribute's name to the
// opening quote of a string or number value, as export lines spell them:
// ":{"S":" and ":{"N":".
var (
	sTag = binary.LittleEndian.Uint64([]byte(`":{"S":"`))
	nTag = binary.LittleEndian.Uint64([]byte(`":{"N":"`))
)

// Where the scan of an Item stands.
const (
	atAttr    = iota // at an attribute's name
	afterAttr        // after an attribute's value
	closed           // past the Item's closing brace
)

// fastAttrs scans attributes of the commonest shape in export lines,
// "name":{"S":"value"} or "name":{"N":"value"} with no escapes, each
// followed directly by a comma or the closing brace, and returns where it
// stopped. At an attribute of any other shape it stops before it (atAttr),
// and attr scans that one in full; so a line is accepted or rejected
// exactly as attr alone would.
func (s *scanner) fastAttrs(typeAttr string) int {
	b, p := s.b, s.pos
	for {
		if p >= len(b) || b[p] != '"' {
			break
		}
		i := stringStopShort(b, p+1) // the name's end
		if i+8 > len(b) {
			break
		}
		tag := binary.LittleEndian.Uint64(b[i:])
		if tag != sTag && tag != nTag {
			break
		}
		j := stringStopShort(b, i+8) // the value's end
		if j+2 >= len(b) || b[j] != '"' || b[j+1] != '}' {
			break
		}
		if i-p-1 == len(typeAttr) && string(b[p+1:i]) == typeAttr {
			if tag != sTag {
				break // attr reports it
			}
			s.typ, s.has = append(s.typ[:0], b[i+8:j]...), true
		}
		p = j + 2
		switch b[p] {
		case ',':
			p++
			continue
		case '}':
			s.pos = p + 1
			return closed
		}
		s.pos = p
		return afterAttr
	}
	s.pos = p
	return atAttr
}

// attr scans one attribute, "name":{"T":value}, of any shape.
func (s *scanner) attr(typeAttr string) error {
	name, err := s.str()
	if err != nil {
		return err
	}
	isType := string(name) == typeAttr
	s.ws()
	if !s.eat(':') {
		return s.syntax("want :")
	}
	s.ws()
	// One attribute value: {"T": value}.
	if !s.eat('{') {
		return fmt.Errorf("Item.%s: want an attribute value object", name)
	}
	s.ws()
	tk, err := s.str()
	if err != nil {
		return err
	}
	if !knownType(string(tk)) {
		return fmt.Errorf("Item.%s: unknown attribute type %q", name, tk)
	}
	s.ws()
	if !s.eat(':') {
		return s.syntax("want :")
	}
	s.ws()
	if isType {
		if string(tk) != "S" {
			return fmt.Errorf("Item.%s: entity type is %s, want a string (S)", name, tk)
		}
		if s.peek() != '"' {
			return fmt.Errorf("Item.%s.S: want a string", name)
		}
		v, err := s.str()
		if err != nil {
			return err
		}
		s.typ, s.has = append(s.typ[:0], v...), true
	} else if err := s.skip(2); err != nil {
		return err
	}
	s.ws()
	if !s.eat('}') {
		return fmt.Errorf("Item.%s: want exactly one type key in an attribute value", name)
	}
	return nil
}

func knownType(t string) bool {
	switch t {
	case "S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "M", "L":
		return true
	}
	return false
}

func (s *scanner) peek() byte {
	if s.pos < len(s.b) {
		return s.b[s.pos]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.pos < len(s.b) && s.b[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// ws skips white space; export lines have none, so the common case is one
// comparison, inlined.
func (s *scanner) ws() {
	if s.pos < len(s.b) && s.b[s.pos] > ' ' {
		return
	}
	s.wsSlow()
}

func (s *scanner) wsSlow() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) syntax(msg string) error {
	if s.pos >= len(s.b) {
		return &lineSyntaxError{Offset: s.pos, Msg: "unexpected end of line (" + msg + ")"}
	}
	return &lineSyntaxError{Offset: s.pos, Msg: fmt.Sprintf("%s, got %q", msg, s.b[s.pos])}
}

// strStop marks the bytes that end the fast run of a JSON string: the
// quote, the backslash and the control characters, which JSON forbids raw.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// stringStop returns the index of the first byte at or after i that ends a
// fast run of a JSON string — a quote, a backslash or a control character
// — or len(b). It tests eight bytes at a time (SWAR): for each of the three
// conditions, the lowest flagged byte of a word is exact, so the lowest
// flag of their union is the first stop.
func stringStop(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if t := stopMask(binary.LittleEndian.Uint64(b[i:])); t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	return stringStopTail(b, i)
}

// stringStopShort is stringStop for short strings, such as attribute
// names: it tests the first word before entering the loop.
func stringStopShort(b []byte, i int) int {
	if i+8 <= len(b) {
		if t := stopMask(binary.LittleEndian.Uint64(b[i:])); t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
		i += 8
	}
	return stringStop(b, i)
}

// stopMask flags the high bit of each byte of x that stops a string.
func stopMask(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return (((q - ones) &^ q) | ((bs - ones) &^ bs) | ((x - ones*0x20) &^ x)) & highs
}

func stringStopTail(b []byte, i int) int {
	for ; i < len(b) && !strStop[b[i]]; i++ {
	}
	return i
}

// str scans a JSON string and returns its value: a slice of the line, or of
// s.buf when it has escapes (valid until the next call).
func (s *scanner) str() ([]byte, error) {
	if !s.eat('"') {
		return nil, s.syntax("want a string")
	}
	b := s.b
	start := s.pos
	i := stringStop(b, s.pos)
	s.pos = i
	if i >= len(b) {
		return nil, s.syntax("unterminated string")
	}
	switch b[i] {
	case '"':
		s.pos++
		return b[start:i], nil
	case '\\':
		return s.strEscaped(start)
	}
	return nil, s.syntax("control character in a string")
}

func (s *scanner) strEscaped(start int) ([]byte, error) {
	buf, next, at, msg := jsonstr.Unquote(s.buf[:0], s.b, start, s.pos)
	s.buf = buf
	if next < 0 {
		s.pos = at
		return nil, s.syntax(msg)
	}
	s.pos = next
	return buf, nil
}

// skipString skips a JSON string without decoding it.
func (s *scanner) skipString() error {
	if !s.eat('"') {
		return s.syntax("want a string")
	}
	b := s.b
	i := s.pos
	for {
		i = stringStop(b, i)
		if i >= len(b) {
			s.pos = len(b)
			return s.syntax("unterminated string")
		}
		switch b[i] {
		case '"':
			s.pos = i + 1
			return nil
		case '\\':
			i++
			if i >= len(b) {
				s.pos = len(b)
				return s.syntax("unterminated string")
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					s.pos = i
					return s.syntax("bad \\u escape")
				}
				i += 5
			default:
				s.pos = i
				return s.syntax("bad escape")
			}
		default:
			s.pos = i
			return s.syntax("control character in a string")
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// skip skips and validates one JSON value.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.syntax("nested too deeply")
	}
	switch c := s.peek(); c {
	case '"':
		return s.skipString()
	case '{':
		s.pos++
		s.ws()
		if s.eat('}') {
			return nil
		}
		for {
			s.ws()
			if err := s.skipString(); err != nil {
				return err
			}
			s.ws()
			if !s.eat(':') {
				return s.syntax("want :")
			}
			s.ws()
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.eat('}') {
				return nil
			}
			if !s.eat(',') {
				return s.syntax("want , or }")
			}
		}
	case '[':
		s.pos++
		s.ws()
		if s.eat(']') {
			return nil
		}
		for {
			s.ws()
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.eat(']') {
				return nil
			}
			if !s.eat(',') {
				return s.syntax("want , or ]")
			}
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			return s.number()
		}
		return s.syntax("want a value")
	}
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.pos < len(lit) || string(s.b[s.pos:s.pos+len(lit)]) != lit {
		return s.syntax("want " + lit)
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) number() error {
	digits := func() int {
		n := 0
		for s.pos < len(s.b) && '0' <= s.b[s.pos] && s.b[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	s.eat('-')
	if s.eat('0') {
		if c := s.peek(); '0' <= c && c <= '9' {
			return s.syntax("leading zero in a number")
		}
	} else if digits() == 0 {
		return s.syntax("want digits")
	}
	if s.eat('.') && digits() == 0 {
		return s.syntax("want digits after .")
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if digits() == 0 {
			return s.syntax("want exponent digits")
		}
	}
	return nil
}

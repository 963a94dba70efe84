package pipeline

import (
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/tributary/tributary/internal/jsonstr"
)

// scanner is a small, allocation-free JSON reader over a byte slice. Syntax
// errors are sticky: after the first one every method is a no-op and err holds
// a *SyntaxError. Methods that return strings copy them into an arena, so the
// input may be reused once decoding is done.
type scanner struct {
	data []byte
	pos  int
	err  error
	tmp  []byte // scratch for unescaping
	ar   *arena
}

// SyntaxError is malformed JSON: the payload cannot be split into records.
type SyntaxError struct {
	Offset int // byte offset in the payload
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

func (s *scanner) reset(data []byte) {
	s.data, s.pos, s.err = data, 0, nil
}

func (s *scanner) fail(format string, args ...any) {
	if s.err == nil {
		s.err = &SyntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
	}
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\n', '\r', '\t':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// kind describes the next value for error messages.
func (s *scanner) kind() string {
	switch s.peek() {
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
	case 0:
		return "end of input"
	}
	return "number"
}

// open consumes c ('{' or '[').
func (s *scanner) open(c byte) bool {
	if s.err != nil {
		return false
	}
	if s.peek() != c {
		if s.pos >= len(s.data) {
			s.fail("unexpected end of input, want %q", c)
		} else {
			s.fail("want %q, got %q", c, s.data[s.pos])
		}
		return false
	}
	s.pos++
	return true
}

// next reports whether another member or element follows in the object or
// array being read; it consumes the separating comma, or the closing byte when
// there is none. n counts the members read so far and must start at 0.
func (s *scanner) next(closing byte, n *int) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == closing {
		s.pos++
		return false
	}
	if *n > 0 {
		if c != ',' {
			if c == 0 {
				s.fail("unexpected end of input, want ',' or %q", closing)
			} else {
				s.fail("want ',' or %q, got %q", closing, c)
			}
			return false
		}
		s.pos++
		s.ws()
	}
	*n++
	return true
}

// key reads an object member's name and the colon after it. The returned
// bytes are valid until the next read.
func (s *scanner) key() []byte {
	k := s.strBytes()
	if s.err != nil {
		return nil
	}
	if s.peek() != ':' {
		s.fail("want ':' after member name")
		return nil
	}
	s.pos++
	return k
}

// strBytes reads a JSON string. The result aliases the input or the scratch
// buffer and is valid until the next read.
func (s *scanner) strBytes() []byte {
	if s.err != nil {
		return nil
	}
	if s.peek() != '"' {
		s.fail("want string")
		return nil
	}
	s.pos++
	start := s.pos
	d := s.data
	for i := start; i < len(d); i++ {
		c := d[i]
		if c == '"' {
			s.pos = i + 1
			out := d[start:i]
			if !utf8.Valid(out) {
				s.pos = start
				s.fail("string is not valid UTF-8")
				return nil
			}
			return out
		}
		if c == '\\' {
			return s.strSlow(start, i)
		}
		if c < 0x20 {
			s.pos = i
			s.fail("control character in string")
			return nil
		}
	}
	s.pos = len(d)
	s.fail("unterminated string")
	return nil
}

func (s *scanner) strSlow(start, i int) []byte {
	buf, next, at, msg := jsonstr.Unquote(s.tmp[:0], s.data, start, i)
	s.tmp = buf
	if next < 0 {
		s.pos = at
		s.fail("%s", msg)
		return nil
	}
	s.pos = next
	return buf
}

// str reads a JSON string into the arena.
func (s *scanner) str() string {
	b := s.strBytes()
	if s.err != nil {
		return ""
	}
	return s.ar.str(b)
}

// number reads a JSON number and returns its bytes (valid until the next read).
func (s *scanner) number() []byte {
	if s.err != nil {
		return nil
	}
	s.ws()
	d := s.data
	start := s.pos
	i := start
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		s.fail("want number")
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			s.pos = i
			s.fail("want digit after decimal point")
			return nil
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.pos = i
			s.fail("want digit in exponent")
			return nil
		}
	}
	s.pos = i
	return d[start:i]
}

// literal reads true, false or null and returns which.
func (s *scanner) literal() string {
	if s.err != nil {
		return ""
	}
	s.ws()
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
			s.pos += len(lit)
			return lit
		}
	}
	s.fail("invalid literal")
	return ""
}

// isNull consumes a null literal if one is next.
func (s *scanner) isNull() bool {
	if s.peek() == 'n' {
		s.literal()
		return s.err == nil
	}
	return false
}

const maxDepth = 512

// skip reads and discards one value of any kind, checking its syntax.
func (s *scanner) skip() { s.skipDepth(0) }

func (s *scanner) skipDepth(depth int) {
	if depth > maxDepth {
		s.fail("nesting deeper than %d", maxDepth)
		return
	}
	switch s.peek() {
	case '{':
		s.pos++
		for n := 0; s.next('}', &n); {
			s.key()
			s.skipDepth(depth + 1)
		}
	case '[':
		s.pos++
		for n := 0; s.next(']', &n); {
			s.skipDepth(depth + 1)
		}
	case '"':
		s.strBytes()
	case 't', 'f', 'n':
		s.literal()
	case 0:
		s.fail("unexpected end of input, want value")
	default:
		s.number()
	}
}

// int64 reads a JSON number that must be an integer.
func (s *scanner) int64() (int64, bool) {
	b := s.number()
	if s.err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// end checks that only white space follows.
func (s *scanner) end() {
	if s.err == nil && s.peek() != 0 {
		s.fail("unexpected data after the top-level value")
	}
}

// arena hands out strings and byte slices carved from large blocks, so that
// a batch of records costs a few allocations instead of one per value. Blocks
// are never written again once handed out, which is what makes the
// unsafe.String conversion safe.
type arena struct {
	block []byte
}

const arenaBlock = 32 << 10

func (a *arena) bytes(n int) []byte {
	if n > arenaBlock/4 {
		return make([]byte, n)
	}
	if len(a.block)+n > cap(a.block) {
		a.block = make([]byte, 0, arenaBlock)
	}
	off := len(a.block)
	a.block = a.block[:off+n]
	return a.block[off : off+n : off+n]
}

func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	out := a.bytes(len(b))
	copy(out, b)
	return unsafe.String(&out[0], len(out))
}

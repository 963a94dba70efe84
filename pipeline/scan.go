package pipeline

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/tributary/tributary/internal/ddbjson"
)

// scanner is the decoders' reader over a byte slice, on the JSON scanner
// core the export scanner shares (internal/ddbjson): the same strings
// (UTF-8 checked), numbers, literals and nesting limit. Syntax errors are
// sticky: after the first one every method is a no-op and err holds a
// *syntaxError. Methods that return strings copy them into an arena, so the
// input may be reused once decoding is done.
type scanner struct {
	data  []byte
	pos   int
	err   error
	tmp   []byte // scratch for unescaping
	ar    *arena
	depth int // how deep a skipped value may nest
}

// syntaxError is malformed JSON: the payload cannot be split into records.
type syntaxError struct {
	Offset int // byte offset in the payload
	Msg    string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Envelope levels above an item in the formats read (see ddbjson.MaxDepth):
// Lambda events and the GetRecords body, {"Records":[{"dynamodb":{"NewImage":…;
// a Kinesis record's data, {"dynamodb":{"NewImage":…; an export line,
// {"Item":… or {"NewImage":….
const (
	eventEnvelope   = 4
	payloadEnvelope = 2
	exportEnvelope  = 1
)

// reset starts reading data, a document of a format whose items sit
// envelope levels deep.
func (s *scanner) reset(data []byte, envelope int) {
	s.data, s.pos, s.err, s.depth = data, 0, nil, ddbjson.MaxDepth(envelope)
}

func (s *scanner) fail(format string, args ...any) {
	if s.err == nil {
		s.err = &syntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
	}
}

// failAt records a syntax error at offset at, when next is negative, and
// otherwise moves to next; it reports whether all went well.
func (s *scanner) failAt(next, at int, msg string) bool {
	if next < 0 {
		s.pos = at
		s.fail("%s", msg)
		return false
	}
	s.pos = next
	return true
}

func (s *scanner) ws() { s.pos = ddbjson.Space(s.data, s.pos) }

// peek returns the next non-space byte without consuming it, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// kind describes the next value for error messages.
func (s *scanner) kind() string { return ddbjson.Kind(s.data, s.pos) }

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
			s.fail("%s", ddbjson.Want(s.data, s.pos, fmt.Sprintf("',' or %q", closing)))
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
	v, tmp, next, at, msg := ddbjson.String(s.tmp, s.data, s.pos+1)
	s.tmp = tmp
	if !s.failAt(next, at, msg) {
		return nil
	}
	return v
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
	start := s.pos
	if !s.failAt(ddbjson.Number(s.data, s.pos)) {
		return nil
	}
	return s.data[start:s.pos]
}

// literal reads true, false or null and returns which.
func (s *scanner) literal() string {
	if s.err != nil {
		return ""
	}
	s.ws()
	next, lit := ddbjson.Literal(s.data, s.pos)
	if !s.failAt(next, s.pos, "invalid literal") {
		return ""
	}
	switch lit {
	case 't':
		return "true"
	case 'f':
		return "false"
	}
	return "null"
}

// isNull consumes a null literal if one is next.
func (s *scanner) isNull() bool {
	if s.peek() == 'n' {
		s.literal()
		return s.err == nil
	}
	return false
}

// skip reads and discards one value of any kind, checking its syntax, its
// strings' UTF-8 and its nesting.
func (s *scanner) skip() {
	if s.err != nil {
		return
	}
	s.failAt(ddbjson.Skip(s.data, s.pos, s.depth))
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

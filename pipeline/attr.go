package pipeline

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/ddbjson"
	"github.com/tributary/tributary/internal/quote"
)

// FieldError is a record that is well-formed JSON but not a valid change: a
// wrong attribute shape, a number that is not a number, a missing image. Path
// is the dotted path of the offending field as it appears in the record, e.g.
// "dynamodb.NewImage.total.N" or "Item.tags.SS[1]".
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// maxAttrDepth bounds the nesting of M and L values. DynamoDB allows 32 levels.
const maxAttrDepth = ddbjson.MaxAttrDepth

type pathElem struct {
	name []byte
	idx  int // element index when name is nil
}

// slab hands out pointers to values allocated in chunks.
type slab[T any] struct{ s []T }

func (p *slab[T]) alloc() *T {
	if len(p.s) == cap(p.s) {
		p.s = make([]T, 0, 128)
	}
	p.s = p.s[:len(p.s)+1]
	return &p.s[len(p.s)-1]
}

// dec is the state of one decoding call.
type dec struct {
	s      scanner
	ar     arena
	ss     slab[types.AttributeValueMemberS]
	ns     slab[types.AttributeValueMemberN]
	path   []pathElem
	recErr *FieldError
	names  map[string]string
	opts   Options
	// api is set for a GetRecords body, whose times may be strings.
	api bool
	// exact counts the bytes of attribute names, strings and binaries of
	// the image being read: the part of its size DynamoDB counts byte for
	// byte.
	exact int
}

// newDec returns a decoder; limit is the format's record limit.
func newDec(opts Options, limit int) *dec {
	d := &dec{opts: opts.withDefaults(limit), names: make(map[string]string, 32)}
	d.s.ar = &d.ar
	return d
}

func (d *dec) push(name []byte) {
	// Names that were unescaped live in the scanner's scratch buffer; keep a copy.
	if len(name) > 0 && len(d.s.tmp) > 0 && &name[0] == &d.s.tmp[0] {
		name = append([]byte(nil), name...)
	}
	d.path = append(d.path, pathElem{name: name})
}
func (d *dec) pushIdx(i int) { d.path = append(d.path, pathElem{idx: i}) }
func (d *dec) pop()          { d.path = d.path[:len(d.path)-1] }

func (d *dec) pathString() string {
	var b strings.Builder
	for i, p := range d.path {
		if p.name == nil {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.idx))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(quote.Short(string(p.name))) // attribute names are up to 64 KB
	}
	return b.String()
}

// semantic records the first field error of the current record.
func (d *dec) semantic(format string, args ...any) {
	if d.recErr == nil {
		d.recErr = &FieldError{Path: d.pathString(), Msg: fmt.Sprintf(format, args...)}
	}
}

func (d *dec) intern(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.names) < 4096 {
		d.names[s] = s
	}
	return s
}

// image reads an item image (NewImage, OldImage, Item, Keys) and checks it
// against DynamoDB's item limit: its attribute names, strings and binaries
// alone, which DynamoDB counts byte for byte, cannot exceed MaxItemBytes
// in an item that exists. (Numbers, lists and maps add to the size by
// rules the Developer Guide calls approximate, so they are not counted:
// the check never refuses a real item.)
func (d *dec) image() Item {
	d.exact = 0
	m := d.item(0)
	if d.exact > MaxItemBytes {
		d.semantic("%d bytes of attribute names, strings and binaries: more than DynamoDB's item limit of %d", d.exact, MaxItemBytes)
	}
	return m
}

// item reads a map of attribute values (an image, Keys, or an M value). A
// name given twice is a field error.
func (d *dec) item(depth int) Item {
	s := &d.s
	if s.peek() != '{' {
		d.semantic("want object of attribute values, got %s", s.kind())
		s.skip()
		return nil
	}
	s.pos++
	m := make(Item, 8)
	for n := 0; s.next('}', &n); {
		k := s.key()
		if s.err != nil {
			return nil
		}
		name := d.intern(k)
		d.exact += len(name)
		d.push(k)
		if v := d.value(depth); v != nil {
			had := len(m)
			if m[name] = v; len(m) == had {
				d.semantic("given twice")
			}
		}
		d.pop()
	}
	return m
}

// value reads one attribute value: {"S":"..."}, {"N":"..."}, ...
func (d *dec) value(depth int) types.AttributeValue {
	s := &d.s
	if s.peek() != '{' {
		d.semantic("want attribute value object, got %s", s.kind())
		s.skip()
		return nil
	}
	s.pos++
	var av types.AttributeValue
	n := 0
	for s.next('}', &n) {
		k := s.key()
		if s.err != nil {
			return nil
		}
		if n > 1 {
			d.semantic("attribute value has more than one type")
			s.skip()
			av = nil
			continue
		}
		d.push(k)
		av = d.typed(k, depth)
		d.pop()
	}
	if n == 0 && s.err == nil {
		d.semantic("attribute value has no type")
	}
	if d.recErr != nil {
		return nil
	}
	return av
}

func (d *dec) typed(k []byte, depth int) types.AttributeValue {
	s := &d.s
	switch string(k) {
	case "S":
		if s.peek() != '"' {
			d.semantic("want string, got %s", s.kind())
			s.skip()
			return nil
		}
		v := d.ss.alloc()
		v.Value = s.str()
		d.exact += len(v.Value)
		return v
	case "N":
		num, ok := d.num()
		if !ok {
			return nil
		}
		v := d.ns.alloc()
		v.Value = num
		return v
	case "B":
		b, ok := d.bin()
		if !ok {
			return nil
		}
		return &types.AttributeValueMemberB{Value: b}
	case "BOOL":
		if c := s.peek(); c != 't' && c != 'f' {
			d.semantic("want boolean, got %s", s.kind())
			s.skip()
			return nil
		}
		return &types.AttributeValueMemberBOOL{Value: s.literal() == "true"}
	case "NULL":
		if s.peek() != 't' {
			d.semantic("want true, got %s", s.kind())
			s.skip()
			return nil
		}
		s.literal()
		return &types.AttributeValueMemberNULL{Value: true}
	case "SS", "NS", "BS":
		return d.set(k[0], depth)
	case "M":
		if depth >= maxAttrDepth {
			d.semantic("nested deeper than %d levels", maxAttrDepth)
			s.skip()
			return nil
		}
		m := d.item(depth + 1)
		if m == nil {
			return nil
		}
		return &types.AttributeValueMemberM{Value: m}
	case "L":
		if depth >= maxAttrDepth {
			d.semantic("nested deeper than %d levels", maxAttrDepth)
			s.skip()
			return nil
		}
		if s.peek() != '[' {
			d.semantic("want array, got %s", s.kind())
			s.skip()
			return nil
		}
		s.pos++
		l := make([]types.AttributeValue, 0, 4)
		for n := 0; s.next(']', &n); {
			d.pushIdx(n - 1)
			if v := d.value(depth + 1); v != nil {
				l = append(l, v)
			}
			d.pop()
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	d.semantic("unknown attribute type %s", quote.Bytes(k))
	s.skip()
	return nil
}

func (d *dec) num() (string, bool) {
	s := &d.s
	if s.peek() != '"' {
		d.semantic("want number as a string, got %s", s.kind())
		s.skip()
		return "", false
	}
	b := s.strBytes()
	if s.err != nil {
		return "", false
	}
	if err := ddbjson.CheckNumber(b); err != nil {
		d.semantic("%v", err)
		return "", false
	}
	return d.ar.str(b), true
}

func (d *dec) bin() ([]byte, bool) {
	s := &d.s
	if s.peek() != '"' {
		d.semantic("want base64 string, got %s", s.kind())
		s.skip()
		return nil, false
	}
	b := s.strBytes()
	if s.err != nil {
		return nil, false
	}
	out := d.ar.bytes(base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(out, b)
	if err != nil {
		d.semantic("invalid base64: %v", err)
		return nil, false
	}
	d.exact += n
	return out[:n:n], true
}

func (d *dec) set(t byte, depth int) types.AttributeValue {
	s := &d.s
	if s.peek() != '[' {
		d.semantic("want array, got %s", s.kind())
		s.skip()
		return nil
	}
	s.pos++
	var (
		ss []string
		bs [][]byte
		n  int
	)
	for s.next(']', &n) {
		d.pushIdx(n - 1)
		switch t {
		case 'S':
			if s.peek() != '"' {
				d.semantic("want string, got %s", s.kind())
				s.skip()
			} else {
				ss = append(ss, s.str())
				d.exact += len(ss[len(ss)-1])
			}
		case 'N':
			if v, ok := d.num(); ok {
				ss = append(ss, v)
			}
		case 'B':
			if v, ok := d.bin(); ok {
				bs = append(bs, v)
			}
		}
		d.pop()
	}
	if s.err != nil || d.recErr != nil {
		return nil
	}
	if n == 0 {
		d.semantic("empty set")
		return nil
	}
	switch t {
	case 'S':
		return &types.AttributeValueMemberSS{Value: ss}
	case 'N':
		return &types.AttributeValueMemberNS{Value: ss}
	}
	return &types.AttributeValueMemberBS{Value: bs}
}

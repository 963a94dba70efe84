package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/tributary/tributary/internal/ddbjson"
	"github.com/tributary/tributary/pipeline"
)

// scanner checks a full-export line, {"Item":{...}}, without building the
// item, and finds its entity type: the fast path of repartitioning, where
// lines are copied byte for byte. It accepts exactly the lines that
// pipeline.ExportDecoder's DecodeItem accepts, by the same rules on the
// same JSON scanner core (internal/ddbjson): JSON syntax, UTF-8 in every
// string, every attribute value at every level a DynamoDB attribute value
// (ddbjson.Checker), no name given twice in an object, nesting within
// DynamoDB's 32 levels, one of the key attributes present, a string entity
// type and a non-negative integer version when present. A line long enough
// that its item might exceed DynamoDB's 400 KB limit (or the decoder's
// record limit) is decoded as well, so that its size is counted by the one
// rule, pipeline.ItemSize.
type scanner struct {
	dec         *pipeline.ExportDecoder
	keyAttrs    []string
	specials    []special // the type, version and key attributes
	specialBits uint64    // their names' bits (ddbjson.NameKey)
	byBit       [64]bySpecialBit
	done        []bool      // whether attr saw specials[k] in this item
	seen        uint8       // specials[k] (k < 8) that fastAttrs took
	at          [8][2]int32 // and where: name end, value end
	fallback    bool        // whether fastAttrs took a special it could not tell
	simple      bool        // at most eight specials, one role each
	typeK       int         // then, the type attribute's index in specials
	versionK    int         // the version attribute's
	keyMask     uint8       // and the key attributes', as bits
	bigLine     int         // lines longer than this are decoded too
	chk         ddbjson.Checker
	names       ddbjson.Names // the Item's attribute names
	top         ddbjson.Names // the line's member names
	buf         []byte        // unescaped names
	typ         []byte        // the entity type found: in the line, or in own
	own         []byte        // an unescaped entity type
	has         bool          // whether typ was found in this line
	hasKey      bool          // whether a key attribute was found
}

// newScanner returns a scanner applying dec's options (type, version and
// key attributes, record limit).
func newScanner(dec *pipeline.ExportDecoder) *scanner {
	o := dec.Options()
	s := &scanner{dec: dec, keyAttrs: o.KeyAttributes, bigLine: min(ddbjson.MaxItemBytes, o.MaxRecordBytes)}
	add := func(name string, r role) {
		for i := range s.specials {
			if s.specials[i].name == name {
				s.specials[i].roles |= r
				return
			}
		}
		key, bit := ddbjson.NameKey(len(name), head([]byte(name)))
		s.specialBits |= bit
		s.specials = append(s.specials, special{name: name, bytes: []byte(name), key: key, bit: bit, roles: r})
	}
	add(o.TypeAttribute, typeRole)
	add(o.VersionAttribute, versionRole)
	for _, k := range o.KeyAttributes {
		add(k, keyRole)
	}
	s.done = make([]bool, len(s.specials))
	// The usual case, for resolve: up to eight special names, one role each.
	s.typeK, s.versionK, s.simple = 0, 0, len(s.specials) <= 8
	for k, sp := range s.specials {
		switch sp.roles {
		case typeRole:
			s.typeK = k
		case versionRole:
			s.versionK = k
		case keyRole:
			s.keyMask |= 1 << k
		default:
			s.simple = false
		}
	}
	var count [64]int
	for _, sp := range s.specials {
		count[bits.TrailingZeros64(sp.bit)]++
	}
	for i := range s.byBit {
		s.byBit[i].k = -1 // none, or several: resolve looks them up
	}
	for k, sp := range s.specials {
		if i := bits.TrailingZeros64(sp.bit); count[i] == 1 && k < 8 {
			s.byBit[i] = bySpecialBit{key: sp.key, k: k}
			if len(sp.name) > 8 && len(sp.name) <= 16 {
				s.byBit[i].tail = binary.LittleEndian.Uint64([]byte(sp.name[len(sp.name)-8:]))
			}
		}
	}
	return s
}

// A special attribute's roles.
type role uint8

const (
	typeRole role = 1 << iota
	versionRole
	keyRole
)

// bySpecialBit is a special name's entry under its bit (ddbjson.NameKey),
// for fastAttrs to tell it: its key, its last eight bytes when it is
// longer than eight, and its index in specials (-1: no special, or
// several, have this bit).
type bySpecialBit struct {
	key, tail uint64
	k         int
}

type special struct {
	name     string
	bytes    []byte // name
	key, bit uint64 // ddbjson.NameKey
	roles    role
}

// scanItemLine returns the entity type of the line's item (the string
// value of its type attribute) and whether the item has one. The returned
// slice is valid until the next call. An error says what is wrong and
// where in the line.
func (s *scanner) scanItemLine(line []byte) (typ []byte, hasType bool, err error) {
	s.has, s.hasKey = false, false
	// The shape of every line of a real export: {"Item":{...}}.
	fast := len(line) > 9 && string(line[:8]) == `{"Item":` && line[len(line)-1] == '}'
	if fast {
		i, err := s.item(line[:len(line)-1], 8)
		fast = err == nil && i == len(line)-1
	}
	if !fast {
		// Any other shape, and any error, as the full scan reports it.
		s.has, s.hasKey = false, false
		if err := s.line(line); err != nil {
			return nil, false, err
		}
	}
	if !s.hasKey {
		return nil, false, &pipeline.FieldError{Path: "Item", Msg: fmt.Sprintf("item has none of the key attributes %v", s.keyAttrs)}
	}
	if len(line) > s.bigLine {
		if _, err := s.dec.DecodeItem(line, "", 0); err != nil {
			return nil, false, decodeCause(err)
		}
	}
	if s.has {
		return s.typ, true, nil
	}
	return nil, false, nil
}

// line scans the line's object in full: its members, of which Item must be
// one and no incremental export's may be.
func (s *scanner) line(b []byte) error {
	i := ddbjson.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("want a JSON object, got %s", ddbjson.Kind(b, i))
	}
	s.top.Reset(b)
	sawItem := false
	if i = ddbjson.Space(b, i+1); i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return syntax(i, ddbjson.Want(b, i, "string"))
			}
			key, next, err := s.name(b, i+1, &s.top, "")
			if err != nil {
				return err
			}
			if i, err = colon(b, next); err != nil {
				return err
			}
			switch string(key) {
			case "Item":
				sawItem = true
				if i, err = s.item(b, i); err != nil {
					return err
				}
			case "Keys", "NewImage", "OldImage", "Metadata":
				return fmt.Errorf("%s: an incremental-export line in a full export", key)
			default:
				next, at, msg := ddbjson.Skip(b, i, ddbjson.MaxDepth(1))
				if next < 0 {
					return syntax(at, msg)
				}
				i = next
			}
			i = ddbjson.Space(b, i)
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			if i >= len(b) || b[i] != ',' {
				return syntax(i, ddbjson.Want(b, i, "',' or '}'"))
			}
			i = ddbjson.Space(b, i+1)
		}
	}
	if i = ddbjson.Space(b, i); i != len(b) {
		return syntax(i, "data after the object")
	}
	if !sawItem {
		return &pipeline.FieldError{Path: "Item", Msg: `missing (want {"Item":{...}})`}
	}
	return nil
}

// name reads the member name whose opening quote is at b[at-1] and adds it
// to names; it returns the name (unescaped, valid until the next name) and
// the index after it, or an error, its path under prefix, if it is not a
// valid string or was given before.
func (s *scanner) name(b []byte, at int, names *ddbjson.Names, prefix string) ([]byte, int, error) {
	v, buf, next, errAt, msg := ddbjson.String(s.buf, b, at)
	s.buf = buf
	if next < 0 {
		return nil, -1, syntax(errAt, msg)
	}
	if len(v) == next-1-at && !names.Add(at, next-1) || len(v) != next-1-at && !names.AddCopy(v) {
		return nil, -1, fmt.Errorf("%s%s: given twice", prefix, v)
	}
	return v, next, nil
}

// colon checks for the colon after a member name, at b[i] after white
// space, and returns the index of the value.
func colon(b []byte, next int) (int, error) {
	if next = ddbjson.Space(b, next); next >= len(b) || b[next] != ':' {
		return -1, syntax(next, ddbjson.Want(b, next, "':' after member name"))
	}
	return ddbjson.Space(b, next+1), nil
}

func syntax(at int, msg string) error { return &ddbjson.Error{Syntax: true, Offset: at, Msg: msg} }

// The eight bytes from the closing quote of an attribute's name to the
// opening quote of a string or number value, as export lines spell them:
// ":{"S":" and ":{"N":".
var (
	sTag = binary.LittleEndian.Uint64([]byte(`":{"S":"`))
	nTag = binary.LittleEndian.Uint64([]byte(`":{"N":"`))
)

// tagType is the type of a compact attribute by its tag (sTag or nTag).
func tagType(tag uint64) ddbjson.Type {
	if tag == nTag {
		return ddbjson.TypeN
	}
	return ddbjson.TypeS
}

// Where the scan of an Item stands.
const (
	atAttr    = iota // at an attribute's name
	afterAttr        // after an attribute's value
	closed           // past the Item's closing brace
)

// item scans the Item object at b[i] and returns the index after it.
func (s *scanner) item(b []byte, i int) (int, error) {
	if i = ddbjson.Space(b, i); i >= len(b) || b[i] != '{' {
		return -1, &pipeline.FieldError{Path: "Item", Msg: "want object of attribute values, got " + ddbjson.Kind(b, i)}
	}
	s.names.Reset(b)
	clear(s.done)
	s.seen, s.fallback = 0, false
	i = ddbjson.Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	state := atAttr
	var err error
	for state != closed {
		switch state {
		case atAttr:
			if i, state, err = s.fastAttrs(b, i); err != nil {
				return -1, err
			}
			if state == atAttr {
				if i, err = s.attr(b, ddbjson.Space(b, i)); err != nil {
					return -1, err
				}
				state = afterAttr
			}
		case afterAttr:
			i = ddbjson.Space(b, i)
			switch {
			case i < len(b) && b[i] == ',':
				i = ddbjson.Space(b, i+1)
				state = atAttr
			case i < len(b) && b[i] == '}':
				i++
				state = closed
			default:
				return -1, syntax(i, ddbjson.Want(b, i, "',' or '}'"))
			}
		}
	}
	return i, s.resolve(b)
}

// fastAttrs scans attributes of the commonest shape in export lines,
// "name":{"S":"value"} or "name":{"N":"value"} with no escapes, each
// followed directly by a comma or the closing brace, and returns where it
// stopped. At an attribute of any other shape, or one whose value it
// would reject, it stops before it (atAttr), and attr scans that one in
// full; so a line is accepted or rejected exactly as attr alone would.
func (s *scanner) fastAttrs(b []byte, p int) (int, int, error) {
	for p+9 <= len(b) && b[p] == '"' {
		// The name: most end within their first eight or sixteen bytes.
		word := binary.LittleEndian.Uint64(b[p+1 : p+9])
		i := p + 1 + ddbjson.WordStop(word)
		if i == p+9 && i+8 <= len(b) {
			i += ddbjson.WordStop(binary.LittleEndian.Uint64(b[i : i+8]))
		}
		if i == p+17 || i+8 > len(b) || b[i] >= utf8.RuneSelf {
			i = ddbjson.StringEnd(b, i)
		}
		if i+8 > len(b) {
			break
		}
		key, bit := ddbjson.NameKey(i-p-1, word)
		tag := binary.LittleEndian.Uint64(b[i : i+8])
		j := i + 8 // the value's end
		switch {
		case tag == sTag:
			if j+8 <= len(b) {
				j += ddbjson.WordStop(binary.LittleEndian.Uint64(b[j : j+8]))
				if j == i+16 && j+8 <= len(b) {
					j += ddbjson.WordStop(binary.LittleEndian.Uint64(b[j : j+8]))
				}
			}
			if j == i+24 || j+8 > len(b) || b[j] >= utf8.RuneSelf {
				j = ddbjson.StringEnd(b, j)
			}
		case tag == nTag:
			j = ddbjson.PlainNumberEnd(b, j) // or -1, for attr to check
		default:
			j = -1
		}
		if j <= i || j+3 > len(b) || binary.LittleEndian.Uint16(b[j:j+2]) != '"'|'}'<<8 {
			break
		}
		if s.specialBits&bit != 0 {
			// Perhaps the type, version or a key attribute: where its
			// value is, for resolve.
			e := &s.byBit[bits.TrailingZeros64(bit)&63]
			if e.k >= 0 && e.key == key && (i-p-1 <= 8 || i-p-1 <= 16 && binary.LittleEndian.Uint64(b[i-8:i]) == e.tail) {
				s.at[e.k&7] = [2]int32{int32(i), int32(j)}
				s.seen |= 1 << (e.k & 7)
			} else if e.k < 0 || i-p-1 > 16 {
				s.fallback = true // resolve looks them up
			}
		}
		if !s.names.Quick(p+1, i, key, bit) && !s.names.AddKey(p+1, i, key, bit) {
			return p, atAttr, &pipeline.FieldError{Path: "Item." + string(b[p+1:i]), Msg: "given twice"}
		}
		p = j + 2
		switch b[p] {
		case ',':
			p++
			continue
		case '}':
			return p + 1, closed, nil
		}
		return p, afterAttr, nil
	}
	return p, atAttr, nil
}

// special returns the index in specials of the special name name, or -1.
func (s *scanner) special(name []byte) int {
	if key, bit := ddbjson.NameKey(len(name), head(name)); s.specialBits&bit != 0 {
		for k, sp := range s.specials {
			if sp.key == key && sp.name == string(name) {
				return k
			}
		}
	}
	return -1
}

// head returns the first eight bytes of name as a little-endian word.
func head(name []byte) uint64 {
	var w [8]byte
	copy(w[:], name)
	return binary.LittleEndian.Uint64(w[:])
}

// apply checks an attribute of the special name specials[k], of type t and
// (for S and N) value v, by its roles' rules, and notes it.
func (s *scanner) apply(k int, t ddbjson.Type, v []byte) error {
	sp := &s.specials[k]
	s.done[k] = true
	switch {
	case sp.roles&typeRole != 0 && t != ddbjson.TypeS:
		return &pipeline.FieldError{Path: "Item." + sp.name, Msg: fmt.Sprintf("entity type must be a string, got %s", t)}
	case sp.roles&versionRole != 0 && t != ddbjson.TypeN:
		return &pipeline.FieldError{Path: "Item." + sp.name, Msg: fmt.Sprintf("version attribute must be a number, got %s", t)}
	case sp.roles&versionRole != 0 && !versionOK(v):
		return fmt.Errorf("Item.%s.N: version %q is not a non-negative integer", sp.name, v)
	}
	if sp.roles&typeRole != 0 {
		s.typ, s.has = v, true
	}
	if sp.roles&keyRole != 0 {
		s.hasKey = true
	}
	return nil
}

// resolve applies the special names' rules to those of them that fastAttrs
// took in b (name ending at b[i], value b[i+8:j]): the ones it noted, and,
// when it could not tell (names longer than sixteen bytes, special names
// sharing a bit), the others that Names has and attr did not see.
func (s *scanner) resolve(b []byte) error {
	if s.simple && !s.fallback {
		// One name for each role: the type, the version, the keys.
		if s.seen&s.keyMask != 0 {
			s.hasKey = true
		}
		if k := s.typeK; s.seen&(1<<k) != 0 {
			i, j := int(s.at[k][0]), int(s.at[k][1])
			if tag := binary.LittleEndian.Uint64(b[i : i+8]); tag != sTag {
				return s.apply(k, tagType(tag), nil)
			}
			s.typ, s.has = b[i+8:j], true // a slice of the line: it has no escapes
		}
		if k := s.versionK; s.seen&(1<<k) != 0 {
			i, j := int(s.at[k][0]), int(s.at[k][1])
			if tag := binary.LittleEndian.Uint64(b[i : i+8]); tag != nTag || !versionOK(b[i+8:j]) {
				return s.apply(k, tagType(tag), b[i+8:j])
			}
		}
		return nil
	}
	for k := range s.specials {
		if s.done[k] {
			continue
		}
		var i, j int
		switch sp := &s.specials[k]; {
		case k < 8 && s.seen&(1<<k) != 0:
			i, j = int(s.at[k][0]), int(s.at[k][1])
		case s.fallback || k >= 8:
			off, found := s.names.Find(sp.bytes, sp.key, sp.bit)
			if !found {
				continue
			}
			// "name":{"S":"value"} or {"N":"value"}, without escapes.
			i = off + len(sp.name)
			j = i + 8 + bytes.IndexByte(b[i+8:], '"')
		default:
			continue
		}
		if err := s.apply(k, tagType(binary.LittleEndian.Uint64(b[i:i+8])), b[i+8:j]); err != nil {
			return err
		}
	}
	return nil
}

// versionOK reports whether a version number is a non-negative integer, as
// the decoder requires (strconv.ParseInt, base 10).
func versionOK(v []byte) bool {
	if len(v) > 0 && len(v) < 19 {
		ok := true
		for _, c := range v {
			ok = ok && '0' <= c && c <= '9'
		}
		if ok {
			return true
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil && n >= 0
}

// attr scans one attribute, "name":{"T":value}, of any shape.
func (s *scanner) attr(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return -1, syntax(i, ddbjson.Want(b, i, "string"))
	}
	name, next, err := s.name(b, i+1, &s.names, "Item.")
	if err != nil {
		return -1, err
	}
	if i, err = colon(b, next); err != nil {
		return -1, err
	}
	i, t, err := s.chk.Value(b, i, 0)
	if err != nil {
		return -1, ddbjson.Within(err, "Item."+string(name))
	}
	if k := s.special(name); k >= 0 {
		if err := s.apply(k, t, s.chk.Scalar); err != nil {
			return -1, err
		}
		if s.has && s.specials[k].roles&typeRole != 0 {
			s.own = append(s.own[:0], s.typ...) // the Checker's buffer is reused
			s.typ = s.own
		}
	}
	return i, nil
}

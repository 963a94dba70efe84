package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A template builds a key (or a row attribute) from literal text and
// placeholders, by substitution only:
//
//	{name}           the value of S, N or int attribute name
//	{name[i]}        the i-th '#'-separated segment of S attribute name,
//	                 from 0
//	{name:0W}        the value of N or int attribute name, a non-negative
//	                 integer, zero-padded to W digits
//	{name:sortable}  the value of N or int attribute name in the sortable
//	                 encoding (decimal.Decimal.Sortable): any number, in
//	                 text whose byte order is the numbers' order
//	{{ and }}        a literal { and }
//
// Every substituted value must be non-empty and, but in a free template,
// free of '#'.
type template struct {
	parts []part
	// free takes substituted values with '#' in them: a transform's
	// target key and attributes, which may copy a key's whole value
	// (a projection's keys are made of parts, which must not run into one
	// another).
	free bool
}

// part is a literal (v < 0) or a placeholder.
type part struct {
	lit      string
	v        int  // the variable's index in the projection's item declarations; -1 for a literal
	seg      int  // the segment index; -1 for the whole value
	width    int  // the zero-padding width; 0 for none
	sortable bool // the number in the sortable encoding
}

const (
	// maxWidth is the most digits the integer part of a DynamoDB number
	// has: its magnitude is below 1E+126.
	maxWidth = 126
	// maxSegment bounds a segment index: a key attribute holds at most
	// 2,048 bytes (a partition key; a sort key 1,024), so at most 1,025
	// segments.
	maxSegment = 1024
)

// placeholderForms is what a placeholder's syntax error asks for.
const placeholderForms = "want {attribute}, {attribute[N]}, {attribute:0W} or {attribute:sortable}"

// sortableForm is the format of the sortable encoding: {name:sortable}.
const sortableForm = ":sortable"

// rawPart is a parsed but unresolved template part.
type rawPart struct {
	lit      string
	name     string // "" for a literal
	src      string // the placeholder as written, braces included
	seg      int
	width    int
	sortable bool
}

// parseTemplate splits src into literals and placeholders. Every problem is
// returned, each a message naming the placeholder at fault.
func parseTemplate(src string) ([]rawPart, []string) {
	var (
		parts []rawPart
		probs []string
		lit   strings.Builder
	)
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, rawPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '{' && i+1 < len(src) && src[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(src) && src[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '}':
			probs = append(probs, fmt.Sprintf("a } at byte %d closes no placeholder (write }} for a literal })", i+1))
		case c == '{':
			end := strings.IndexAny(src[i+1:], "{}")
			if end < 0 || src[i+1+end] == '{' {
				probs = append(probs, fmt.Sprintf("the { at byte %d is not closed (write {{ for a literal {)", i+1))
				if end < 0 {
					i = len(src)
				} else {
					i += end
				}
				continue
			}
			inner := src[i+1 : i+1+end]
			p, err := parsePlaceholder(inner)
			if err != nil {
				probs = append(probs, fmt.Sprintf("placeholder {%s}: %v", inner, err))
			} else {
				flush()
				p.src = "{" + inner + "}"
				parts = append(parts, p)
			}
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, probs
}

// parsePlaceholder parses what stands between a placeholder's braces.
func parsePlaceholder(s string) (rawPart, error) {
	p := rawPart{seg: -1}
	name, rest := s, ""
	if i := strings.IndexAny(s, "[:"); i >= 0 {
		name, rest = s[:i], s[i:]
	}
	if !isIdent(name) {
		return p, errors.New(placeholderForms)
	}
	p.name = name
	switch {
	case rest == "":
	case rest == sortableForm:
		p.sortable = true
	case rest[0] == '[' && strings.HasSuffix(rest, "]"):
		n, ok := plainUint(rest[1 : len(rest)-1])
		if !ok {
			return p, errors.New(placeholderForms)
		}
		if n > maxSegment {
			return p, fmt.Errorf("segment %d out of range (0 to %d)", n, maxSegment)
		}
		p.seg = n
	case strings.HasPrefix(rest, ":0"):
		n, ok := plainUint(rest[2:])
		if !ok || n == 0 {
			return p, errors.New(placeholderForms)
		}
		if n > maxWidth {
			return p, fmt.Errorf("width %d out of range (1 to %d)", n, maxWidth)
		}
		p.width = n
	default:
		return p, errors.New(placeholderForms)
	}
	return p, nil
}

// plainUint parses a decimal number without sign or leading zeros (but
// "0"), of at most 9 digits.
func plainUint(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// holds records in into the item attributes t substitutes: true for one
// whose whole value it holds (in a form no other value gives), false for
// one it holds only a segment of.
func (t template) holds(vars []variable, into map[string]bool) {
	for _, p := range t.parts {
		if p.v >= 0 {
			attr := vars[p.v].attr
			into[attr] = into[attr] || p.seg < 0
		}
	}
}

// canonical renders the template in its normal form: literals with their
// braces doubled, placeholders as {name}, {name[i]}, {name:0W} or
// {name:sortable}.
func (t template) canonical(vars []variable) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.v < 0 {
			b.WriteString(strings.NewReplacer("{", "{{", "}", "}}").Replace(p.lit))
			continue
		}
		b.WriteByte('{')
		b.WriteString(vars[p.v].name)
		switch {
		case p.seg >= 0:
			fmt.Fprintf(&b, "[%d]", p.seg)
		case p.width > 0:
			fmt.Fprintf(&b, ":0%d", p.width)
		case p.sortable:
			b.WriteString(sortableForm)
		}
		b.WriteByte('}')
	}
	return b.String()
}

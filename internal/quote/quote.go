// Package quote renders strings that come from items and inputs (attribute
// values, entity types, raw record bytes) where people read them: Value
// quotes a value inside an error or log message and cuts it, so that a
// 200 KB attribute does not become a 200 KB log line; Printable escapes what
// a terminal would interpret, so that an item cannot set the operator's
// window title or clear the screen through a table cell.
//
// Keys are not cut: they are what an operator needs to find an item, and
// DynamoDB bounds them (2,048 bytes of partition key, 1,024 of sort key).
package quote

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxValueBytes is how much of a value Value and Bytes quote.
const MaxValueBytes = 64

// Value returns s as a Go string literal (strconv.Quote: control
// characters, invalid UTF-8 and non-printable characters escaped), cut to
// its first MaxValueBytes bytes at a character boundary; a cut value is
// followed by an ellipsis and its full size: "aaaa"… (200000 bytes).
func Value(s string) string {
	if len(s) <= MaxValueBytes {
		return strconv.Quote(s)
	}
	return cut(s[:MaxValueBytes+1], len(s))
}

// Bytes is Value for raw bytes; it copies no more of b than it quotes.
func Bytes(b []byte) string {
	if len(b) <= MaxValueBytes {
		return strconv.Quote(string(b))
	}
	return cut(string(b[:MaxValueBytes+1]), len(b))
}

// MaxIDBytes is how much of an identifier ID keeps: more than any real
// one has (a Kinesis event ID, shard ID and sequence number is under 200
// bytes).
const MaxIDBytes = 256

// ID returns an identifier read from input (a sequence number, an event or
// shard ID) for a message: itself, or, when it is longer than any real one,
// its first MaxIDBytes bytes and its size.
func ID(s string) string {
	if len(s) <= MaxIDBytes {
		return s
	}
	return s[:cutAt(s[:MaxIDBytes+1], MaxIDBytes)] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// Short is Value without the quotes or the escaping, for the fields of
// structured logs, whose encoder escapes: s itself when it is short, else
// its first MaxValueBytes bytes (at a character boundary), an ellipsis and
// its full size.
func Short(s string) string {
	if len(s) <= MaxValueBytes {
		return s
	}
	return s[:cutAt(s[:MaxValueBytes+1], MaxValueBytes)] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// cut quotes the first MaxValueBytes bytes of head (which has one more),
// backing off to a character boundary, and says the value's full size.
func cut(head string, size int) string {
	return strconv.Quote(head[:cutAt(head, MaxValueBytes)]) + "… (" + strconv.Itoa(size) + " bytes)"
}

// cutAt returns where to cut head, which is max+1 bytes long: max, or the
// start of the character that straddles it.
func cutAt(head string, max int) int {
	n := max
	for k := 0; k < utf8.UTFMax && n > 0 && !utf8.RuneStart(head[n]); k++ {
		n--
	}
	if !utf8.RuneStart(head[n]) {
		return max // not UTF-8 here: cut anywhere
	}
	return n
}

// Printable returns s unchanged but for what a terminal would not print as
// itself, which it escapes as in a Go string literal: control characters
// (ESC, BEL, CR, tab, newline, the C1 controls...), invalid UTF-8 (\xff),
// format characters such as the bidirectional overrides (\u202e) and
// spaces other than ASCII's. A backslash stays as it is, so that a message
// that already quotes a value (Value) reads the same. It does not cut s:
// use it for the values of tables, reports and errors printed for people.
func Printable(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !needsEscape(r, size) {
			b = append(b, s[i:i+size]...)
			i += size
			continue
		}
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, '\\', 'x', hex[s[i]>>4], hex[s[i]&0xf])
		default:
			q := strconv.QuoteRune(r) // 'x' with x escaped
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	return string(b)
}

const hex = "0123456789abcdef"

func needsEscape(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return true
	}
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7f
	}
	return !strconv.IsPrint(r)
}

// Lines is Printable for a report of several lines: each line is escaped
// on its own and the line breaks between them are kept, so that a
// multi-line message (every problem of a spec, one a line) prints as
// lines while nothing in them can drive the terminal.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// AppendJSON appends s to dst as a JSON string that a terminal prints as
// itself: it escapes what JSON requires ('"', '\\' and the control
// characters; \n, \r and \t in their short forms) and what Printable
// escapes (DEL, the C1 controls, format characters such as the
// bidirectional overrides, spaces other than ASCII's, U+2028 and U+2029),
// all of them as \uXXXX (a UTF-16 surrogate pair past U+FFFF), which is
// JSON. Invalid UTF-8 becomes \ufffd, one per invalid byte, as
// encoding/json reads it back. For the JSON that commands print, never for
// stored bytes: it is not the stored form (ddbjson.Quote).
func AppendJSON(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case needsEscape(r, size) || r == '\u2028' || r == '\u2029':
			dst = appendU(dst, r)
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// PrintableJSON returns JSON text (an encoder's output, valid JSON) with
// what a terminal would interpret escaped as \uXXXX: DEL, the C1 controls,
// format characters, spaces other than ASCII's, U+2028 and U+2029, and
// invalid UTF-8 as \ufffd. Outside strings JSON text is ASCII without
// control characters, so these can only be inside strings, where the escape
// means the same character: the result is valid JSON of the same value. b
// is returned as it is when it needs nothing escaped.
func PrintableJSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf && b[i] != 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if needsEscape(r, size) || r == '\u2028' || r == '\u2029' {
			break
		}
		i += size
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case r >= 0x20 && (needsEscape(r, size) || r == '\u2028' || r == '\u2029'):
			out = appendU(out, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// appendU appends r as JSON's \uXXXX, a surrogate pair past U+FFFF.
func appendU(dst []byte, r rune) []byte {
	if r > 0xffff {
		r1, r2 := utf16.EncodeRune(r)
		return appendU(appendU(dst, r1), r2)
	}
	return append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// Named writes lines to w, one a line, indented and Printable, at most max
// of them (0: all), then how many more were left out: those past max and
// more others not in lines. A gate's differences and unjudged items are
// printed so.
func Named(w io.Writer, lines []string, more int64, max int) {
	for i, d := range lines {
		if max > 0 && i == max {
			more += int64(len(lines) - i)
			break
		}
		fmt.Fprintln(w, "  "+Printable(d))
	}
	if more > 0 {
		fmt.Fprintf(w, "  ... and %d more (--max-print 0 prints all)\n", more)
	}
}

// Pairs renders named values (an aggregate's) for people: "name=value" for
// each, the names sorted and Printable, separated by spaces.
func Pairs[V fmt.Stringer](vs map[string]V) string {
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = Printable(n) + "=" + vs[n].String()
	}
	return strings.Join(parts, " ")
}

package ddbjson

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// stringEndRef is StringEnd one byte at a time.
func stringEndRef(b []byte, i int) int {
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"' || c == '\\' || c < 0x20:
			return i
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i
			}
			i += size
		}
	}
	return i
}

func TestStringEnd(t *testing.T) {
	base := []byte(strings.Repeat("aé~ \x7f€😀!", 4))
	for i := 0; i < len(base); i++ {
		for _, c := range []string{`"`, `\`, "\x00", "\x1f", "\n", "\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"} {
			b := append(append(append([]byte(nil), base[:i]...), c...), base[i:]...)
			for from := 0; from <= i; from++ {
				if got, want := StringEnd(b, from), stringEndRef(b, from); got != want {
					t.Fatalf("StringEnd(%q, %d) = %d, want %d", b, from, got, want)
				}
			}
		}
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string // in: the string's contents, closing quote and what follows
		next           int
		msg            string
	}{
		{"plain", `abc",`, "abc", 4, ""},
		{"raw UTF-8", `zoë 名前 😀 �"`, "zoë 名前 😀 �", 21, ""},
		{"escapes", `a\"b\u00e9\ud83d\ude00"`, "a\"bé😀", 23, ""},
		{"control character", "a\tb\"", "", -1, "control character in string"},
		{"invalid UTF-8", "ab\xffc\"", "", -1, "string is not valid UTF-8"},
		{"truncated UTF-8", "ab\xe2\x82\"", "", -1, "string is not valid UTF-8"},
		{"encoded surrogate", "\xed\xa0\x80\"", "", -1, "string is not valid UTF-8"},
		{"invalid UTF-8 after an escape", "\\n\xff\"", "", -1, "string is not valid UTF-8"},
		{"unterminated", `abc`, "", -1, "unterminated string"},
		{"bad escape", `a\x"`, "", -1, `bad escape \x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, next, _, msg := String(nil, []byte(tt.in), 0)
			if next != tt.next || msg != tt.msg || next >= 0 && string(v) != tt.want {
				t.Errorf("%q: %q, next %d, %q; want %q, %d, %q", tt.in, v, next, msg, tt.want, tt.next, tt.msg)
			}
			sn, _, smsg := SkipString([]byte(tt.in), 0)
			if sn != next || smsg != msg {
				t.Errorf("SkipString(%q): next %d, %q; String: %d, %q", tt.in, sn, smsg, next, msg)
			}
		})
	}
}

// FuzzString checks String and SkipString against encoding/json: a string
// they accept, encoding/json reads as the same value, and one it reads
// whose bytes are valid UTF-8 they accept.
func FuzzString(f *testing.F) {
	for _, s := range []string{`abc"`, `\u00e9\ud83d\ude00"`, `\ud83d"`, `a\x"`, "\xff\"", "zoë 😀\"", "\xed\xa0\x80\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		v, _, next, _, _ := String(nil, d, 0)
		if skip, _, _ := SkipString(d, 0); skip != next {
			t.Fatalf("%q: SkipString ends at %d, String at %d", d, skip, next)
		}
		if next < 0 {
			// encoding/json replaces invalid UTF-8; it must still fail a
			// string that is otherwise JSON only for its bytes.
			end := strings.IndexByte(string(d), '"')
			var std string
			if end >= 0 && utf8.Valid(d[:end]) && !strings.Contains(string(d[:end]), `\`) && json.Unmarshal(append([]byte{'"'}, d[:end+1]...), &std) == nil {
				t.Fatalf("%q: rejected, encoding/json reads %q", d[:end+1], std)
			}
			return
		}
		var std string
		if err := json.Unmarshal(append([]byte{'"'}, d[:next]...), &std); err != nil {
			t.Fatalf("%q: accepted, encoding/json: %v", d[:next], err)
		}
		if std != string(v) {
			t.Fatalf("%q: %q, encoding/json %q", d[:next], v, std)
		}
	})
}

func TestNumber(t *testing.T) {
	tests := []struct {
		in   string
		next int
	}{
		{"0", 1}, {"-0", 2}, {"12", 2}, {"1.5e+3,", 6}, {"-0.25E-2}", 8},
		{"01", 1}, {"1.", -1}, {"1e", -1}, {"-", -1}, {".5", -1}, {"+1", -1},
	}
	for _, tt := range tests {
		if next, _, _ := Number([]byte(tt.in), 0); next != tt.next {
			t.Errorf("Number(%q) = %d, want %d", tt.in, next, tt.next)
		}
	}
}

func TestSkip(t *testing.T) {
	tests := []struct {
		name, in string
		depth    int
		msg      string // "" when it is accepted
	}{
		{"scalars", `[1, -2.5e3, "x", true, false, null]`, 1, ""},
		{"objects", `{"a": {"b": [ ]}, "c": {}}`, 3, ""},
		{"at the depth", `[[[1]]]`, 3, ""},
		{"over the depth", `[[[[1]]]]`, 3, "nested too deeply"},
		{"trailing comma", `[1,]`, 2, "want number"},
		{"no colon", `{"a" 1}`, 2, "want ':' after member name, got '1'"},
		{"bad literal", `[tru]`, 2, "invalid literal"},
		{"invalid UTF-8", "[\"\xff\"]", 2, "string is not valid UTF-8"},
		{"unterminated", `{"a":[1`, 3, "unexpected end of input, want ',' or ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, _, msg := Skip([]byte(tt.in), 0, tt.depth)
			if msg != tt.msg || tt.msg == "" && next != len(tt.in) {
				t.Errorf("Skip(%q) = %d, %q; want %q", tt.in, next, msg, tt.msg)
			}
		})
	}
}

// depthOf returns the nesting of a valid JSON value.
func depthOf(b []byte) int {
	d, max, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			d++
			max = maxInt(max, d)
		case !inStr && (c == '}' || c == ']'):
			d--
		}
	}
	return max
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// FuzzSkip checks Skip against encoding/json: a value Skip accepts is valid
// JSON, and valid UTF-8 JSON within the depth is accepted whole.
func FuzzSkip(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"x"`, `[[[[]]]]`, `{"a":1,}`, "[\"\xff\"]", `-0.5e-3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		next, _, _ := Skip(d, 0, 4)
		if next >= 0 && !json.Valid(d[:next]) {
			t.Fatalf("%q: accepted %q, not valid JSON", d, d[:next])
		}
		if json.Valid(d) && utf8.Valid(d) && depthOf(d) <= 4 && (next < 0 || Space(d, next) != len(d)) {
			t.Fatalf("%q: valid JSON, Skip ends at %d", d, next)
		}
	})
}

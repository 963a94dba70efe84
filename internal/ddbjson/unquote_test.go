package ddbjson

import (
	"encoding/json"
	"testing"
)

func TestUnquote(t *testing.T) {
	tests := []struct {
		in   string // the string's contents and closing quote, and what follows
		want string
		next int    // index past the closing quote; -1: malformed
		at   int    // where a malformed string is reported
		msg  string // and how
	}{
		{`abc"`, "abc", 4, 0, ""},
		{`a\"b\\c\/d\b\f\n\r\t"x`, "a\"b\\c/d\b\f\n\r\t", 21, 0, ""},
		{`caf\u00e9 \ud83d\ude00"`, "café 😀", 23, 0, ""},
		{`\ud83d x"`, "\ufffd x", 9, 0, ""},
		{`\ude00\u0041"`, "\ufffdA", 13, 0, ""},
		{`a\x"`, "", -1, 2, `bad escape \x`},
		{`\u12G4"`, "", -1, 2, `bad \u escape`},
		{"a\tb\"", "", -1, 1, "control character in string"},
		{"\xff\\n\"", "", -1, 0, "string is not valid UTF-8"},
		{`abc\`, "", -1, 4, "unterminated string"},
		{`abc`, "", -1, 3, "unterminated string"},
	}
	for _, tt := range tests {
		out, next, at, msg := unquote([]byte("keep:"), []byte(tt.in), 0, 0)
		if next != tt.next || at != tt.at || msg != tt.msg {
			t.Errorf("%q: next %d, at %d, %q; want %d, %d, %q", tt.in, next, at, msg, tt.next, tt.at, tt.msg)
			continue
		}
		if next >= 0 {
			if string(out) != "keep:"+tt.want {
				t.Errorf("%q: %q, want %q", tt.in, out, "keep:"+tt.want)
			}
			var std string
			if err := json.Unmarshal([]byte(`"`+tt.in[:next]), &std); err != nil || std != tt.want {
				t.Errorf("%q: encoding/json reads %q (%v)", tt.in, std, err)
			}
		}
	}
}

// FuzzUnquote checks unquote against encoding/json on every string both
// read: the same value.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`abc"`, `\u00e9\ud83d\ude00"`, `\ud83d"`, `a\x"`, "\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		out, next, _, _ := unquote(nil, d, 0, 0)
		if next < 0 {
			return
		}
		var std string
		if err := json.Unmarshal(append([]byte{'"'}, d[:next]...), &std); err != nil {
			t.Fatalf("%q: accepted, encoding/json: %v", d[:next], err)
		}
		if std != string(out) {
			t.Fatalf("%q: %q, encoding/json %q", d[:next], out, std)
		}
	})
}

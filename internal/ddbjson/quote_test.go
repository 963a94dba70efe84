package ddbjson

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		quote      string // Quote's encoding
		line       string // QuoteLine's, when it differs
		roundTrips bool   // only check that both read back
	}{
		{name: "plain", in: "hello", quote: `"hello"`},
		{name: "empty", in: "", quote: `""`},
		{name: "quote and backslash", in: `a"b\c`, quote: `"a\"b\\c"`},
		{name: "newline tab return", in: "a\nb\tc\rd", quote: `"a\nb\tc\rd"`},
		{name: "control", in: "\x00\x01\x1f\x7f", quote: `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{name: "html kept", in: "<a>&", quote: `"<a>&"`},
		{name: "unicode kept", in: "日本 🚀 é", quote: `"日本 🚀 é"`},
		{name: "line separators", in: "a\u2028b\u2029c", quote: "\"a\u2028b\u2029c\"", line: `"a\u2028b\u2029c"`},
		{name: "invalid utf8", in: "a\xffb\xc3", quote: `"a\ufffdb\ufffd"`},
		{name: "truncated rune before a separator", in: "\xe2\x80\u2028", quote: "\"\\ufffd\\ufffd\u2028\"", line: `"\ufffd\ufffd\u2028"`},
		{name: "slash not escaped", in: "a/b", quote: `"a/b"`},
		{name: "every byte", in: allBytes(), roundTrips: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, l := string(Quote([]byte("keep:"), tt.in)), string(QuoteLine([]byte("keep:"), tt.in))
			want, wantLine := "keep:"+tt.quote, "keep:"+tt.line
			if tt.line == "" {
				wantLine = want
			}
			if !tt.roundTrips && (q != want || l != wantLine) {
				t.Errorf("Quote(%q) = %s, QuoteLine %s; want %s and %s", tt.in, q, l, want, wantLine)
			}
			checkQuoted(t, tt.in, strings.TrimPrefix(q, "keep:"), false)
			checkQuoted(t, tt.in, strings.TrimPrefix(l, "keep:"), true)
		})
	}
}

func allBytes() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}

// checkQuoted checks an encoding of in: one JSON string, with no raw line
// break (and, from QuoteLine, no raw U+2028 or U+2029), that encoding/json
// and String both read back as in with each invalid byte as U+FFFD.
func checkQuoted(t *testing.T, in, enc string, line bool) {
	t.Helper()
	if strings.ContainsAny(enc, "\n\r") || line && strings.ContainsAny(enc, "\u2028\u2029") {
		t.Errorf("encoding of %q contains a raw line break: %s", in, enc)
	}
	var std string
	if err := json.Unmarshal([]byte(enc), &std); err != nil {
		t.Fatalf("encoding of %q is not a JSON string: %v: %s", in, err, enc)
	}
	want := string([]rune(in)) // each invalid byte as U+FFFD, as encoding/json reads it
	if std != want {
		t.Errorf("encoding/json reads %s as %q, want %q", enc, std, want)
	}
	out, _, next, at, msg := String(nil, []byte(enc), 1)
	if next != len(enc) || string(out) != want {
		t.Errorf("String reads %s as %q (next %d, at %d: %s), want %q", enc, out, next, at, msg, want)
	}
}

// FuzzQuote: whatever the string, both encodings are one JSON string that
// encoding/json and String read back the same.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\\n", "\x00\xff", "\u2028", "日本", "\xe2\x80\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkQuoted(t, s, string(Quote(nil, s)), false)
		checkQuoted(t, s, string(QuoteLine(nil, s)), true)
	})
}

package quote

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Plain", "RATING#0000001842#PLAYER#u8231 Zoë 😀", `"RATING#0000001842#PLAYER#u8231 Zoë 😀"`},
		{"TitleAndClear", "\x1b]0;PWNED\a\x1b[2J", `"\u001b]0;PWNED\u0007\u001b[2J"`},
		{"ShortForms", "a\nb\tc\rd", `"a\nb\tc\rd"`},
		{"QuoteAndBackslash", `say "C:\tmp"`, `"say \"C:\\tmp\""`},
		{"Delete", "a\x7fb", `"a\u007fb"`},
		{"C1Control", "a\u009bb", `"a\u009bb"`},
		{"BidiOverride", "abc\u202edcba", `"abc\u202edcba"`},
		{"LineSeparator", "a\u2028b", `"a\u2028b"`},
		{"NonASCIISpace", "a\u00a0b", `"a\u00a0b"`},
		{"FormatCharacterPastBMP", "a\U000E0001b", `"a\udb40\udc01b"`},
		{"InvalidUTF8", "a\xffb", `"a\ufffdb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendJSON(nil, tt.in))
			if got != tt.want {
				t.Fatalf("AppendJSON(%q) = %s, want %s", tt.in, got, tt.want)
			}
			checkTerminalSafeJSON(t, got)
			var back string
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Fatalf("AppendJSON(%q) = %s is not JSON: %v", tt.in, got, err)
			}
			if want := strings.ToValidUTF8(tt.in, "\uFFFD"); tt.name != "InvalidUTF8" && back != want {
				t.Fatalf("AppendJSON(%q) reads back as %q", tt.in, back)
			}
		})
	}
}

func TestPrintableJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Unchanged", `{"a":{"S":"Zoë 😀"},"b":{"N":"1"}}` + "\n", `{"a":{"S":"Zoë 😀"},"b":{"N":"1"}}` + "\n"},
		{"C1AndBidi", "{\"a\":{\"S\":\"x\u009b2J\u202ey\"}}", `{"a":{"S":"x\u009b2J\u202ey"}}`},
		{"Delete", "[\"a\x7f\"]", `["a\u007f"]`},
		{"Separators", "[\"a\u2028b\u2029\"]", `["a\u2028b\u2029"]`},
		{"Indented", "{\n  \"a\": \"\u202e\"\n}\n", "{\n  \"a\": \"\\u202e\"\n}\n"},
		{"InvalidUTF8", "[\"a\xff\"]", `["a\ufffd"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(PrintableJSON([]byte(tt.in)))
			if got != tt.want {
				t.Fatalf("PrintableJSON(%q) = %q, want %q", tt.in, got, tt.want)
			}
			checkTerminalSafeJSON(t, strings.ReplaceAll(got, "\n", ""))
			var a, b any
			if err := json.Unmarshal([]byte(got), &a); err != nil {
				t.Fatalf("PrintableJSON(%q) = %q is not JSON: %v", tt.in, got, err)
			}
			if err := json.Unmarshal([]byte(tt.in), &b); err != nil {
				t.Fatal(err)
			}
			if utf8.ValidString(tt.in) && !reflect.DeepEqual(a, b) {
				t.Fatalf("PrintableJSON(%q) = %q changed the value: %v, want %v", tt.in, got, a, b)
			}
		})
	}
}

// checkTerminalSafeJSON fails if s holds anything a terminal would
// interpret, or anything but printable characters and spaces: invalid
// UTF-8 among them (a U+FFFD the input holds is a printable character).
func checkTerminalSafeJSON(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%q is not UTF-8", s)
	}
	for _, r := range s {
		if r != ' ' && !strconv.IsPrint(r) {
			t.Fatalf("%q keeps %U", s, r)
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "a\xffb", "\u202e", `"\`, "\U000E0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendJSON(nil, s)
		checkTerminalSafeJSON(t, string(got))
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendJSON(%q) = %s is not JSON: %v", s, got, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("AppendJSON(%q) = %s reads back as %q", s, got, back)
		}
		// An encoder's JSON of the same string, made printable, is valid
		// JSON of the same string too.
		enc, _ := json.Marshal(s)
		p := PrintableJSON(enc)
		checkTerminalSafeJSON(t, string(p))
		if err := json.Unmarshal(p, &back); err != nil || utf8.ValidString(s) && back != s {
			t.Fatalf("PrintableJSON(%s) = %s: %q, %v", enc, p, back, err)
		}
	})
}

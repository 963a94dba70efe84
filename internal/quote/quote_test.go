package quote

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValue(t *testing.T) {
	long := strings.Repeat("7", 200000)
	tests := []struct {
		name, in, want string
	}{
		{"Short", "PAID", `"PAID"`},
		{"Empty", "", `""`},
		{"ControlCharacters", "a\x1b]0;PWNED\a", `"a\x1b]0;PWNED\a"`},
		{"AtTheLimit", strings.Repeat("x", MaxValueBytes), strconv.Quote(strings.Repeat("x", MaxValueBytes))},
		{"Long", long, strconv.Quote(long[:MaxValueBytes]) + "… (200000 bytes)"},
		// 63 ASCII bytes then a 3-byte character across the limit: the cut
		// backs off to the character's start.
		{"CutAtCharacterBoundary", strings.Repeat("a", 63) + "€€", strconv.Quote(strings.Repeat("a", 63)) + "… (69 bytes)"},
		{"InvalidUTF8", strings.Repeat("\xff", 100), strconv.Quote(strings.Repeat("\xff", MaxValueBytes)) + "… (100 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Value(tt.in); got != tt.want {
				t.Errorf("Value = %s, want %s", got, tt.want)
			}
			if got := Bytes([]byte(tt.in)); got != tt.want {
				t.Errorf("Bytes = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestShort(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Short", "Order", "Order"},
		{"Long", strings.Repeat("x", 1000), strings.Repeat("x", MaxValueBytes) + "… (1000 bytes)"},
		{"CutAtCharacterBoundary", strings.Repeat("a", 63) + "€€", strings.Repeat("a", 63) + "… (69 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Short(tt.in); got != tt.want {
				t.Errorf("Short = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestID(t *testing.T) {
	kinesis := "shardId-000000000006:49656632116218945776331460766870512464380820032064733186"
	if got := ID(kinesis); got != kinesis {
		t.Errorf("ID(%s) = %s", kinesis, got)
	}
	long := strings.Repeat("9", 100000)
	if got := ID(long); got != long[:MaxIDBytes]+"… (100000 bytes)" {
		t.Errorf("ID of 100000 bytes = %.80s…", got)
	}
}

func TestValueIsBounded(t *testing.T) {
	for _, in := range []string{strings.Repeat("\x01", 1<<20), strings.Repeat("😀", 1<<18), strings.Repeat("a", 1<<20)} {
		got := Value(in)
		// Every byte quoted is escaped in at most 10 bytes (\U0001f600 for
		// four bytes, \x01 for one), plus quotes and the size.
		if len(got) > 4*MaxValueBytes+32 {
			t.Errorf("Value of %d bytes is %d bytes long: %.80s", len(in), len(got), got)
		}
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Plain", "u8231 Zoë 😀 #1", "u8231 Zoë 😀 #1"},
		{"TitleAndClear", "\x1b]0;PWNED\a\x1b[2J", `\x1b]0;PWNED\a\x1b[2J`},
		{"NewlineTabCR", "a\nb\tc\rd", `a\nb\tc\rd`},
		{"Delete", "a\x7fb", `a\x7fb`},
		{"C1Control", "a\u009bb", `a\u009bb`},
		{"BidiOverride", "abc\u202edcba", `abc\u202edcba`},
		{"NonASCIISpace", "a\u00a0b", `a\u00a0b`},
		{"InvalidUTF8", "a\xffb", `a\xffb`},
		{"Backslash", `C:\tmp`, `C:\tmp`},
		{"QuotedValue", `status: got "\x1b[2J"`, `status: got "\x1b[2J"`},
		{"Quotes", `say "hi"`, `say "hi"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Printable(tt.in)
			if got != tt.want {
				t.Fatalf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for _, r := range got {
				if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
					t.Fatalf("Printable(%q) = %q keeps control character %U", tt.in, got, r)
				}
			}
			if !utf8.ValidString(got) {
				t.Fatalf("Printable(%q) = %q is not valid UTF-8", tt.in, got)
			}
		})
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "a\xffb", "\u202e", `\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Printable(s)
		for _, r := range got {
			if !strconv.IsPrint(r) {
				t.Fatalf("Printable(%q) = %q keeps %U", s, got, r)
			}
		}
		// What a terminal prints as itself is left as it is.
		plain := true
		for _, r := range s {
			plain = plain && (r == ' ' || (strconv.IsPrint(r) && r != utf8.RuneError))
		}
		if plain && utf8.ValidString(s) && got != s {
			t.Fatalf("Printable(%q) = %q changed printable text", s, got)
		}
	})
}

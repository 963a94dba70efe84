package ddbjson

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckNumber(t *testing.T) {
	tests := []struct {
		in, why string // why: "" when valid
		digits  int    // SignificantDigits when valid
	}{
		{"0", "", 0},
		{"-0.000", "", 0},
		{"42", "", 2},
		{"+7", "", 1},
		{"007", "", 1},
		{"120.50", "", 4},
		{"1.", "", 1},
		{".5", "", 1},
		{"1E+2", "", 1},
		{"12345678901234567890123456789012345678", "", 38},
		{"1000000000000000000000000000000000000000", "", 1},
		{"-0.00012345678901234567890123456789012345678", "", 38},
		{"9.9999999999999999999999999999999999999E+125", "", 38},
		{"1E-130", "", 1},
		{"0.1e-129", "", 1},
		{"1e000125", "", 1},
		{"", "no digits", 0},
		{"-", "no digits", 0},
		{"12x", "unexpected character", 0},
		{"1 ", "unexpected character", 0},
		{"NaN", "no digits", 0},
		{"1e", "no digits in exponent", 0},
		{"1e1234567", "exponent out of range", 0},
		{"123456789012345678901234567890123456789", "more than 38 significant digits", 0},
		{"1E+126", "magnitude out of range", 0},
		{"10E+125", "magnitude out of range", 0},
		{"1E-131", "magnitude out of range", 0},
		{"0.01e-129", "magnitude out of range", 0},
	}
	for _, tt := range tests {
		err := CheckNumber([]byte(tt.in))
		switch {
		case tt.why == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.why != "" && (err == nil || !strings.HasSuffix(err.Error(), ": "+tt.why)):
			t.Errorf("%q: %v, want %q", tt.in, err, tt.why)
		case plainDecimal([]byte(tt.in)) && tt.why != "":
			t.Errorf("%q: plainDecimal lets it through", tt.in)
		case tt.why == "" && SignificantDigits(tt.in) != tt.digits:
			t.Errorf("%q: %d significant digits, want %d", tt.in, SignificantDigits(tt.in), tt.digits)
		}
	}
}

// FuzzCheckNumber checks the fast paths against the full check: what
// plainDecimal lets through, checkNumber accepts; PlainNumberEnd and
// PlainNumberWord find the quote that ends a string exactly when what is
// before it is a plain decimal (the word: when that is in its eight bytes).
func FuzzCheckNumber(f *testing.F) {
	for _, s := range []string{"0", "-12.5", "1.", ".5", "-", ".", "12345678901234567890123456789012345678", "1e5", "-.", "1.2.3", "--1", "1-", "19.99", "1234567"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if plainDecimal(b) {
			if why := checkNumber(b); why != "" {
				t.Fatalf("%q: plainDecimal lets it through, checkNumber: %s", b, why)
			}
		}
		q := append(append([]byte(nil), b...), '"')
		k := strings.IndexByte(string(q), '"')
		want := -1
		if plainDecimal(q[:k]) {
			want = k
		}
		if got := PlainNumberEnd(q, 0); got != want {
			t.Fatalf("%q: PlainNumberEnd %d, want %d", q, got, want)
		}
		var w [8]byte
		copy(w[:], q)
		got := PlainNumberWord(binary.LittleEndian.Uint64(w[:]))
		if got >= 0 && got != want || got < 0 && want >= 0 && want < 8 && utf8.Valid(q[:want]) {
			t.Fatalf("%q: PlainNumberWord %d, want %d", q, got, want)
		}
	})
}

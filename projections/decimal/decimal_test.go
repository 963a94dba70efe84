package decimal

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tributary/tributary/internal/quote"
)

var (
	nines38   = strings.Repeat("9", 38)
	maxNumber = "9." + strings.Repeat("9", 37) + "E+125" // largest DynamoDB number
	maxPlain  = nines38 + strings.Repeat("0", 88)        // maxNumber in plain notation
	minPlain  = "0." + strings.Repeat("0", 129) + "1"    // 1E-130 in plain notation
)

// validTests are inputs Parse accepts, with the String of the result.
var validTests = []struct{ in, want string }{
	{"0", "0"},
	{"-0", "0"},
	{"+0", "0"},
	{"0.000", "0.000"},
	{"-0.00", "0.00"},
	{"00", "0"},
	{"0E+10", "0"},
	{"0E-3", "0.000"},
	{"0.0E-400", "0." + strings.Repeat("0", maxScale)},
	{"0e99999999999999999999", "0"},
	{"120.50", "120.50"},
	{"-3", "-3"},
	{"+7", "7"},
	{"007", "7"},
	{"007.50", "7.50"},
	{".5", "0.5"},
	{"-.5", "-0.5"},
	{"5.", "5"},
	{"1E+2", "100"},
	{"1e2", "100"},
	{"1E0", "1"},
	{"1e-0", "1"},
	{"1E+000002", "100"},
	{"1.5E-1", "0.15"},
	{"1.50E+1", "15.0"},
	{"-1.5e-3", "-0.0015"},
	{"12.345E1", "123.45"},
	{"12.345E3", "12345"},
	{"12.345E5", "1234500"},
	{"0.0001E4", "1"},
	{"1E-130", minPlain},
	{"-1E-130", "-" + minPlain},
	{"0.1E-129", minPlain},
	{maxNumber, maxPlain},
	{"-" + maxNumber, "-" + maxPlain},
	{nines38, nines38},
	{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678"},
	{"1234567890123456789.0123456789012345678", "1234567890123456789.0123456789012345678"},
	{"-0.00000000000000000000000000000000000001", "-0.00000000000000000000000000000000000001"},
	// Leading and trailing zeros are not significant digits.
	{"1" + strings.Repeat("0", 45), "1" + strings.Repeat("0", 45)},
	{"1." + strings.Repeat("0", 45), "1." + strings.Repeat("0", 45)},
	{strings.Repeat("0", 50) + "1", "1"},
	{nines38 + "000", nines38 + "000"},
	{"0.000" + nines38, "0.000" + nines38},
	// Trailing zeros beyond 167 places are dropped.
	{"0." + strings.Repeat("0", 300), "0." + strings.Repeat("0", maxScale)},
	{"1." + strings.Repeat("0", 200) + "E-130", minPlain + strings.Repeat("0", maxScale-130)},
}

// invalidTests are inputs Parse rejects.
var invalidTests = []string{
	"",
	"NaN",
	"nan",
	"Inf",
	"-Inf",
	"+Infinity",
	"1.2.3",
	"--1",
	"+-1",
	"-",
	"+",
	" 1",
	"1 ",
	"1\n",
	"\x00",
	"1e",
	"1E+",
	"1e-",
	"e5",
	".",
	".e1",
	"-.",
	"0x10",
	"0b1",
	"1_000",
	"1,5",
	"12x",
	"1e1.5",
	"1ee2",
	"1e--2",
	"1/2",
	"\uff11", // fullwidth digit one
	"1E+126",
	"10E+125",
	"-1E+126",
	"1E-131",
	"0.1E-130",
	"1e99999999999999999999",
	"1e-99999999999999999999",
	"123456789012345678901234567890123456789",      // 39 significant digits
	"1.23456789012345678901234567890123456789",     // 39 significant digits
	"0.000123456789012345678901234567890123456789", // 39 significant digits
	"1" + strings.Repeat("0", 37) + "1",            // 39 significant digits
}

func TestParseValid(t *testing.T) {
	for _, tt := range validTests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := d.String(); got != tt.want {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			// The value must be the one big.Rat reads (which may choke on the
			// huge exponent of a zero).
			if d.IsZero() {
				return
			}
			r, ok := new(big.Rat).SetString(tt.in)
			if !ok {
				t.Fatalf("big.Rat rejects %q", tt.in)
			}
			if got := toRat(d); got.Cmp(r) != 0 {
				t.Errorf("Parse(%q) = %v, big.Rat says %v", tt.in, got, r)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	for _, in := range invalidTests {
		t.Run(in, func(t *testing.T) {
			d, err := Parse(in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", in, d)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "decimal: ") || !strings.Contains(msg, strconv.Quote(in)) {
				t.Errorf("Parse(%q) error %q does not start with \"decimal: \" and quote the input", in, msg)
			}
			if !d.IsZero() || d.String() != "0" {
				t.Errorf("Parse(%q) returned %v with its error, want 0", in, d)
			}
		})
	}
}

func TestParseErrorMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		{"12x", `decimal: "12x" is not a number`},
		{"", `decimal: "" is not a number`},
		{"123456789012345678901234567890123456789", `decimal: "123456789012345678901234567890123456789" has more than 38 significant digits`},
		{"1E+126", `decimal: "1E+126" is out of range`},
		// A long input is quoted cut to its first 64 bytes, with its size
		// (found by FuzzParse: a 65-byte input whose first 64 bytes are digits).
		{strings.Repeat("0", 64) + "A", `decimal: "` + strings.Repeat("0", 64) + `"… (65 bytes) is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse(%q) error = %v, want %s", tt.in, err, tt.want)
			}
		})
	}
}

func TestMustParse(t *testing.T) {
	if got := MustParse("120.50").String(); got != "120.50" {
		t.Errorf("MustParse(120.50) = %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustParse(\"12x\") did not panic")
		}
	}()
	MustParse("12x")
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		d    Decimal
		want string
	}{
		{"zero value", Decimal{}, "0"},
		{"FromInt(0)", FromInt(0), "0"},
		{"FromInt(-42)", FromInt(-42), "-42"},
		{"FromInt(max)", FromInt(math.MaxInt64), "9223372036854775807"},
		{"FromInt(min)", FromInt(math.MinInt64), "-9223372036854775808"},
		{"120.50+0", MustParse("120.50").Add(MustParse("0")), "120.50"},
		{"0+120.50", MustParse("0").Add(MustParse("120.50")), "120.50"},
		{"1.5+1.25", MustParse("1.5").Add(MustParse("1.25")), "2.75"},
		{"0.10+0.20", MustParse("0.10").Add(MustParse("0.20")), "0.30"},
		{"0.1+0.2", MustParse("0.1").Add(MustParse("0.2")), "0.3"},
		{"1.5-1.5", MustParse("1.5").Sub(MustParse("1.5")), "0.0"},
		{"-1.5+1.50", MustParse("-1.5").Add(MustParse("1.50")), "0.00"},
		{"0+0.00", Decimal{}.Add(MustParse("0.00")), "0.00"},
		{"1-1.00", MustParse("1").Sub(MustParse("1.00")), "0.00"},
		{"1-2.5", MustParse("1").Sub(MustParse("2.5")), "-1.5"},
		{"-0.05", MustParse("-0.05"), "-0.05"},
		{"0.05-0.1", MustParse("0.05").Sub(MustParse("0.1")), "-0.05"},
		{"-(0.00)", MustParse("0.00").Neg(), "0.00"},
		{"-(zero value)", Decimal{}.Neg(), "0"},
		{"-(-3)", MustParse("-3").Neg(), "3"},
		{"1E+2+0.5", MustParse("1E+2").Add(MustParse("0.5")), "100.5"},
		{"1.5E-1", MustParse("1.5E-1"), "0.15"},
		{"100-0.001", FromInt(100).Sub(MustParse("0.001")), "99.999"},
		{"999.99+0.01", MustParse("999.99").Add(MustParse("0.01")), "1000.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			// fmt uses String too.
			if got := fmt.Sprint(tt.d); got != tt.want {
				t.Errorf("fmt.Sprint = %q, want %q", got, tt.want)
			}
			// String output re-parses to the same value and form.
			back, err := Parse(tt.want)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.want, err)
			}
			if back.Cmp(tt.d) != 0 || back.String() != tt.want {
				t.Errorf("Parse(%q) = %v, want equal to %v", tt.want, back, tt.d)
			}
		})
	}
}

// algebraValues are combined pairwise and in triples by TestAlgebra.
var algebraValues = []string{
	"0", "0.000", "1", "-1", "0.1", "-0.25", "120.50", "1E+2", "1.5E-1",
	"12345678901234567890123456789012345678", "-0.00000000000000000000000000000000000001",
	"1E-130", maxNumber, "-" + maxNumber, "3.14159", "-2.7182818284590452353602874713526624977",
}

func TestAlgebra(t *testing.T) {
	vals := make([]Decimal, len(algebraValues))
	for i, s := range algebraValues {
		vals[i] = MustParse(s)
	}
	vals = append(vals, Decimal{}, FromInt(math.MaxInt64), FromInt(math.MinInt64))
	for _, a := range vals {
		for _, b := range vals {
			t.Run(a.String()[:min(len(a.String()), 20)]+","+b.String()[:min(len(b.String()), 20)], func(t *testing.T) {
				ab, ba := a.Add(b), b.Add(a)
				if ab.Cmp(ba) != 0 || ab.String() != ba.String() {
					t.Errorf("a+b = %v, b+a = %v", ab, ba)
				}
				if want := new(big.Rat).Add(toRat(a), toRat(b)); toRat(ab).Cmp(want) != 0 {
					t.Errorf("a+b = %v, want %v", ab, want.FloatString(200))
				}
				if want := new(big.Rat).Sub(toRat(a), toRat(b)); toRat(a.Sub(b)).Cmp(want) != 0 {
					t.Errorf("a-b = %v, want %v", a.Sub(b), want.FloatString(200))
				}
				if got, want := a.Sub(b), a.Add(b.Neg()); got.String() != want.String() {
					t.Errorf("a-b = %v, a+(-b) = %v", got, want)
				}
				if got := a.Sub(b).Add(b); got.Cmp(a) != 0 {
					t.Errorf("(a-b)+b = %v, want %v", got, a)
				}
				if got := a.Sub(b).Neg(); got.Cmp(b.Sub(a)) != 0 {
					t.Errorf("-(a-b) = %v, b-a = %v", got, b.Sub(a))
				}
				if got, want := a.Cmp(b), toRat(a).Cmp(toRat(b)); got != want {
					t.Errorf("Cmp = %d, want %d", got, want)
				}
				if a.Cmp(b) != -b.Cmp(a) {
					t.Errorf("Cmp not antisymmetric: %d, %d", a.Cmp(b), b.Cmp(a))
				}
				if got := a.Sub(a); !got.IsZero() {
					t.Errorf("a-a = %v, want 0", got)
				}
				for _, c := range vals {
					l, r := a.Add(b).Add(c), a.Add(b.Add(c))
					if l.Cmp(r) != 0 || l.String() != r.String() {
						t.Errorf("(a+b)+c = %v, a+(b+c) = %v for c = %v", l, r, c)
					}
					l, r = a.Sub(b).Sub(c), a.Sub(b.Add(c))
					if l.Cmp(r) != 0 || l.String() != r.String() {
						t.Errorf("(a-b)-c = %v, a-(b+c) = %v for c = %v", l, r, c)
					}
				}
			})
		}
	}
}

func TestSumExact(t *testing.T) {
	tests := []struct {
		name, term string
		n          int
		want       string
	}{
		{"0.1 ten times", "0.1", 10, "1.0"},
		{"0.01 a hundred times", "0.01", 100, "1.00"},
		{"0.10 ten times", "0.10", 10, "1.00"},
		{"-0.1 ten times", "-0.1", 10, "-1.0"},
		{"1E-130 a thousand times", "1E-130", 1000, "0." + strings.Repeat("0", 126) + "1000"},
		{"0.07 a million times", "0.07", 1_000_000, "70000.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := MustParse(tt.term)
			var sum Decimal
			for range tt.n {
				sum = sum.Add(term)
			}
			if got := sum.String(); got != tt.want {
				t.Errorf("sum = %s, want %s", got, tt.want)
			}
		})
	}
	// The float64 sum, for contrast, is not 1.
	f := 0.0
	for range 10 {
		f += 0.1
	}
	if f == 1 {
		t.Log("float64 summed 0.1 ten times to exactly 1 on this platform")
	}
}

func TestLargeValues(t *testing.T) {
	largest := MustParse(maxNumber)
	tests := []struct {
		name string
		d    Decimal
		want string
	}{
		{"38 nines + 1", MustParse(nines38).Add(FromInt(1)), "1" + strings.Repeat("0", 38)},
		{"38 nines + 38 nines", MustParse(nines38).Add(MustParse(nines38)), "1" + strings.Repeat("9", 37) + "8"},
		{"-38 nines - 1", MustParse("-" + nines38).Sub(FromInt(1)), "-1" + strings.Repeat("0", 38)},
		{"max + max", largest.Add(largest), "1" + strings.Repeat("9", 37) + "8" + strings.Repeat("0", 88)},
		{"max - max", largest.Sub(largest), "0"},
		{"max + min", largest.Add(MustParse("1E-130")), maxPlain + minPlain[1:]},
		{"max - min", largest.Sub(MustParse("1E-130")), strings.Repeat("9", 37) + "8" + strings.Repeat("9", 88) + "." + strings.Repeat("9", 130)},
		{"min + min", MustParse("1E-130").Add(MustParse("1E-130")), minPlain[:len(minPlain)-1] + "2"},
		{"-max + min", largest.Neg().Add(MustParse("1E-130")), "-" + strings.Repeat("9", 37) + "8" + strings.Repeat("9", 88) + "." + strings.Repeat("9", 130)},
		{"0.5 * 10^-38 digits", MustParse("0.00000000000000000000000000000000000005").Add(MustParse("0.00000000000000000000000000000000000005")), "0.00000000000000000000000000000000000010"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	if MustParse(maxNumber).Cmp(MustParse("-"+maxNumber)) != 1 || MustParse(maxNumber).Cmp(MustParse(maxPlain)) != 0 {
		t.Error("Cmp on the largest values is wrong")
	}
}

func TestCmpSign(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "1.0", 0},
		{"1.000", "1", 0},
		{"0", "0.00", 0},
		{"-0", "0", 0},
		{"-1", "1", -1},
		{"0.1", "0.09", 1},
		{"0.09", "0.1", -1},
		{"-0.1", "-0.09", -1},
		{"1E+2", "100.00", 0},
		{"1E-130", "0", 1},
		{"-1E-130", "0", -1},
		{"2", "10", -1},
		{"-2", "-10", 1},
		{maxNumber, "1E+125", 1},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			a, b := MustParse(tt.a), MustParse(tt.b)
			if got := a.Cmp(b); got != tt.want {
				t.Errorf("Cmp = %d, want %d", got, tt.want)
			}
			if got := b.Cmp(a); got != -tt.want {
				t.Errorf("reverse Cmp = %d, want %d", got, -tt.want)
			}
			if got, want := a.Sign(), a.Cmp(Decimal{}); got != want {
				t.Errorf("Sign = %d, want %d", got, want)
			}
			if a.IsZero() != (a.Sign() == 0) {
				t.Errorf("IsZero = %v, Sign = %d", a.IsZero(), a.Sign())
			}
		})
	}
	for _, z := range []Decimal{{}, FromInt(0), MustParse("0.000"), MustParse("-0E+5")} {
		if !z.IsZero() || z.Sign() != 0 || z.Cmp(Decimal{}) != 0 {
			t.Errorf("%v: IsZero = %v, Sign = %d", z, z.IsZero(), z.Sign())
		}
	}
}

func TestInt64(t *testing.T) {
	tests := []struct {
		name   string
		d      Decimal
		want   int64
		wantOK bool
	}{
		{"zero value", Decimal{}, 0, true},
		{"0.000", MustParse("0.000"), 0, true},
		{"3", MustParse("3"), 3, true},
		{"-3", MustParse("-3"), -3, true},
		{"3.00", MustParse("3.00"), 3, true},
		{"1E+2", MustParse("1E+2"), 100, true},
		{"3.5", MustParse("3.5"), 0, false},
		{"-0.01", MustParse("-0.01"), 0, false},
		{"1E-130", MustParse("1E-130"), 0, false},
		{"max int64", MustParse("9223372036854775807"), math.MaxInt64, true},
		{"max int64 + 1", MustParse("9223372036854775808"), 0, false},
		{"min int64", MustParse("-9223372036854775808.000"), math.MinInt64, true},
		{"min int64 - 1", MustParse("-9223372036854775809"), 0, false},
		{"1E+20", MustParse("1E+20"), 0, false},
		{"FromInt(min)", FromInt(math.MinInt64), math.MinInt64, true},
		{"sum", MustParse("0.5").Add(MustParse("2.50")), 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.d.Int64()
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Int64() = %d, %v, want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	t.Run("round trip", func(t *testing.T) {
		for _, tt := range validTests {
			d := MustParse(tt.in)
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatalf("Marshal(%v): %v", d, err)
			}
			if want := strconv.Quote(tt.want); string(b) != want {
				t.Errorf("Marshal(%v) = %s, want %s", d, b, want)
			}
			var back Decimal
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", b, err)
			}
			if back.Cmp(d) != 0 || back.String() != d.String() {
				t.Errorf("Unmarshal(%s) = %v, want %v", b, back, d)
			}
		}
	})
	t.Run("map", func(t *testing.T) {
		in := map[string]Decimal{"count": FromInt(3), "sum": MustParse("120.50"), "zero": {}}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"count":"3","sum":"120.50","zero":"0"}`; string(b) != want {
			t.Errorf("Marshal = %s, want %s", b, want)
		}
		var out map[string]Decimal
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		for k, v := range in {
			if out[k].String() != v.String() {
				t.Errorf("%s: got %v, want %v", k, out[k], v)
			}
		}
	})
	t.Run("pointer", func(t *testing.T) {
		d := MustParse("-1.5")
		b, err := json.Marshal(&d)
		if err != nil || string(b) != `"-1.5"` {
			t.Errorf("Marshal(&d) = %s, %v", b, err)
		}
	})

	type wrapper struct {
		V Decimal `json:"v"`
	}
	unmarshalTests := []struct{ in, want string }{
		{`{"v":"120.50"}`, "120.50"},
		{`{"v":120.50}`, "120.50"},
		{`{"v":-3}`, "-3"},
		{`{"v":1E+2}`, "100"},
		{`{"v":1.5e-1}`, "0.15"},
		{`{"v":"1E+2"}`, "100"},
		{`{"v":"\u0031.5"}`, "1.5"},
		{`{"v":0}`, "0"},
		{`{"v": 7 }`, "7"},
		{`{"v":null}`, "42"}, // null leaves the value unchanged
		{`{}`, "42"},
	}
	for _, tt := range unmarshalTests {
		t.Run("unmarshal "+tt.in, func(t *testing.T) {
			w := wrapper{V: FromInt(42)}
			if err := json.Unmarshal([]byte(tt.in), &w); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if got := w.V.String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	for _, in := range []string{
		`{"v":"12x"}`, `{"v":""}`, `{"v":"NaN"}`, `{"v":" 1"}`, `{"v":true}`, `{"v":[1]}`,
		`{"v":{}}`, `{"v":1E+126}`, `{"v":123456789012345678901234567890123456789}`,
	} {
		t.Run("unmarshal error "+in, func(t *testing.T) {
			w := wrapper{V: FromInt(42)}
			if err := json.Unmarshal([]byte(in), &w); err == nil {
				t.Errorf("Unmarshal succeeded with %v", w.V)
			}
			if got := w.V.String(); got != "42" {
				t.Errorf("failed Unmarshal changed the value to %s", got)
			}
		})
	}
	t.Run("direct UnmarshalJSON errors", func(t *testing.T) {
		for _, in := range []string{``, `"`, `"1`, `1 2`, `nul`, `'1'`} {
			d := FromInt(42)
			if err := d.UnmarshalJSON([]byte(in)); err == nil {
				t.Errorf("UnmarshalJSON(%q) succeeded with %v", in, d)
			}
			if d.String() != "42" {
				t.Errorf("failed UnmarshalJSON(%q) changed the value to %v", in, d)
			}
		}
	})
}

func TestImmutability(t *testing.T) {
	tests := []struct{ a, b Decimal }{
		{MustParse("1.5"), MustParse("1.25")},
		{MustParse("1.25"), MustParse("1.5")},
		{MustParse("120.50"), MustParse("0.01")},
		{MustParse("120.50"), Decimal{}},
		{Decimal{}, MustParse("120.50")},
		{FromInt(7), FromInt(7)},
		{MustParse(maxNumber), MustParse("-1E-130")},
	}
	for _, tt := range tests {
		t.Run(tt.a.String()+","+tt.b.String()[:min(len(tt.b.String()), 20)], func(t *testing.T) {
			a, b := tt.a, tt.b
			as, bs := a.String(), b.String()
			results := []Decimal{a.Add(b), a.Sub(b), a.Neg(), b.Neg(), a.Add(a), b.Sub(b)}
			if a.String() != as || b.String() != bs {
				t.Fatalf("operands changed: %v, %v; want %s, %s", a, b, as, bs)
			}
			// No result shares its integer with an operand or another result.
			seen := map[*big.Int]bool{}
			for _, d := range []Decimal{a, b} {
				if d.unscaled != nil {
					seen[d.unscaled] = true
				}
			}
			for i, r := range results {
				if r.unscaled == nil {
					continue
				}
				if seen[r.unscaled] {
					t.Errorf("result %d (%v) shares state with an operand or another result", i, r)
				}
				seen[r.unscaled] = true
			}
			// Changing results' internals must not show in the operands.
			for _, r := range results {
				if r.unscaled != nil {
					r.unscaled.SetInt64(999)
				}
			}
			if a.String() != as || b.String() != bs {
				t.Errorf("operands changed through a result: %v, %v; want %s, %s", a, b, as, bs)
			}
		})
	}
	t.Run("copy", func(t *testing.T) {
		a := MustParse("1.5")
		c := a
		c = c.Add(FromInt(1))
		if err := json.Unmarshal([]byte(`"9.99"`), &c); err != nil {
			t.Fatal(err)
		}
		if a.String() != "1.5" || c.String() != "9.99" {
			t.Errorf("a = %v, c = %v", a, c)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		// Run under -race: shared operands are only read.
		shared := MustParse("0.01")
		var wg sync.WaitGroup
		sums := make([]Decimal, 8)
		for i := range sums {
			wg.Go(func() {
				for range 1000 {
					sums[i] = sums[i].Add(shared).Sub(Decimal{}).Neg().Neg()
					_ = shared.String()
					_ = shared.Cmp(sums[i])
				}
			})
		}
		wg.Wait()
		for _, s := range sums {
			if s.String() != "10.00" {
				t.Errorf("sum = %v, want 10.00", s)
			}
		}
	})
}

// toRat returns d as an exact big.Rat.
func toRat(d Decimal) *big.Rat {
	return new(big.Rat).SetFrac(d.bigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.scale)), nil))
}

func FuzzParse(f *testing.F) {
	for _, tt := range validTests {
		f.Add(tt.in)
		f.Add(tt.want)
	}
	for _, in := range invalidTests {
		f.Add(in)
	}
	for _, in := range algebraValues {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			// The input is quoted whole, or cut to a prefix with its size.
			want := strconv.Quote(s)
			if len(s) > quote.MaxValueBytes {
				want = quote.Value(s) // its first bytes, "…" and its size
				if !strings.HasSuffix(want, fmt.Sprintf("… (%d bytes)", len(s))) {
					t.Fatalf("quote.Value(%q) = %s does not give the size", s, want)
				}
			}
			if !strings.HasPrefix(err.Error(), "decimal: ") || !strings.Contains(err.Error(), want) {
				t.Errorf("Parse(%q) error %q does not quote the input (want %s in it)", s, err, want)
			}
			return
		}
		str := d.String()
		if strings.ContainsAny(str, "eE+") {
			t.Errorf("Parse(%q).String() = %q has an exponent or a plus sign", s, str)
		}
		back, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not re-parse: %v", s, str, err)
		}
		if back.Cmp(d) != 0 || back.String() != str {
			t.Errorf("Parse(%q) = %s, re-parsed as %s", s, str, back)
		}
		if sum := d.Add(d.Neg()); !sum.IsZero() || sum.Sign() != 0 || sum.Cmp(Decimal{}) != 0 {
			t.Errorf("x + -x = %v for x = %s", sum, str)
		}
		if !d.Sub(d).IsZero() {
			t.Errorf("x - x = %v for x = %s", d.Sub(d), str)
		}
		if d.Neg().Sign() != -d.Sign() || d.Neg().Neg().String() != str {
			t.Errorf("Neg of %s is %v", str, d.Neg())
		}
		if (d.Sign() < 0) != strings.HasPrefix(str, "-") {
			t.Errorf("Sign of %s is %d", str, d.Sign())
		}
		if n, ok := d.Int64(); ok && FromInt(n).Cmp(d) != 0 {
			t.Errorf("Int64 of %s is %d", str, n)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var j Decimal
		if err := json.Unmarshal(b, &j); err != nil || j.String() != str {
			t.Errorf("JSON round trip of %s gave %v, %v", str, j, err)
		}
		// Cross-check the value with big.Rat; skip zeros, whose exponent
		// may be too large for big.Rat to handle quickly.
		if !d.IsZero() {
			r, ok := new(big.Rat).SetString(s)
			if !ok {
				t.Fatalf("Parse accepts %q but big.Rat does not", s)
			}
			if toRat(d).Cmp(r) != 0 {
				t.Errorf("Parse(%q) = %s, big.Rat says %s", s, str, r)
			}
		}
	})
}

func BenchmarkAdd(b *testing.B) {
	benchmarks := []struct{ name, x, y string }{
		{"same scale", "120.50", "0.99"},
		{"mixed scale", "120.5", "0.0001"},
		{"integer", "12345", "1"},
		{"38 digits", nines38, "-0.0000000000000000000000000000000000001"},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			x, y := MustParse(bm.x), MustParse(bm.y)
			sum := x
			b.ReportAllocs()
			for b.Loop() {
				sum = sum.Add(y)
			}
			_ = sum
		})
	}
}

// TestNormal: DynamoDB's form, trailing fraction zeros trimmed, whatever the
// scale a value was parsed or summed at; the value is the same.
func TestNormal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"6446.4000", "6446.4"},
		{"6446.40", "6446.4"},
		{"120.50", "120.5"},
		{"1.0", "1"},
		{"100", "100"},
		{"1E+2", "100"},
		{"1.50E+1", "15"},
		{"0.00", "0"},
		{"-0.000", "0"},
		{"-0", "0"},
		{"0E-130", "0"},
		{"-12.3400", "-12.34"},
		{"0.001000", "0.001"},
		{"007.70", "7.7"},
		{minPlain + "000", minPlain},
		{maxNumber, maxPlain},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d := MustParse(tt.in)
			before := d.String()
			n := d.Normal()
			if got := n.String(); got != tt.want {
				t.Errorf("MustParse(%q).Normal() = %s, want %s", tt.in, got, tt.want)
			}
			if n.Cmp(d) != 0 {
				t.Errorf("Normal changed the value of %s to %s", d, n)
			}
			if d.String() != before {
				t.Errorf("Normal modified its receiver: %s, was %s", d, before)
			}
			if again := n.Normal(); again.String() != n.String() {
				t.Errorf("Normal is not idempotent: %s then %s", n, again)
			}
		})
	}
	// A sum's scale is its operands', also of those retracted since; its
	// normal form is the value's alone.
	sum := MustParse("6446.40").Add(MustParse("1.0000")).Sub(MustParse("1.0000"))
	if sum.String() != "6446.4000" || sum.Normal().String() != "6446.4" {
		t.Errorf("6446.40 + 1.0000 - 1.0000 = %s, normal %s; want 6446.4000, normal 6446.4", sum, sum.Normal())
	}
}

package decimal

import (
	"slices"
	"strings"
	"testing"
)

// TestSortable: the encoding byte for byte, as docs/projections-spec.md
// documents it, and its decoding.
func TestSortable(t *testing.T) {
	z := func(n int) string { return strings.Repeat("0", n) }
	nine := func(n int) string { return strings.Repeat("9", n) }
	cases := []struct {
		in, want, back string
	}{
		{"0", "N" + z(41), "0"},
		{"-0.000", "N" + z(41), "0"},
		{"1842", "P133" + "1842" + z(34), "1842"},
		{"1.842E+3", "P133" + "1842" + z(34), "1842"},
		{"120.50", "P132" + "1205" + z(34), "120.5"},
		{"0.05", "P128" + "5" + z(37), "0.05"},
		{"1", "P130" + "1" + z(37), "1"},
		{"-1", "M125" + "8" + nine(37), "-1"},
		{"-1842", "M122" + "8157" + nine(34), "-1842"},
		{"-0.05", "M127" + "4" + nine(37), "-0.05"},
		{"1E-130", "P000" + "1" + z(37), "0." + z(129) + "1"},
		{"-1E-130", "M255" + "8" + nine(37), "-0." + z(129) + "1"},
		{maxNumber, "P255" + nines38, maxPlain},
		{"-" + maxNumber, "M000" + z(38), "-" + maxPlain},
		{"12345678901234567890123456789012345678", "P167" + "12345678901234567890123456789012345678", "12345678901234567890123456789012345678"},
	}
	for _, tc := range cases {
		got, err := MustParse(tc.in).Sortable()
		if err != nil || got != tc.want || len(got) != sortableLen {
			t.Errorf("Sortable(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		back, err := parseSortable(got)
		if err != nil || back.String() != tc.back {
			t.Errorf("ParseSortable(%q) = %s, %v; want %s", got, back, err, tc.back)
		}
	}
}

// TestSortableOrder: the encodings of numbers in order are in byte-wise
// order.
func TestSortableOrder(t *testing.T) {
	ordered := []string{"-" + maxNumber, "-1E+125", "-1842.5", "-1842", "-1000", "-999.99", "-1", "-0.5", "-0.05", "-1E-130",
		"0", "1E-130", "0.0000001", "0.05", "0.5", "1", "1.000000000000000000000000000000000001", "1.1", "9.99", "10", "120.5", "1842", "1E+125", maxNumber}
	var encs []string
	for _, n := range ordered {
		e, err := MustParse(n).Sortable()
		if err != nil {
			t.Fatal(err)
		}
		encs = append(encs, e)
	}
	if !slices.IsSorted(encs) {
		for i := 1; i < len(encs); i++ {
			if encs[i-1] >= encs[i] {
				t.Errorf("%s encodes to %s, not before %s's %s", ordered[i-1], encs[i-1], ordered[i], encs[i])
			}
		}
	}
}

// TestSortableRefused: a sum beyond what DynamoDB holds has no encoding,
// and text Sortable does not return does not decode.
func TestSortableRefused(t *testing.T) {
	big := MustParse(maxNumber).Add(MustParse(maxNumber))
	long := MustParse(nines38).Add(MustParse("0.1"))
	for _, d := range []Decimal{big, long, MustParse("2E-130").Sub(MustParse("1.5E-130"))} {
		if s, err := d.Sortable(); err == nil || !strings.Contains(err.Error(), "no sortable encoding") {
			t.Errorf("Sortable(%s) = %q, %v", d, s, err)
		}
	}
	for _, s := range []string{"", "P133", "P1331842" + strings.Repeat("0", 33), "N" + strings.Repeat("0", 40) + "1", "X" + strings.Repeat("0", 41),
		"P256" + "1" + strings.Repeat("0", 37), "P130" + "0" + strings.Repeat("0", 37), "M125" + "9" + strings.Repeat("9", 37),
		"P13a" + "1" + strings.Repeat("0", 37), "p130" + "1" + strings.Repeat("0", 37)} {
		if d, err := parseSortable(s); err == nil || !strings.HasPrefix(err.Error(), "decimal: ") {
			t.Errorf("ParseSortable(%q) = %s, %v", s, d, err)
		}
	}
}

// FuzzSortable: for any two numbers DynamoDB holds, the byte-wise order
// of their encodings is their order, and each decodes to an equal number;
// any text that decodes is the encoding of what it decodes to.
func FuzzSortable(f *testing.F) {
	for _, tt := range validTests {
		f.Add(tt.in, "0")
	}
	for _, a := range algebraValues {
		for _, b := range algebraValues {
			f.Add(a, b)
		}
	}
	f.Add("-1842", "P133"+"1842"+strings.Repeat("0", 34))
	f.Fuzz(func(t *testing.T, a, b string) {
		if d, err := parseSortable(a); err == nil {
			if e, err := d.Sortable(); err != nil || e != a {
				t.Fatalf("ParseSortable(%q) = %s, which encodes to %q, %v", a, d, e, err)
			}
		}
		x, errA := Parse(a)
		y, errB := Parse(b)
		if errA != nil || errB != nil {
			return
		}
		ex, err := x.Sortable()
		if err != nil {
			t.Fatalf("Sortable(%s): %v", a, err)
		}
		ey, err := y.Sortable()
		if err != nil {
			t.Fatalf("Sortable(%s): %v", b, err)
		}
		if len(ex) != sortableLen || len(ey) != sortableLen {
			t.Fatalf("lengths %d and %d", len(ex), len(ey))
		}
		if got, want := strings.Compare(ex, ey), x.Cmp(y); got != want {
			t.Errorf("%s vs %s: the encodings %q and %q compare %d, the numbers %d", a, b, ex, ey, got, want)
		}
		for _, c := range []struct {
			d Decimal
			e string
		}{{x, ex}, {y, ey}} {
			back, err := parseSortable(c.e)
			if err != nil || back.Cmp(c.d) != 0 {
				t.Errorf("ParseSortable(Sortable(%s)) = %s, %v", c.d, back, err)
			}
		}
	})
}

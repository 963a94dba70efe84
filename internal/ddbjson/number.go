package ddbjson

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/tributary/tributary/internal/quote"
)

// CheckNumber checks a DynamoDB number (the string of an N value): an
// optional sign, digits with an optional fraction, an optional exponent, at
// most 38 significant digits, and a magnitude DynamoDB can store (1E-130 to
// under 1E+126).
func CheckNumber(b []byte) error {
	if plainDecimal(b) {
		return nil
	}
	if why := checkNumber(b); why != "" {
		return fmt.Errorf("%s is not a number: %s", quote.Bytes(b), why)
	}
	return nil
}

// plainDecimal reports whether b is a plain decimal (see plainRun).
func plainDecimal(b []byte) bool {
	end, ok := plainRun(b, 0)
	return ok && end == len(b)
}

// PlainNumberEnd returns the index of the quote that ends the string at
// b[i:] (after its opening quote) if the string is a plain decimal, which
// CheckNumber accepts; otherwise -1, and the string may still be a number
// for CheckNumber to say. It reads an N value's string in the same pass
// that finds its end.
func PlainNumberEnd(b []byte, i int) int {
	if i+8 <= len(b) {
		if q := PlainNumberWord(binary.LittleEndian.Uint64(b[i : i+8])); q >= 0 {
			return i + q
		}
	}
	if end, ok := plainRun(b, i); ok && end < len(b) && b[end] == '"' {
		return end
	}
	return -1
}

// PlainNumberWord returns the place of the quote that ends the N value's
// string whose first eight bytes are word (little-endian) if it ends among
// them and is a plain decimal (see plainRun): the common case, answered
// inline. Otherwise it returns -1, and PlainNumberEnd says.
func PlainNumberWord(word uint64) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		lows  = 0x7f7f7f7f7f7f7f7f
	)
	q := WordStop(word) // the quote, if all before it is ASCII
	mask := lowBytes[q]
	y := word ^ ones*'0'
	nonDigits := ((y + ones*(0x7f-9)) | y) & highs & mask
	t := word ^ ones*'.'
	points := ^((t&lows + lows) | t | lows) & mask // exact
	minus := uint64(0)
	if byte(word) == '-' {
		minus = 0x80
	}
	n := bits.OnesCount64(points)
	if q == 8 || byte(word>>(8*q)) != '"' || nonDigits&^points&^minus != 0 || n > 1 || q-n-int(minus>>7) < 1 {
		return -1
	}
	return q
}

// plainRun reads digits and points, after an optional minus, from b[i] and
// returns the index of the first other byte, and whether what it read is a
// plain decimal: an optional minus, then at most 38 digits, one digit at
// least, with at most one point among them. CheckNumber accepts every plain
// decimal, whatever its digits: 38 cannot be more significant ones, nor
// reach 1E+38 or under 1E-38.
func plainRun(b []byte, i int) (end int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	start, point := i, 0
	for ; i < len(b); i++ {
		if c := b[i]; c-'0' > 9 {
			if c != '.' {
				break
			}
			point++
		}
	}
	digits := i - start - point
	return i, digits >= 1 && digits <= 38 && point <= 1
}

func checkNumber(b []byte) string {
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		i++
	}
	intStart := i
	i = digits(b, i)
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(b) && b[i] == '.' {
		fracStart = i + 1
		i = digits(b, fracStart)
		fracEnd = i
	}
	if intEnd == intStart && fracEnd == fracStart {
		return "no digits"
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		neg := false
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			neg = b[i] == '-'
			i++
		}
		k := i
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9' && i-k < 7; i++ {
			exp = exp*10 + int(b[i]-'0')
		}
		switch {
		case k == i:
			return "no digits in exponent"
		case i-k > 6 || i < len(b) && '0' <= b[i] && b[i] <= '9':
			return "exponent out of range"
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(b) {
		return "unexpected character"
	}
	first, last := significant(b, intStart, intEnd, fracStart, fracEnd)
	if first < 0 {
		return "" // zero
	}
	if last-first+1 > 38 {
		return "more than 38 significant digits"
	}
	// The decimal exponent of the first significant digit.
	if mag := (intEnd - intStart) - first - 1 + exp; mag > 125 || mag < -130 {
		return "magnitude out of range"
	}
	return ""
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// significant returns the places, in the run of a number's mantissa digits
// (the integer digits b[intStart:intEnd], then the fraction's
// b[fracStart:fracEnd]), of its first and last digit that is not 0: its
// significant digits, leading and trailing zeros trimmed as DynamoDB trims
// them. Both are -1 for zero.
func significant[S ~string | ~[]byte](b S, intStart, intEnd, fracStart, fracEnd int) (first, last int) {
	first, last = -1, -1
	n := intEnd - intStart
	for k := intStart; k < intEnd; k++ {
		if b[k] != '0' {
			if first < 0 {
				first = k - intStart
			}
			last = k - intStart
		}
	}
	for k := fracStart; k < fracEnd; k++ {
		if b[k] != '0' {
			if first < 0 {
				first = n + k - fracStart
			}
			last = n + k - fracStart
		}
	}
	return first, last
}

// SignificantDigits returns how many significant digits a DynamoDB number
// has (CheckNumber's count: sign, point, exponent and leading and trailing
// zeros not counted; 0 for zero).
func SignificantDigits(s string) int {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	intStart := i
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	intEnd, fracStart, fracEnd := i, i, i
	if i < len(s) && s[i] == '.' {
		fracStart = i + 1
		for fracEnd = fracStart; fracEnd < len(s) && '0' <= s[fracEnd] && s[fracEnd] <= '9'; fracEnd++ {
		}
	}
	first, last := significant(s, intStart, intEnd, fracStart, fracEnd)
	if first < 0 {
		return 0
	}
	return last - first + 1
}

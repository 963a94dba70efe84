package decimal

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/tributary/tributary/internal/quote"
)

// The sortable encoding of a number DynamoDB can hold: text whose byte-wise
// (lexicographic) order is the numbers' order, so that a sort key built
// with it orders rows by a decimal amount or a negative score. Every
// encoding is sortableLen bytes of printable ASCII (letters and digits),
// and equal numbers encode the same whatever their scale ("1.50" and
// "15E-1"). docs/projections-spec.md ("Sortable numbers") documents it for
// programs in other languages.
//
// Write a non-zero number x as ±0.d₁d₂…d₃₈ × 10^(e+1), that is ±d₁.d₂…d₃₈
// × 10^e with d₁ ≠ 0: e is its adjusted exponent, from -130 to 125, and the
// digits are its significant digits padded with zeros to 38. Then:
//
//	byte 0      'P' (0x50) for a positive number, 'M' (0x4D) for a
//	            negative one, 'N' (0x4E) for zero
//	bytes 1–3   positive: e + 130, as three decimal digits ("000" to
//	            "255"); negative: 125 − e, the same way
//	bytes 4–41  positive: d₁ … d₃₈; negative: 9 − d₁ … 9 − d₃₈
//
// Zero is 'N' followed by 41 '0's. So negatives sort before zero before
// positives; among positives, a greater exponent first decides, then the
// digits; among negatives, both are complemented, so that a greater
// magnitude sorts first. The width is fixed, so that whatever follows the
// encoding in a key never takes part in the order of two numbers.
const (
	// sortableLen is the length of every sortable encoding.
	sortableLen = 1 + 3 + maxDigits

	sortNegative = 'M'
	sortZero     = 'N'
	sortPositive = 'P'
	// expBias makes the adjusted exponent of a positive number, -130 to
	// 125, a number from 0 to 255.
	expBias = -minExp
	expMax  = maxExp + expBias
)

// Sortable returns d's sortable encoding (see sortableLen). d must be a
// number DynamoDB can hold: at most 38 significant digits, its magnitude 0
// or from 1E-130 to below 1E+126 (a Decimal from Parse always is; a sum
// may not be).
func (d Decimal) Sortable() (string, error) {
	if d.Sign() == 0 {
		return string(sortZero) + strings.Repeat("0", sortableLen-1), nil
	}
	digits := new(big.Int).Abs(d.unscaled).Text(10)
	exp := len(digits) - 1 - d.scale // the adjusted exponent
	digits = strings.TrimRight(digits, "0")
	if len(digits) > maxDigits || exp < minExp || exp > maxExp {
		return "", fmt.Errorf("decimal: %s is not a number DynamoDB can hold (at most %d significant digits, magnitude from 1E%d to below 1E+%d): it has no sortable encoding",
			quote.Value(d.String()), maxDigits, minExp, maxExp+1)
	}
	var b strings.Builder
	b.Grow(sortableLen)
	code := exp + expBias
	if d.Sign() > 0 {
		b.WriteByte(sortPositive)
		fmt.Fprintf(&b, "%03d", code)
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", maxDigits-len(digits)))
		return b.String(), nil
	}
	b.WriteByte(sortNegative)
	fmt.Fprintf(&b, "%03d", expMax-code)
	for i := 0; i < len(digits); i++ {
		b.WriteByte('9' - (digits[i] - '0'))
	}
	b.WriteString(strings.Repeat("9", maxDigits-len(digits)))
	return b.String(), nil
}

// parseSortable decodes a sortable encoding (see sortableLen), giving the
// number with the least scale that holds it exactly ("1.5", "1842",
// "-0.05"). Anything that Sortable does not return is an error.
func parseSortable(s string) (Decimal, error) {
	bad := func(why string) (Decimal, error) {
		return Decimal{}, fmt.Errorf("decimal: %s is not a sortable number: %s", quote.Value(s), why)
	}
	if len(s) != sortableLen {
		return bad(fmt.Sprintf("want %d bytes, got %d", sortableLen, len(s)))
	}
	for i := 1; i < len(s); i++ {
		if !isDigit(s[i]) {
			return bad(fmt.Sprintf("byte %d is not a digit", i))
		}
	}
	switch s[0] {
	case sortZero:
		if strings.Trim(s[1:], "0") != "" {
			return bad("zero is N and 41 zeros")
		}
		return Decimal{}, nil
	case sortPositive, sortNegative:
	default:
		return bad("it starts with neither M, N nor P")
	}
	neg := s[0] == sortNegative
	code := int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	if code > expMax {
		return bad(fmt.Sprintf("exponent %s is beyond %d", s[1:4], expMax))
	}
	digits := []byte(s[4:])
	if neg {
		code = expMax - code
		for i := range digits {
			digits[i] = '9' - (digits[i] - '0')
		}
	}
	if digits[0] == '0' {
		return bad("its first digit is 0")
	}
	exp := code - expBias
	sig := strings.TrimRight(string(digits), "0")
	// The number is 0.sig × 10^(exp+1): sig × 10^(exp+1-len(sig)).
	text := sig + "E" + fmt.Sprint(exp+1-len(sig))
	if neg {
		text = "-" + text
	}
	d, err := Parse(text)
	if err != nil {
		return bad(err.Error()) // cannot happen: the digits and exponent are in range
	}
	return d, nil
}

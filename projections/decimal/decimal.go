// Package decimal provides exact decimal arithmetic for aggregate values
// (counts, money sums) that must never go through float64.
//
// The values come from DynamoDB N attributes: decimal strings of at most 38
// significant digits whose magnitude is 0 or lies between 1E-130 and
// 9.9999999999999999999999999999999999999E+125. Parse accepts exactly that
// form; Add, Sub and Neg are exact and never round, so a sum may grow beyond
// 38 significant digits or that range (DynamoDB itself would then reject it).
//
// A Decimal keeps a scale, the number of digits after the decimal point, the
// way money amounts expect: "120.50" stays "120.50", and a sum keeps the
// largest scale of its operands. Two Decimals with the same value but
// different scales ("1.0" and "1") are equal by Cmp but not by ==. DynamoDB
// keeps no scale: it trims a number's trailing zeros, and Normal gives a
// Decimal that form.
package decimal

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/tributary/tributary/internal/quote"
)

const (
	// maxDigits is the largest number of significant digits Parse
	// accepts, as in DynamoDB.
	maxDigits = 38
	// minExp and maxExp bound the adjusted exponent (the power of ten of
	// the most significant digit) of a non-zero number.
	minExp = -130
	maxExp = 125
	// maxScale is the finest position a DynamoDB number can have a non-zero
	// digit at: 10^-(130+37). Parse drops trailing zeros beyond it (which
	// does not change the value), so that a scale never grows without bound.
	maxScale = -minExp + maxDigits - 1
	// expLimit saturates parsed exponents: it is far beyond anything in
	// range, and keeps the arithmetic on them from overflowing.
	expLimit = 100_000_000
)

// pow10 holds 10^0 … 10^maxScale. Its entries are shared and never modified.
var pow10 = func() [maxScale + 1]*big.Int {
	var t [maxScale + 1]*big.Int
	ten := big.NewInt(10)
	t[0] = big.NewInt(1)
	for i := 1; i <= maxScale; i++ {
		t[i] = new(big.Int).Mul(t[i-1], ten)
	}
	return t
}()

// Decimal is an exact decimal number: an unscaled integer times 10^-scale.
//
// The zero value is 0 (with scale 0). A Decimal is an immutable value: it is
// safe to copy and to use from several goroutines, and no method modifies its
// receiver or its arguments (except UnmarshalJSON, which replaces the whole
// value). Compare Decimals with Cmp, not ==.
type Decimal struct {
	// unscaled is never modified after the Decimal is built, so copies may
	// share it. nil means 0.
	unscaled *big.Int
	// scale is the number of digits after the decimal point, 0…maxScale.
	scale int
}

// Parse parses s the way DynamoDB reads an N attribute: an optional sign,
// digits with an optional fraction (at least one digit on either side of the
// point: "5", "5.", ".5"), and an optional exponent ('e' or 'E', an optional
// sign, at least one digit). No spaces, base prefixes, underscores, "NaN" or
// "Inf" are accepted.
//
// Significant digits are counted from the first to the last non-zero digit,
// so leading zeros and trailing zeros do not count; more than 38 is an
// error, and so is a non-zero magnitude below 1E-130 or not below 1E+126.
//
// The result's scale is the number of fraction digits less the exponent, or
// 0 if that is negative: "120.50" has scale 2, "1.5E-1" is 0.15 (scale 2),
// and "1E+2" is 100 (scale 0). Trailing zeros that would put the scale beyond
// 167 places (the finest position a DynamoDB number can reach) are dropped.
func Parse(s string) (Decimal, error) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	fracPart := ""
	if i < len(s) && s[i] == '.' {
		i++
		fracStart := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracPart = s[fracStart:i]
	}
	if len(intPart)+len(fracPart) == 0 {
		return Decimal{}, syntaxError(s)
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		expStart := i
		for i < len(s) && isDigit(s[i]) {
			exp = min(exp*10+int(s[i]-'0'), expLimit)
			i++
		}
		if i == expStart {
			return Decimal{}, syntaxError(s)
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return Decimal{}, syntaxError(s)
	}

	digits := intPart + fracPart
	first := strings.IndexFunc(digits, func(r rune) bool { return r != '0' })
	// scale may be negative here; the mantissa is digits × 10^-scale.
	scale := len(fracPart) - exp
	if first < 0 {
		// Zero, whatever the exponent.
		return Decimal{scale: min(max(scale, 0), maxScale)}, nil
	}
	last := strings.LastIndexFunc(digits, func(r rune) bool { return r != '0' })
	if last-first+1 > maxDigits {
		return Decimal{}, fmt.Errorf("decimal: %s has more than %d significant digits", quote.Value(s), maxDigits)
	}
	if adj := len(digits) - 1 - first - scale; adj < minExp || adj > maxExp {
		return Decimal{}, fmt.Errorf("decimal: %s is out of range", quote.Value(s))
	}
	// The range check bounds everything below: the last non-zero digit is
	// at 10^-maxScale or coarser, and the most significant one at 10^maxExp
	// or finer.
	digits = digits[first:]
	switch {
	case scale > maxScale:
		digits = digits[:len(digits)-(scale-maxScale)]
		scale = maxScale
	case scale < 0:
		digits += strings.Repeat("0", -scale)
		scale = 0
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		// Cannot happen: digits is a non-empty string of ASCII digits.
		return Decimal{}, syntaxError(s)
	}
	if neg {
		u.Neg(u)
	}
	return Decimal{unscaled: u, scale: scale}, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func syntaxError(s string) error {
	return fmt.Errorf("decimal: %s is not a number", quote.Value(s))
}

// MustParse is like Parse but panics if s cannot be parsed. It is meant for
// tests and constants.
func MustParse(s string) Decimal {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// FromInt returns n as a Decimal with scale 0.
func FromInt(n int64) Decimal {
	return Decimal{unscaled: big.NewInt(n)}
}

// bigInt returns the unscaled value; the result must not be modified.
func (d Decimal) bigInt() *big.Int {
	if d.unscaled == nil {
		return new(big.Int)
	}
	return d.unscaled
}

// rescaled returns a new big.Int holding d's unscaled value at the given
// scale, which must be at least d.scale.
func (d Decimal) rescaled(scale int) *big.Int {
	z := new(big.Int)
	if d.unscaled == nil {
		return z
	}
	if scale == d.scale {
		return z.Set(d.unscaled)
	}
	return z.Mul(d.unscaled, powerOfTen(scale-d.scale))
}

func powerOfTen(n int) *big.Int {
	if n < len(pow10) {
		return pow10[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// Add returns d + e, exactly, with the larger of the two scales.
func (d Decimal) Add(e Decimal) Decimal {
	scale := max(d.scale, e.scale)
	z := d.rescaled(scale)
	if e.unscaled != nil {
		if e.scale == scale {
			z.Add(z, e.unscaled)
		} else {
			z.Add(z, new(big.Int).Mul(e.unscaled, powerOfTen(scale-e.scale)))
		}
	}
	return Decimal{unscaled: z, scale: scale}
}

// Sub returns d - e, exactly, with the larger of the two scales.
func (d Decimal) Sub(e Decimal) Decimal {
	return d.Add(e.Neg())
}

// Neg returns -d, with d's scale.
func (d Decimal) Neg() Decimal {
	if d.unscaled == nil {
		return d
	}
	return Decimal{unscaled: new(big.Int).Neg(d.unscaled), scale: d.scale}
}

// Normal returns d in DynamoDB's normal form: the same value at the
// smallest scale that holds it, with no trailing zeros after the decimal
// point, as DynamoDB stores and returns a number ("Leading and trailing
// zeroes are trimmed", Amazon DynamoDB Developer Guide, Supported data
// types, Number): "6446.4000" is 6446.4, "0.00" is 0 and "100" stays 100.
// A store that sums in its own code (rather than DynamoDB's) keeps its sums
// in this form, so that what it shows does not depend on the scales of the
// operands that made them.
func (d Decimal) Normal() Decimal {
	if d.Sign() == 0 {
		return Decimal{}
	}
	if d.scale == 0 {
		return d
	}
	// Work on copies: d's unscaled value is shared by d's copies.
	u, q, r := new(big.Int).Set(d.unscaled), new(big.Int), new(big.Int)
	ten := big.NewInt(10)
	scale := d.scale
	for scale > 0 {
		q.QuoRem(u, ten, r)
		if r.Sign() != 0 {
			break
		}
		u, q = q, u
		scale--
	}
	if scale == d.scale {
		return d
	}
	return Decimal{unscaled: u, scale: scale}
}

// Cmp compares the values of d and e, ignoring scale, and returns -1 if
// d < e, 0 if d == e and +1 if d > e.
func (d Decimal) Cmp(e Decimal) int {
	ds, es := d.Sign(), e.Sign()
	switch {
	case ds != es:
		if ds < es {
			return -1
		}
		return 1
	case ds == 0:
		return 0
	case d.scale == e.scale:
		return d.unscaled.Cmp(e.unscaled)
	case d.scale < e.scale:
		return d.rescaled(e.scale).Cmp(e.unscaled)
	default:
		return d.unscaled.Cmp(e.rescaled(d.scale))
	}
}

// IsZero reports whether d is 0 (at any scale).
func (d Decimal) IsZero() bool {
	return d.Sign() == 0
}

// Sign returns -1 if d < 0, 0 if d is 0, and +1 if d > 0.
func (d Decimal) Sign() int {
	if d.unscaled == nil {
		return 0
	}
	return d.unscaled.Sign()
}

// Int64 returns d as an int64 and true if d is an integer (at any scale:
// "3.00" is 3) that fits in an int64, and 0 and false otherwise.
func (d Decimal) Int64() (int64, bool) {
	u := d.bigInt()
	if d.scale > 0 {
		q, r := new(big.Int).QuoRem(u, powerOfTen(d.scale), new(big.Int))
		if r.Sign() != 0 {
			return 0, false
		}
		u = q
	}
	if !u.IsInt64() {
		return 0, false
	}
	return u.Int64(), true
}

// String returns d in plain notation, never with an exponent, and with
// exactly scale digits after the decimal point (none, and no point, for scale
// 0): "120.50", "100", "0.15", "0.00". A sign is printed only for negative
// non-zero values, as "-". If d is within what Parse accepts (a sum may not
// be), Parse(d.String()) gives back an equal value with the same scale.
func (d Decimal) String() string {
	var digits string
	neg := false
	if d.Sign() == 0 {
		digits = "0"
	} else {
		digits = d.unscaled.Text(10)
		if digits[0] == '-' {
			neg = true
			digits = digits[1:]
		}
	}
	var b strings.Builder
	b.Grow(len(digits) + d.scale + 3)
	if neg {
		b.WriteByte('-')
	}
	if d.scale == 0 {
		b.WriteString(digits)
		return b.String()
	}
	if len(digits) <= d.scale {
		// All digits are fraction digits: pad with zeros after "0.".
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", d.scale-len(digits)))
		b.WriteString(digits)
		return b.String()
	}
	b.WriteString(digits[:len(digits)-d.scale])
	b.WriteByte('.')
	b.WriteString(digits[len(digits)-d.scale:])
	return b.String()
}

// MarshalJSON encodes d as a JSON string holding d.String(), such as
// "120.50", so that no JSON reader turns it into a float.
func (d Decimal) MarshalJSON() ([]byte, error) {
	s := d.String()
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	b = append(b, '"')
	return b, nil
}

// UnmarshalJSON decodes a JSON string or a JSON number with Parse. The JSON
// literal null leaves d unchanged, as encoding/json expects.
func (d *Decimal) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var s string
	if len(data) > 0 && data[0] == '"' {
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("decimal: %w", err)
		}
	} else {
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return errors.New("decimal: JSON value is neither a string nor a number")
		}
		s = n.String()
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

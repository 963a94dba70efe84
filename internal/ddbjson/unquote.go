package ddbjson

import (
	"unicode/utf16"
	"unicode/utf8"
)

// unquote appends to dst the value of the JSON string whose opening quote
// is just before d[start], reading from d[i] (start <= i: the bytes from
// start to i are known to need no unescaping), and returns dst and the
// index just past the closing quote. \u escapes are decoded, surrogate
// pairs joined, and a lone surrogate becomes U+FFFD, as encoding/json does.
// On a malformed string it returns a negative next, the index of the
// problem and a message: a control character, a bad escape, invalid UTF-8
// (reported at start) or the end of d before the closing quote.
func unquote(dst, d []byte, start, i int) (out []byte, next, at int, msg string) {
	out = append(dst, d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			if !utf8.Valid(out[len(dst):]) {
				return out, -1, start, "string is not valid UTF-8"
			}
			return out, i + 1, 0, ""
		case c < 0x20:
			return out, -1, i, "control character in string"
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(d) {
			break
		}
		e := d[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d, i)
			if !ok {
				return out, -1, i, "bad \\u escape"
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if i+6 <= len(d) && d[i] == '\\' && d[i+1] == 'u' {
					r2, ok = hex4(d, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return out, -1, i - 1, "bad escape \\" + string(rune(e))
		}
	}
	return out, -1, len(d), "unterminated string"
}

// hex4 reads the four hexadecimal digits at d[i:] of a \u escape.
func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

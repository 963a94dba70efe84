package ddbjson

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// Quote appends s to dst as a JSON string and returns the result. It
// escapes what JSON requires and nothing more: '"' and '\\', and control
// characters (\n, \r and \t in their short forms, the others as \u00XX).
// Invalid UTF-8 becomes \ufffd, one per invalid byte, as encoding/json
// reads it back; everything else is copied as it is. Equal strings give
// equal bytes: item keys encoded this way are stored identities (ledger
// keys, archive lines), so the form must never change.
func Quote(dst []byte, s string) []byte { return appendQuoted(dst, s, false) }

// QuoteLine is Quote that also escapes U+2028 and U+2029 (line and
// paragraph separators), as encoding/json does: for log lines that readers
// other than JSON parsers may split at them.
func QuoteLine(dst []byte, s string) []byte { return appendQuoted(dst, s, true) }

func appendQuoted(dst []byte, s string, separators bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case separators && (r == '\u2028' || r == '\u2029'):
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

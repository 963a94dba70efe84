// Package pathseg percent-encodes names (entity types) into path segments:
// the one encoder of the archive's S3 key layout and of the repartitioner's
// output layout, which differ only in the bytes they escape.
package pathseg

import "strings"

// Escape returns s with every byte for which escape reports true, and a
// leading '_' or '.', written as '%' and two upper-case hex digits; other
// bytes stay as they are.
func Escape(s string, escape func(c byte) bool) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !escape(c) && !(i == 0 && (c == '_' || c == '.')) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0xf])
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

package archive

import (
	"fmt"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
)

// ValidatePrefix accepts "" and slash-separated non-empty segments other
// than "." and "..", without a leading or trailing slash; a segment may not
// look like a partition ("entity=..." or "date=..."), which would confuse
// readers.
func ValidatePrefix(p string) error {
	if p == "" {
		return nil
	}
	if !objstore.ValidKey(p) {
		return fmt.Errorf("%q: want segments separated by single slashes, none empty, \".\" or \"..\", no leading or trailing slash", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, "entity=") || strings.HasPrefix(seg, "date=") {
			return fmt.Errorf("%q: segment %q looks like a partition", p, seg)
		}
	}
	if len(p) > 512 {
		return fmt.Errorf("%q: longer than 512 bytes", p)
	}
	return nil
}

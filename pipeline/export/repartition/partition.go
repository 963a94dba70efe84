package repartition

import (
	"fmt"
	"net/url"
	"strings"
)

// UnknownEntity is the partition of items without an entity type (no type
// attribute, or an empty one).
const UnknownEntity = "_unknown"

// EntitySegment returns the path segment of an entity type's partition,
// "entity=<value>". The value is percent-encoded as Hive encodes partition
// values (FileUtils.escapePathName): control characters, DEL and
// " # % ' * / : = ? \ { [ ] ^ become %XX with upper-case hex; other
// characters, non-ASCII included, stay as they are. A leading '_' or '.' is
// encoded too, so that no type can be mistaken for _unknown or a hidden
// name. An empty type is UnknownEntity.
func EntitySegment(entityType string) string {
	if entityType == "" {
		return "entity=" + UnknownEntity
	}
	var b strings.Builder
	b.Grow(len("entity=") + len(entityType) + 8)
	b.WriteString("entity=")
	for i := 0; i < len(entityType); i++ {
		c := entityType[i]
		if hiveEscape(c) || (i == 0 && (c == '_' || c == '.')) {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func hiveEscape(c byte) bool {
	if c < 0x20 || c == 0x7f {
		return true
	}
	switch c {
	case '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '{', '[', ']', '^':
		return true
	}
	return false
}

// ParseEntitySegment inverts EntitySegment: it returns the entity type of
// an "entity=<value>" segment ("" for UnknownEntity).
func ParseEntitySegment(seg string) (string, error) {
	v, ok := strings.CutPrefix(seg, "entity=")
	if !ok {
		return "", fmt.Errorf("repartition: %q is not an entity partition", seg)
	}
	if v == UnknownEntity {
		return "", nil
	}
	t, err := url.PathUnescape(v)
	if err != nil {
		return "", fmt.Errorf("repartition: partition %q: %w", seg, err)
	}
	return t, nil
}

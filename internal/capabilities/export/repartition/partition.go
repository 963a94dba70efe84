package repartition

import (
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/pathseg"
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
// name. An empty type is UnknownEntity. A segment longer than a file name
// may be (a type of more than about 250 bytes) ends in objstore.FitName's
// hash instead of the value: "entity=_sha256-<64 hex digits>", which no
// escaped type can spell; the manifests keep the type itself. (Versions
// before kept 16 of the digits; a run resuming their output redoes what
// they wrote under such names.)
func EntitySegment(entityType string) string {
	if entityType == "" {
		return "entity=" + UnknownEntity
	}
	// The archive's key layout escapes other bytes with the same encoder.
	return objstore.FitName("entity=", pathseg.Escape(entityType, hiveEscape), "", objstore.MaxSegmentBytes)
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

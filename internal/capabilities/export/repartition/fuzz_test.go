package repartition_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
)

// FuzzEntitySegment: every type maps to one partition segment that is a
// safe file name and key segment, which decodes back to the type (as Hive
// decodes it) unless it was hashed for length.
func FuzzEntitySegment(f *testing.F) {
	for _, s := range []string{"Comment", "", "_unknown", "..", "a/b c%", "Order/Archived:2026?", "Événement #1 100%", strings.Repeat("Très-long ", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seg := repartition.EntitySegment(s)
		v, ok := strings.CutPrefix(seg, "entity=")
		if !ok || v == "" || len(seg) > objstore.MaxSegmentBytes || !objstore.ValidKey(seg) || strings.ContainsAny(seg, "/\\\x00") {
			t.Fatalf("EntitySegment(%q) = %q is not a safe path segment", s, seg)
		}
		if s != "" && v == repartition.UnknownEntity {
			t.Fatalf("type %q maps to the untyped partition", s)
		}
		if s == "" || strings.HasPrefix(v, objstore.HashMark) {
			return
		}
		back, err := url.PathUnescape(v)
		if err != nil || back != s {
			t.Fatalf("round trip of %q: %q -> %q, %v", s, seg, back, err)
		}
	})
}

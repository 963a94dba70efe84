package objstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
)

// FuzzParse: every location either fails to parse or parses to one that
// renders and parses back to itself, with a valid prefix.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"s3://bucket/prefix", "s3://b", "s3://My_Legacy.Bucket/a/b/", "./dir", "/abs/dir", "s3://", "s3:///x", "s3://bkt//x", "s3://bkt/a/../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := objstore.Parse(s)
		if err != nil {
			return
		}
		if l.IsS3() {
			if objstore.ValidBucket(l.Bucket) != nil || l.Prefix != "" && !objstore.ValidKey(l.Prefix) {
				t.Fatalf("Parse(%q) = %+v: an invalid bucket or prefix", s, l)
			}
		} else if l.Dir != s {
			t.Fatalf("Parse(%q) = %+v: the directory is not the argument", s, l)
		}
		back, err := objstore.Parse(l.String())
		if err != nil || back != l {
			t.Fatalf("Parse(%q) = %+v renders as %q, which parses as %+v, %v", s, l, l.String(), back, err)
		}
	})
}

// FuzzFitName: a name that fits is kept; one that does not is replaced by
// its hash, keeping prefix and suffix, within the limit, the same every
// time, and different for a different name.
func FuzzFitName(f *testing.F) {
	f.Add("entity=", "Order", "", 255)
	f.Add("part-", strings.Repeat("d", 300), ".json.gz", 255)
	f.Add("", "2026-01-01-T-1", ".json.gz", 10)
	f.Fuzz(func(t *testing.T, prefix, name, suffix string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := objstore.FitName(prefix, name, suffix, max)
		if len(prefix)+len(name)+len(suffix) <= max {
			if got != prefix+name+suffix {
				t.Fatalf("FitName kept %q as %q", prefix+name+suffix, got)
			}
			return
		}
		if !strings.HasPrefix(got, prefix+objstore.HashMark) || !strings.HasSuffix(got, suffix) || len(got) != len(prefix)+objstore.HashedLen+len(suffix) {
			t.Fatalf("FitName(%q, %.40q…, %q, %d) = %q", prefix, name, suffix, max, got)
		}
		if len(prefix)+objstore.HashedLen+len(suffix) <= max && len(got) > max {
			t.Fatalf("FitName gave %d bytes, over %d", len(got), max)
		}
		if objstore.FitName(prefix, name, suffix, max) != got || objstore.FitName(prefix, name+"x", suffix, max) == got {
			t.Fatalf("FitName is not a function of the name alone")
		}
	})
}

// FuzzAcquire: whatever an output's claim object holds (a claim of this
// version, of another, a foreign object), Acquire takes it, refuses it as
// held, or says it is not a claim; it never panics, and a takeover always
// succeeds.
func FuzzAcquire(f *testing.F) {
	f.Add([]byte(`{"owner":{"id":"abc","host":"elsewhere","pid":1,"started":"2026-11-30T10:00:00Z"}}`))
	f.Add([]byte(`{"owner":{"id":"abc"},"released":"2026-11-30T10:00:00Z"}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"owner":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		st := objstore.NewDir(t.TempDir()).WithoutSync()
		if err := st.Put(ctx, "_run.json", body); err != nil {
			t.Fatal(err)
		}
		c, err := objstore.Acquire(ctx, st, "_run.json", objstore.NewOwner("fuzz"), false)
		switch {
		case err == nil:
			if err := c.Check(ctx); err != nil {
				t.Fatalf("a claim just taken fails its check: %v", err)
			}
		case errors.Is(err, objstore.ErrHeld), strings.Contains(err.Error(), "is not a claim"):
		default:
			t.Fatalf("Acquire over %q: %v", body, err)
		}
		if _, err := objstore.Acquire(ctx, st, "_run.json", objstore.NewOwner("taker"), true); err != nil {
			t.Fatalf("takeover of %q: %v", body, err)
		}
	})
}

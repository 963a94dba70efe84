package objstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     objstore.Location
	}{
		{"bucket and prefix", "s3://bucket-1/ttl/app", objstore.Location{Bucket: "bucket-1", Prefix: "ttl/app"}},
		{"trailing slash", "s3://bucket-1/ttl/app/", objstore.Location{Bucket: "bucket-1", Prefix: "ttl/app"}},
		{"bucket only", "s3://bucket-1", objstore.Location{Bucket: "bucket-1"}},
		{"bucket and slash", "s3://bucket-1/", objstore.Location{Bucket: "bucket-1"}},
		{"legacy us-east-1 name", "s3://My_Legacy.Bucket/x", objstore.Location{Bucket: "My_Legacy.Bucket", Prefix: "x"}},
		{"partition-like prefix", "s3://b12/exports/AWSDynamoDB/01796032802314-fa5ad9a8", objstore.Location{Bucket: "b12", Prefix: "exports/AWSDynamoDB/01796032802314-fa5ad9a8"}},
		{"relative directory", "./archive", objstore.Location{Dir: "./archive"}},
		{"absolute directory", "/var/tmp/out", objstore.Location{Dir: "/var/tmp/out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := objstore.Parse(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if back, _ := objstore.Parse(got.String()); back != got {
				t.Errorf("String %q parses as %+v", got, back)
			}
		})
	}
	for _, tc := range []struct{ name, in, says string }{
		{"empty", "", "empty location"},
		{"no bucket", "s3://", "has no bucket"},
		{"no bucket but a prefix", "s3:///x", "has no bucket"},
		{"short bucket", "s3://ab/x", "3 to 255"},
		{"bad bucket character", "s3://my*bucket/x", "only letters"},
		{"empty segment", "s3://bucket//x", "prefix"},
		{"dot segment", "s3://bucket/a/../b", "prefix"},
		{"prefix too long", "s3://bucket/" + strings.Repeat("p", 1024), "no room"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := objstore.Parse(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Parse(%.40q): %v, want an error saying %q", tc.in, err, tc.says)
			}
		})
	}
}

func TestOverlaps(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "exports", "AWSDynamoDB"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "exports"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	s3 := func(s string) objstore.Location {
		l, err := objstore.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	d := func(p string) objstore.Location { return objstore.Location{Dir: filepath.Join(dir, p)} }
	for _, tc := range []struct {
		name string
		a, b objstore.Location
		want bool
	}{
		{"same prefix", s3("s3://bkt/x/y"), s3("s3://bkt/x/y"), true},
		{"inside", s3("s3://bkt/x/y/split"), s3("s3://bkt/x/y"), true},
		{"outside", s3("s3://bkt/x"), s3("s3://bkt/x/y"), true},
		{"whole bucket", s3("s3://bkt"), s3("s3://bkt/x"), true},
		{"sibling prefix", s3("s3://bkt/x/y2"), s3("s3://bkt/x/y"), false},
		{"other bucket", s3("s3://cat/x/y"), s3("s3://bkt/x/y"), false},
		{"S3 and a directory", s3("s3://bkt/x"), d("x"), false},
		{"directory inside", d("exports/AWSDynamoDB/out"), d("exports/AWSDynamoDB"), true},
		{"through a symbolic link", d("link/AWSDynamoDB/new/out"), d("exports/AWSDynamoDB"), true},
		{"relative and absolute", objstore.Location{Dir: "."}, objstore.Location{Dir: mustAbs(t, ".") + "/sub"}, true},
		{"sibling directories", d("exports2"), d("exports"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Overlaps(tc.b); got != tc.want {
				t.Errorf("%s overlaps %s: %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := tc.b.Overlaps(tc.a); got != tc.want {
				t.Errorf("%s overlaps %s: %v, want %v", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFitName(t *testing.T) {
	long := strings.Repeat("Ab%2F", 60) // 300 bytes
	for _, tc := range []struct {
		name               string
		prefix, in, suffix string
		max                int
		want               string
		hashed             bool
	}{
		{"fits", "entity=", "Order", "", 255, "entity=Order", false},
		{"exactly at the limit", "part-", strings.Repeat("x", 250), "", 255, "part-" + strings.Repeat("x", 250), false},
		{"one over", "part-", strings.Repeat("x", 251), "", 255, "", true},
		{"entity type of 300 bytes", "entity=", long, "", 255, "", true},
		{"keeps the suffix", "", long, ".json.gz", 255, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := objstore.FitName(tc.prefix, tc.in, tc.suffix, tc.max)
			if len(got) > tc.max {
				t.Errorf("FitName gave %d bytes, more than %d", len(got), tc.max)
			}
			if !tc.hashed {
				if got != tc.want {
					t.Errorf("FitName = %q, want %q", got, tc.want)
				}
				return
			}
			if !strings.HasPrefix(got, tc.prefix+objstore.HashMark) || !strings.HasSuffix(got, tc.suffix) || len(got) != len(tc.prefix)+objstore.HashedLen+len(tc.suffix) {
				t.Errorf("FitName = %q, want %q, the hash mark, 64 hex digits and %q", got, tc.prefix, tc.suffix)
			}
			if again := objstore.FitName(tc.prefix, tc.in, tc.suffix, tc.max); again != got {
				t.Errorf("FitName is not deterministic: %q then %q", got, again)
			}
			if other := objstore.FitName(tc.prefix, tc.in+"x", tc.suffix, tc.max); other == got {
				t.Errorf("two names hash alike: %q", got)
			}
		})
	}
}

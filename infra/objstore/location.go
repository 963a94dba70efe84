package objstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Location is where a store is: a local directory, or an S3 bucket and
// prefix. It is the one parsed form of every --from, --to, --out, --export
// and location setting.
type Location struct {
	// Dir is a local directory, when Bucket is empty.
	Dir string
	// Bucket and Prefix address S3; Prefix has no leading or trailing
	// slash.
	Bucket, Prefix string
}

// Parse reads "s3://bucket/prefix" (the prefix optional) or a directory
// path. The bucket is checked by ValidBucket, the prefix as a key.
func Parse(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		if s == "" {
			return Location{}, errors.New("objstore: empty location")
		}
		return Location{Dir: s}, nil
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.TrimSuffix(prefix, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("objstore: %s has no bucket", s)
	}
	if err := ValidBucket(bucket); err != nil {
		return Location{}, fmt.Errorf("objstore: %s: bucket %w", s, err)
	}
	if prefix != "" {
		if !ValidKey(prefix) {
			return Location{}, fmt.Errorf("objstore: %s: prefix %q: want segments separated by single slashes, none empty, \".\" or \"..\"", s, prefix)
		}
		if len(prefix)+1 > MaxKeyBytes {
			return Location{}, fmt.Errorf("objstore: %s: prefix of %d bytes leaves no room for a key (S3 keys are at most %d bytes)", s, len(prefix), MaxKeyBytes)
		}
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// ValidBucket checks a bucket name: 3 to 255 letters, digits, '.', '-' and
// '_', the names S3 accepts (new buckets are 3 to 63 lower-case characters;
// longer and upper-case names are legacy buckets of us-east-1).
func ValidBucket(b string) error {
	if len(b) < 3 || len(b) > 255 {
		return fmt.Errorf("%q: a bucket name has 3 to 255 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return fmt.Errorf("%q: a bucket name has only letters, digits, '.', '-' and '_'", b)
		}
	}
	return nil
}

// IsS3 reports whether the location is in S3.
func (l Location) IsS3() bool { return l.Bucket != "" }

// String renders the location as Parse reads it.
func (l Location) String() string {
	switch {
	case l.Bucket == "":
		return l.Dir
	case l.Prefix == "":
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

// Overlaps reports whether one location lies inside the other (or they are
// the same place): an output there would be written among the other's
// objects. Directories are compared by absolute path, symbolic links
// resolved as far as they exist; S3 locations by bucket and whole prefix
// segments.
func (l Location) Overlaps(o Location) bool {
	if l.IsS3() != o.IsS3() {
		return false
	}
	if l.IsS3() {
		return l.Bucket == o.Bucket && within(l.Prefix, o.Prefix, "/")
	}
	a, b := realPath(l.Dir), realPath(o.Dir)
	return within(a, b, string(filepath.Separator))
}

// within reports whether a is b, or b is a, or either lies below the other,
// by whole segments.
func within(a, b, sep string) bool {
	if a == b || a == "" || b == "" || a == sep || b == sep {
		return true
	}
	return strings.HasPrefix(a, b+sep) || strings.HasPrefix(b, a+sep)
}

// realPath is the absolute, clean form of a directory, with symbolic links
// resolved for the part of it that exists.
func realPath(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	// Resolve the longest existing ancestor; keep the rest as given.
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		} else if !errors.Is(err, os.ErrNotExist) {
			return abs
		}
		if p == filepath.Dir(p) {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// Open returns the store at l: a directory, or S3 through client with
// opts.
func (l Location) Open(client S3API, opts S3Options) Store {
	if !l.IsS3() {
		return NewDir(l.Dir)
	}
	return NewS3(client, l.Bucket, l.Prefix, opts)
}

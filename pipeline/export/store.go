package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tributary/tributary/internal/objdir"
)

// Store is a place exports are read from and repartitioned output is written
// to: a local directory (Dir) or an S3 bucket and prefix (S3). Keys are
// slash-separated and relative to the store's root; both implementations
// behave alike, so every command works on either.
//
// Implementations must be safe for concurrent use. ctx bounds each call.
type Store interface {
	// Open returns an object's body; the caller closes it. A missing object
	// gives an error matching ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// List calls fn for every object whose key starts with prefix, in key
	// order, and stops at fn's first error, returning it. Temporary objects of
	// unfinished writes are never listed.
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Put writes a small object whole. It returns nil only once the object is
	// durably and entirely stored: a reader never sees part of it.
	Put(ctx context.Context, key string, body []byte) error
	// Create starts a streaming write of an object. Nothing is visible under
	// key until Commit returns nil; Abort (or a crash) leaves no object.
	Create(ctx context.Context, key string) (ObjectWriter, error)
	// Delete removes an object; a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// String names the store's root for people: a path or s3://bucket/prefix.
	String() string
}

// ObjectWriter is an object being written by Store.Create.
type ObjectWriter interface {
	io.Writer
	// Commit makes the object visible, entirely, under its key, replacing
	// any object of that name.
	Commit(ctx context.Context) error
	// Abort discards the object. It is safe after Commit (a no-op) and more
	// than once.
	Abort()
}

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
}

// ErrNotFound matches the error of opening a missing object.
var ErrNotFound = errors.New("export: object not found")

// readAll reads a whole (small) object.
func readAll(ctx context.Context, st Store, key string) ([]byte, error) {
	r, err := st.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("export: reading %s: %w", join(st.String(), key), err)
	}
	return b, nil
}

// join renders a key under a store's root for messages.
func join(root, key string) string {
	if root == "" {
		return key
	}
	if key == "" {
		return root
	}
	return strings.TrimSuffix(root, "/") + "/" + key
}

// validKey accepts slash-separated keys of non-empty segments other than
// "." and "..", without backslashes or NUL.
func validKey(key string) bool { return objdir.ValidKey(key) }

// Location is a parsed --export or --out argument.
type Location struct {
	// Dir is a local directory, when Bucket is empty.
	Dir string
	// Bucket and Prefix address S3 (Prefix without leading or trailing slash).
	Bucket, Prefix string
}

// ParseLocation reads "s3://bucket/prefix" or a local directory path.
func ParseLocation(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		if s == "" {
			return Location{}, errors.New("export: empty location")
		}
		return Location{Dir: s}, nil
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("export: %s: no bucket", s)
	}
	if prefix != "" && !validKey(prefix) {
		return Location{}, fmt.Errorf("export: %s: prefix %q has empty, \".\" or \"..\" segments", s, prefix)
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// IsS3 reports whether the location is in S3.
func (l Location) IsS3() bool { return l.Bucket != "" }

// String renders the location as ParseLocation reads it.
func (l Location) String() string {
	if l.Bucket == "" {
		return l.Dir
	}
	if l.Prefix == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

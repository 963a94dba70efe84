package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/tributary/tributary/internal/objdir"
)

// Dir is a Store in a local directory, with the same keys as S3: the object
// "a/b/c.jsonl.gz" is the file ROOT/a/b/c.jsonl.gz.
//
// Put writes a temporary file beside the target, fsyncs it, renames it over
// the target and fsyncs the directory, so an object is there entirely or not
// at all, even across a crash (internal/objdir). Temporary files start with
// ".tmp-" and are never listed.
type Dir struct {
	d *objdir.Dir
}

var _ Store = (*Dir)(nil)

// NewDir returns a Store rooted at the directory root, which Put creates
// when needed.
func NewDir(root string) *Dir { return &Dir{d: objdir.New(root)} }

// Root returns the directory the store writes under.
func (d *Dir) Root() string { return d.d.Root() }

// validKey accepts slash-separated keys of non-empty segments other than
// "." and "..", without backslashes or NUL.
func validKey(key string) bool { return objdir.ValidKey(key) }

// Put implements Putter.
func (d *Dir) Put(ctx context.Context, key string, body []byte) error {
	if err := d.d.Put(ctx, key, body); err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	return nil
}

// List implements Source. A missing root lists nothing.
func (d *Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	err := d.d.List(ctx, prefix, func(key string, size int64) error {
		return fn(Object{Key: key, Size: size})
	})
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// Open implements Source.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	f, err := d.d.Open(ctx, key)
	if errors.Is(err, fs.ErrNotExist) {
		path, _ := d.d.Path(key)
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return f, nil
}

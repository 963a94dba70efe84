package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/tributary/tributary/internal/objdir"
)

// Dir is a Store in a local directory, with the same keys as S3: the object
// "entity=Order/part-x-0000.json.gz" is the file ROOT/entity=Order/part-x-0000.json.gz.
//
// Writes go to a temporary file beside the target (named ".tmp-…", never
// listed), which Commit fsyncs and renames over the target before fsyncing
// the directory: an object is there entirely or not at all, even across a
// crash or a power cut (internal/objdir).
type Dir struct {
	d *objdir.Dir
}

var _ Store = (*Dir)(nil)

// NewDir returns a Store rooted at the directory root, which writes create
// when needed.
func NewDir(root string) *Dir { return &Dir{d: objdir.New(root)} }

// WithoutSync returns a copy of d that skips fsync: faster, still atomic
// against a crash of the process, but not against a power cut.
func (d *Dir) WithoutSync() *Dir { return &Dir{d: d.d.WithoutSync()} }

// String implements Store.
func (d *Dir) String() string { return d.d.Root() }

// Open implements Store.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	f, err := d.d.Open(ctx, key)
	if errors.Is(err, fs.ErrNotExist) {
		path, _ := d.d.Path(key)
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return f, nil
}

// List implements Store.
func (d *Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	err := d.d.List(ctx, prefix, func(key string, size int64) error {
		return fn(Object{Key: key, Size: size})
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, body []byte) error {
	if err := d.d.Put(ctx, key, body); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// Create implements Store.
func (d *Dir) Create(ctx context.Context, key string) (ObjectWriter, error) {
	w, err := d.d.Create(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return w, nil
}

// Delete implements Store.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := d.d.Delete(ctx, key); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir is a Store in a local directory, with the same keys as S3: the object
// "a/b/c.jsonl.gz" is the file ROOT/a/b/c.jsonl.gz.
//
// Put writes a temporary file beside the target, fsyncs it, renames it over
// the target and fsyncs the directory, so an object is there entirely or not
// at all, even across a crash. Temporary files start with ".tmp-" and are
// never listed.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir returns a Store rooted at the directory root, which Put creates
// when needed.
func NewDir(root string) *Dir { return &Dir{root: root} }

// Root returns the directory the store writes under.
func (d *Dir) Root() string { return d.root }

const tmpPrefix = ".tmp-"

func (d *Dir) path(key string) (string, error) {
	if !validKey(key) {
		return "", fmt.Errorf("archive: invalid object key %q", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// validKey accepts slash-separated keys of non-empty segments other than
// "." and "..", without backslashes or NUL.
func validKey(key string) bool {
	if key == "" || strings.ContainsAny(key, "\\\x00") {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Put implements Putter.
func (d *Dir) Put(ctx context.Context, key string, body []byte) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := d.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(body); err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("archive: put %s: fsync: %w", key, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("archive: put %s: fsync directory: %w", key, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// List implements Source. A missing root lists nothing.
func (d *Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	// Walk only the deepest directory the prefix names in full.
	start := d.root
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		start = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
	}
	err := filepath.WalkDir(start, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == start {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() || strings.HasPrefix(e.Name(), tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(d.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		return fn(Object{Key: key, Size: info.Size()})
	})
	if err != nil {
		return fmt.Errorf("archive: list %s: %w", filepath.Join(d.root, filepath.FromSlash(prefix)), err)
	}
	return nil
}

// Open implements Source.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	return f, err
}

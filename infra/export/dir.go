package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is a Store in a local directory, with the same keys as S3: the object
// "entity=Order/part-x-0000.json.gz" is the file ROOT/entity=Order/part-x-0000.json.gz.
//
// Writes go to a temporary file beside the target (named ".tmp-…", never
// listed), which Commit fsyncs and renames over the target before fsyncing
// the directory: an object is there entirely or not at all, even across a
// crash or a power cut.
type Dir struct {
	root   string
	noSync bool
}

var _ Store = (*Dir)(nil)

// NewDir returns a Store rooted at the directory root, which writes create
// when needed.
func NewDir(root string) *Dir { return &Dir{root: root} }

// WithoutSync returns a copy of d that skips fsync: faster, still atomic
// against a crash of the process, but not against a power cut.
func (d *Dir) WithoutSync() *Dir { c := *d; c.noSync = true; return &c }

// String implements Store.
func (d *Dir) String() string { return d.root }

const tmpPrefix = ".tmp-"

func (d *Dir) path(key string) (string, error) {
	if !validKey(key) {
		return "", fmt.Errorf("export: invalid object key %q", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Open implements Store.
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

// List implements Store. A missing root lists nothing.
func (d *Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	start := d.root
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		start = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
	}
	var objs []Object
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
		objs = append(objs, Object{Key: key, Size: info.Size()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("export: list %s: %w", filepath.Join(d.root, filepath.FromSlash(prefix)), err)
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	for _, o := range objs {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, body []byte) error {
	w, err := d.Create(ctx, key)
	if err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		w.Abort()
		return err
	}
	return w.Commit(ctx)
}

// Create implements Store.
func (d *Dir) Create(ctx context.Context, key string) (ObjectWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.path(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export: create %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("export: create %s: %w", path, err)
	}
	return &dirWriter{f: f, path: path, noSync: d.noSync}, nil
}

type dirWriter struct {
	f      *os.File
	path   string
	noSync bool
	done   bool
}

func (w *dirWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = fmt.Errorf("export: write %s: %w", w.path, err)
	}
	return n, err
}

func (w *dirWriter) Commit(ctx context.Context) (err error) {
	if w.done {
		return fmt.Errorf("export: %s: already committed or aborted", w.path)
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	if !w.noSync {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("export: fsync %s: %w", w.path, err)
		}
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("export: write %s: %w", w.path, err)
	}
	if err := os.Chmod(w.f.Name(), 0o644); err != nil {
		return fmt.Errorf("export: write %s: %w", w.path, err)
	}
	if err := os.Rename(w.f.Name(), w.path); err != nil {
		return fmt.Errorf("export: write %s: %w", w.path, err)
	}
	w.done = true
	if !w.noSync {
		if err := syncDir(filepath.Dir(w.path)); err != nil {
			return fmt.Errorf("export: fsync directory of %s: %w", w.path, err)
		}
	}
	return nil
}

func (w *dirWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
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

// Delete implements Store.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("export: delete %s: %w", path, err)
	}
	return nil
}

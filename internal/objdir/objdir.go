// Package objdir is a local directory used the way an S3 bucket is: objects
// under slash-separated keys ("entity=Order/part-0001.json.gz" is the file
// ROOT/entity=Order/part-0001.json.gz), each written all or nothing.
//
// A write goes to a temporary file beside the target (named ".tmp-…", never
// listed), which Commit fsyncs and renames over the target before fsyncing
// the directory: an object is there entirely or not at all, even across a
// crash or a power cut. The TTL archive and the export tools use it as the
// local twin of their S3 stores.
package objdir

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

// Dir is a directory of objects. It is safe for concurrent use; two writes
// of one key race, and the last rename wins, as on S3.
type Dir struct {
	root   string
	noSync bool
}

// New returns the objects under the directory root, which writes create when
// needed.
func New(root string) *Dir { return &Dir{root: root} }

// WithoutSync returns a copy of d that skips fsync: faster, still atomic
// against a crash of the process, but not against a power cut.
func (d *Dir) WithoutSync() *Dir { c := *d; c.noSync = true; return &c }

// Root returns the directory.
func (d *Dir) Root() string { return d.root }

// TempPrefix starts the names of temporary files, which List never returns.
const TempPrefix = ".tmp-"

// ValidKey accepts slash-separated keys of non-empty segments other than
// "." and "..", without backslashes or NUL.
func ValidKey(key string) bool {
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

// Path returns the file an object is stored in.
func (d *Dir) Path(key string) (string, error) {
	if !ValidKey(key) {
		return "", fmt.Errorf("invalid object key %q", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Writer writes one object. Nothing is visible under the key until Commit
// returns nil; Abort drops what was written.
type Writer struct {
	f      *os.File
	path   string
	noSync bool
	done   bool
}

// Create starts writing the object at key.
func (d *Dir) Create(ctx context.Context, key string) (*Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.Path(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &Writer{f: f, path: path, noSync: d.noSync}, nil
}

// Write appends to the object.
func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = fmt.Errorf("write %s: %w", w.path, err)
	}
	return n, err
}

// Commit makes the object visible, replacing any object of that key.
func (w *Writer) Commit(ctx context.Context) (err error) {
	if w.done {
		return fmt.Errorf("%s: already committed or aborted", w.path)
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
			return fmt.Errorf("fsync %s: %w", w.path, err)
		}
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := os.Chmod(w.f.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := os.Rename(w.f.Name(), w.path); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	w.done = true
	if !w.noSync {
		if err := syncDir(filepath.Dir(w.path)); err != nil {
			return fmt.Errorf("fsync directory of %s: %w", w.path, err)
		}
	}
	return nil
}

// Abort drops the object being written. It is a no-op after Commit.
func (w *Writer) Abort() {
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

// Put writes a whole object.
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

// Open opens the object at key; a missing object is an error matching
// fs.ErrNotExist.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.Path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(path)
}

// Delete removes the object at key; a missing one is not an error.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := d.Path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// List calls fn for every object whose key starts with prefix, in key order.
// A missing root lists nothing.
func (d *Dir) List(ctx context.Context, prefix string, fn func(key string, size int64) error) error {
	// Walk only the deepest directory the prefix names in full.
	start := d.root
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		start = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
	}
	type object struct {
		key  string
		size int64
	}
	var objs []object
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
		if e.IsDir() || strings.HasPrefix(e.Name(), TempPrefix) {
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
		objs = append(objs, object{key, info.Size()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", filepath.Join(d.root, filepath.FromSlash(prefix)), err)
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].key < objs[j].key })
	for _, o := range objs {
		if err := fn(o.key, o.size); err != nil {
			return err
		}
	}
	return nil
}

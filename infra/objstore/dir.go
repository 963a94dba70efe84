package objstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
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
// A write goes to a temporary file beside the target (named ".tmp-…", never
// listed), which Commit fsyncs and renames over the target before fsyncing
// the directory: an object is there entirely or not at all, even across a
// crash or a power cut. Two plain writes of one key race, and the last
// rename wins, as on S3. PutIfAbsent links the temporary file to the target
// (link(2) fails if the target exists); Swap and the version it compares
// are taken under an exclusive flock(2) of the target's directory.
type Dir struct {
	root   string
	noSync bool
}

var _ Store = (*Dir)(nil)

// NewDir returns the objects under the directory root, which writes create
// when needed.
func NewDir(root string) *Dir { return &Dir{root: root} }

// WithoutSync returns a copy of d that skips fsync: faster, still atomic
// against a crash of the process, but not against a power cut.
func (d *Dir) WithoutSync() *Dir { c := *d; c.noSync = true; return &c }

// Root returns the directory.
func (d *Dir) Root() string { return d.root }

// String implements Store.
func (d *Dir) String() string { return d.root }

// TempPrefix starts the names of temporary files, which List never returns
// and Sweep removes.
const TempPrefix = ".tmp-"

// objectPath returns the file an object is stored in.
func (d *Dir) objectPath(key string) (string, error) {
	if err := checkKey("", key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// readPath is Path for reads, which accept any valid key.
func (d *Dir) readPath(key string) (string, error) {
	if !ValidKey(key) {
		return "", fmt.Errorf("objstore: invalid key %q", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// dirWriter writes one object.
type dirWriter struct {
	f      *os.File
	path   string
	noSync bool
	done   bool
}

// Create implements Store.
func (d *Dir) Create(ctx context.Context, key string) (Writer, error) {
	return d.create(ctx, key)
}

func (d *Dir) create(ctx context.Context, key string) (*dirWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.objectPath(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("objstore: create %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("objstore: create %s: %w", path, err)
	}
	return &dirWriter{f: f, path: path, noSync: d.noSync}, nil
}

func (w *dirWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = fmt.Errorf("objstore: write %s: %w", w.path, err)
	}
	return n, err
}

// finish syncs and closes the temporary file, ready to be renamed or linked.
func (w *dirWriter) finish(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("objstore: %s: already committed or aborted", w.path)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !w.noSync {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("objstore: fsync %s: %w", w.path, err)
		}
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("objstore: write %s: %w", w.path, err)
	}
	if err := os.Chmod(w.f.Name(), 0o644); err != nil {
		return fmt.Errorf("objstore: write %s: %w", w.path, err)
	}
	return nil
}

// Commit implements Writer.
func (w *dirWriter) Commit(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	if err := w.finish(ctx); err != nil {
		return err
	}
	if err := os.Rename(w.f.Name(), w.path); err != nil {
		return fmt.Errorf("objstore: write %s: %w", w.path, err)
	}
	w.done = true
	return w.syncDir()
}

// link is Commit that fails with ErrPreconditionFailed if the target exists.
func (w *dirWriter) link(ctx context.Context) (err error) {
	defer w.Abort() // the temporary name goes in every case
	if err := w.finish(ctx); err != nil {
		return err
	}
	if err := os.Link(w.f.Name(), w.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s exists", ErrPreconditionFailed, w.path)
		}
		return fmt.Errorf("objstore: write %s: %w", w.path, err)
	}
	return w.syncDir()
}

func (w *dirWriter) syncDir() error {
	if w.noSync {
		return nil
	}
	if err := syncDir(filepath.Dir(w.path)); err != nil {
		return fmt.Errorf("objstore: fsync directory of %s: %w", w.path, err)
	}
	return nil
}

// Abort implements Writer.
func (w *dirWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	// Abort has no one to tell: the object is discarded whatever these
	// return, and a temporary file they fail to remove is never listed and
	// goes with the next Sweep.
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}

func syncDir(dir string) (err error) {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// written returns a writer of key holding body, not yet committed.
func (d *Dir) written(ctx context.Context, key string, body []byte) (*dirWriter, error) {
	w, err := d.create(ctx, key)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(body); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, body []byte) error {
	w, err := d.written(ctx, key, body)
	if err != nil {
		return err
	}
	return w.Commit(ctx)
}

// Open implements Store.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.readPath(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	return f, nil
}

// Get implements Store. The version is the hex MD5 of the content.
func (d *Dir) Get(ctx context.Context, key string) ([]byte, string, error) {
	b, err := ReadAll(ctx, d, key)
	if err != nil {
		return nil, "", err
	}
	return b, version(b), nil
}

func version(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// PutIfAbsent implements Store with link(2), which fails if the target
// exists.
func (d *Dir) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	w, err := d.written(ctx, key, body)
	if err != nil {
		return "", err
	}
	if err := w.link(ctx); err != nil {
		return "", err
	}
	return version(body), nil
}

// Swap implements Store: the comparison and the rename happen under an
// exclusive flock(2) of the object's directory, which every Swap of that
// directory takes.
func (d *Dir) Swap(ctx context.Context, key string, body []byte, ver string) (string, error) {
	w, err := d.written(ctx, key, body)
	if err != nil {
		return "", err
	}
	unlock, err := lockDir(filepath.Dir(w.path))
	if err != nil {
		w.Abort()
		return "", fmt.Errorf("objstore: locking the directory of %s: %w", w.path, err)
	}
	defer unlock()
	cur, err := os.ReadFile(w.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		w.Abort()
		return "", fmt.Errorf("%w: %s is gone", ErrPreconditionFailed, w.path)
	case err != nil:
		w.Abort()
		return "", fmt.Errorf("objstore: %w", err)
	case version(cur) != ver:
		w.Abort()
		return "", fmt.Errorf("%w: %s changed since version %s was read", ErrPreconditionFailed, w.path, ver)
	}
	if err := w.Commit(ctx); err != nil {
		return "", err
	}
	return version(body), nil
}

// Delete implements Store.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := d.readPath(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: delete %s: %w", path, err)
	}
	return nil
}

// DeleteIf implements Store: the comparison and the removal happen under the
// exclusive flock(2) of the object's directory that Swap takes, so it is
// atomic against Swap and DeleteIf (a plain Put, a rename, takes no lock).
func (d *Dir) DeleteIf(ctx context.Context, key, ver string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := d.readPath(key)
	if err != nil {
		return err
	}
	unlock, err := lockDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is gone", ErrPreconditionFailed, path)
	}
	if err != nil {
		return fmt.Errorf("objstore: locking the directory of %s: %w", path, err)
	}
	defer unlock()
	cur, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s is gone", ErrPreconditionFailed, path)
	case err != nil:
		return fmt.Errorf("objstore: %w", err)
	case version(cur) != ver:
		return fmt.Errorf("%w: %s changed since version %s was read", ErrPreconditionFailed, path, ver)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("objstore: delete %s: %w", path, err)
	}
	return nil
}

// walk calls fn for every regular file below the deepest directory prefix
// names in full whose key starts with prefix, temporary ones included; a
// missing root walks nothing.
func (d *Dir) walk(ctx context.Context, prefix string, fn func(path, key string, e fs.DirEntry) error) error {
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
		if e.IsDir() {
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
		return fn(path, key, e)
	})
	if err != nil {
		return fmt.Errorf("objstore: list %s: %w", filepath.Join(d.root, filepath.FromSlash(prefix)), err)
	}
	return nil
}

// List implements Store.
func (d *Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	var objs []Object
	err := d.walk(ctx, prefix, func(_, key string, e fs.DirEntry) error {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			return nil
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while listed, as S3 may leave it out
		}
		if err != nil {
			return err
		}
		objs = append(objs, Object{Key: key, Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	for _, o := range objs {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Sweep implements Store: it removes the temporary files under prefix.
func (d *Dir) Sweep(ctx context.Context, prefix string) (int, error) {
	n := 0
	err := d.walk(ctx, prefix, func(path, _ string, e fs.DirEntry) error {
		if !strings.HasPrefix(e.Name(), TempPrefix) {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		n++
		return nil
	})
	return n, err
}

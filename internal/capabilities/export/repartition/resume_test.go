package repartition_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
)

// crashStore wraps a store and fails the Nth commit or put of a key
// matching a pattern, as a crash would stop a run there; it also counts
// the objects opened.
type crashStore struct {
	objstore.Store
	match   string
	after   int64 // fail once this many matching writes have succeeded
	n       atomic.Int64
	mu      sync.Mutex
	opened  map[string]int
	crashed atomic.Bool
}

var errCrash = errors.New("simulated crash")

func (c *crashStore) hit(key string) error {
	if c.match != "" && strings.Contains(key, c.match) && c.n.Add(1) > c.after {
		c.crashed.Store(true)
		return errCrash
	}
	return nil
}

func (c *crashStore) Put(ctx context.Context, key string, body []byte) error {
	if err := c.hit(key); err != nil {
		return err
	}
	return c.Store.Put(ctx, key, body)
}

func (c *crashStore) Create(ctx context.Context, key string) (objstore.Writer, error) {
	w, err := c.Store.Create(ctx, key)
	if err != nil {
		return nil, err
	}
	return &crashWriter{Writer: w, c: c, key: key}, nil
}

func (c *crashStore) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	c.mu.Lock()
	if c.opened == nil {
		c.opened = map[string]int{}
	}
	c.opened[key]++
	c.mu.Unlock()
	return c.Store.Open(ctx, key)
}

type crashWriter struct {
	objstore.Writer
	c   *crashStore
	key string
}

func (w *crashWriter) Commit(ctx context.Context) error {
	if err := w.c.hit(w.key); err != nil {
		w.Abort()
		return err
	}
	return w.Writer.Commit(ctx)
}

// TestCrashResume stops runs at several points (a part's commit, a source
// record, an entity manifest, the summary) and reruns them: the output is
// never complete before the summary, the rerun does only the data files
// not done, and the result equals a clean run's, with no stray objects.
func TestCrashResume(t *testing.T) {
	ctx := context.Background()
	srcStore, _, fx := exportgen.CopyFixture(t)
	clean := t.TempDir()
	{
		e := exportgen.OpenFixture(t, srcStore)
		r, _ := repartition.NewRepartitioner(e, nil, objstore.NewDir(clean).WithoutSync(), repartition.Options{MaxPartBytes: 32 << 10})
		if _, err := r.Run(ctx, 2, false); err != nil {
			t.Fatal(err)
		}
	}
	want := exportgen.ReadTree(t, clean)
	for _, tc := range []struct {
		name  string
		match string
		after int64
	}{
		{"part", "/part-", 7},
		{"record", "_parts/", 2},
		{"manifest", "_manifest.json", 3},
		{"summary", repartition.SummaryKey, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			src := &crashStore{Store: srcStore}
			e, err := export.OpenExport(ctx, src, fx.Full.Dir, export.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out := &crashStore{Store: objstore.NewDir(outDir).WithoutSync(), match: tc.match, after: tc.after}
			r, _ := repartition.NewRepartitioner(e, nil, out, repartition.Options{MaxPartBytes: 32 << 10})
			if _, err := r.Run(ctx, 2, false); !errors.Is(err, errCrash) {
				t.Fatalf("run: %v, want the simulated crash", err)
			}
			if _, err := os.Stat(filepath.Join(outDir, repartition.SummaryKey)); err == nil {
				t.Fatal("a crashed run left a summary")
			}
			if _, err := reimport.OpenOutput(ctx, objstore.NewDir(outDir)); !errors.Is(err, reimport.ErrIncomplete) {
				t.Fatalf("OpenOutput after a crash: %v, want ErrIncomplete", err)
			}
			done := 0
			if ents, err := os.ReadDir(filepath.Join(outDir, "_parts")); err == nil {
				done = len(ents)
			}
			// Rerun, as a new process would.
			src2 := &crashStore{Store: srcStore}
			e2, _ := export.OpenExport(ctx, src2, fx.Full.Dir, export.OpenOptions{})
			r2, _ := repartition.NewRepartitioner(e2, nil, objstore.NewDir(outDir).WithoutSync(), repartition.Options{MaxPartBytes: 32 << 10})
			if _, err := r2.Run(ctx, 2, false); err != nil {
				t.Fatalf("rerun: %v", err)
			}
			reread := 0
			for k := range src2.opened {
				if strings.Contains(k, "/data/") {
					reread++
				}
			}
			if wantReread := len(e.Files) - done; reread != wantReread {
				t.Errorf("rerun read %d data files; %d of %d were done, so want %d", reread, done, len(e.Files), wantReread)
			}
			got := exportgen.ReadTree(t, outDir)
			for name := range got {
				if strings.Contains(name, ".tmp-") {
					t.Errorf("stray temporary file %s", name)
				}
			}
			// The summary and the claim record their run; the rest is the same.
			delete(got, repartition.SummaryKey)
			delete(got, repartition.ClaimKey)
			w := map[string][]byte{}
			for k, v := range want {
				w[k] = v
			}
			delete(w, repartition.SummaryKey)
			delete(w, repartition.ClaimKey)
			if len(got) != len(w) {
				t.Errorf("rerun output has %d files, a clean run %d", len(got), len(w))
			}
			for name, b := range w {
				if string(got[name]) != string(b) {
					t.Errorf("%s differs from a clean run's", name)
				}
			}
			exportgen.CompareLines(t, exportgen.OutputLines(t, objstore.NewDir(outDir)), exportgen.ExpectedLines(fx.FullItems, nil))
		})
	}
}

// TestRedoOnChangedSettings reruns into the same output with other
// settings: the old summary goes first, the old parts are removed as
// orphans, and the result is the new run's alone.
func TestRedoOnChangedSettings(t *testing.T) {
	ctx := context.Background()
	srcStore, _, fx := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, srcStore)
	outDir := t.TempDir()
	out := objstore.NewDir(outDir).WithoutSync()
	r, _ := repartition.NewRepartitioner(e, nil, out, repartition.Options{})
	if _, err := r.Run(ctx, 2, false); err != nil {
		t.Fatal(err)
	}
	r2, _ := repartition.NewRepartitioner(e, nil, out, repartition.Options{Compression: repartition.Zstd})
	s, err := r2.Run(ctx, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Totals.OrphansRemoved == 0 {
		t.Error("the gzip parts of the first run were not removed")
	}
	matches, _ := filepath.Glob(filepath.Join(outDir, "entity=*", "*.gz"))
	if len(matches) > 0 {
		t.Errorf("left %d gzip parts, e.g. %s", len(matches), matches[0])
	}
	exportgen.CompareLines(t, exportgen.OutputLines(t, out), exportgen.ExpectedLines(fx.FullItems, nil))
	// --force redoes a complete run of the same settings.
	r3, _ := repartition.NewRepartitioner(e, nil, out, repartition.Options{Compression: repartition.Zstd})
	if done, err := r3.Begin(ctx, true); err != nil || done != nil {
		t.Fatalf("Begin(force): %v, %v", done, err)
	}
	if _, err := os.Stat(filepath.Join(outDir, repartition.SummaryKey)); err == nil {
		t.Error("Begin(force) kept the summary")
	}
}

// TestForceListFailure: a forced rerun that cannot list the records of the
// data files done fails, rather than keeping them, which would have the run
// skip those files as done.
func TestForceListFailure(t *testing.T) {
	ctx := context.Background()
	srcStore, _, _ := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, srcStore)
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 2, false); err != nil {
		t.Fatal(err)
	}
	errList := errors.New("the service is unavailable")
	r2, err := repartition.NewRepartitioner(e, nil, objstoretest.Faulty(out, "_parts/", objstoretest.Faults{List: errList}), repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := r2.Begin(ctx, true); !errors.Is(err, errList) {
		t.Errorf("Begin(force): %v, %v; want the listing's error", done, err)
	}
}

// TestFailedRunReleaseFailure: a run that fails and then cannot release
// its claim reports both, naming the claim it leaves held.
func TestFailedRunReleaseFailure(t *testing.T) {
	ctx := context.Background()
	srcStore, _, _ := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, srcStore)
	errStuck := errors.New("the service is unavailable")
	out := &crashStore{Store: objstore.NewDir(t.TempDir()).WithoutSync(), match: "/part-"}
	r, err := repartition.NewRepartitioner(e, nil, objstoretest.Faulty(out, repartition.ClaimKey, objstoretest.Faults{Swap: errStuck}), repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 2, false); !errors.Is(err, errCrash) || !errors.Is(err, errStuck) || !strings.Contains(err.Error(), "releasing the claim") || !strings.Contains(err.Error(), repartition.ClaimKey) {
		t.Errorf("run: %v; want the simulated crash and the release's error, naming the claim", err)
	}
}

package exportgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

// Helpers for the tests of the packages that read, split and reload exports
// (export, export/repartition, export/reimport, the CLI, the repartitioner
// function): the checked-in fixture, generated exports, and the expected
// and actual lines of a repartition's output.

// FixtureDir returns the checked-in fixture export's directory,
// internal/capabilities/export/testdata/export, wherever the test runs from.
func FixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "internal", "capabilities", "export", "testdata", "export")
}

// ReadTree returns every file below root, by slash-separated path.
func ReadTree(t testing.TB, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CopyFixture copies the checked-in export into a temporary directory (so
// a test may break it) and returns its store, the directory, and what the
// generator wrote.
func CopyFixture(t testing.TB) (*objstore.Dir, string, *Fixture) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(FixtureDir())); err != nil {
		t.Fatal(err)
	}
	fx := FixtureItems(t)
	return objstore.NewDir(dir).WithoutSync(), dir, fx
}

var (
	fxOnce sync.Once
	fxVal  *Fixture
	fxErr  error
)

// FixtureItems returns the generator's account of the fixture (items and
// changes), computed once.
func FixtureItems(t testing.TB) *Fixture {
	t.Helper()
	fxOnce.Do(func() {
		fxVal, fxErr = WriteFixture(context.Background(), objstore.NewDir(t.TempDir()).WithoutSync())
	})
	if fxErr != nil {
		t.Fatal(fxErr)
	}
	return fxVal
}

// ExpectedLines returns, per partition segment, the sorted export lines of
// items: what a repartition must write, byte for byte.
func ExpectedLines(items []pipeline.Item, transform func(pipeline.Item) pipeline.Item) map[string][]string {
	out := map[string][]string{}
	for _, it := range items {
		if transform != nil {
			it = transform(it)
		}
		typ := ""
		if v, ok := it["EntityType"].(*types.AttributeValueMemberS); ok {
			typ = v.Value
		}
		seg := repartition.EntitySegment(typ)
		out[seg] = append(out[seg], `{"Item":`+string(pipeline.AppendItem(nil, it))+`}`)
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// OutputLines reads every part of a repartition's output, per segment,
// checking the entity manifests and the summary on the way.
func OutputLines(t testing.TB, st reimport.Store) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out, err := reimport.OpenOutput(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, m := range out.Entities {
		var lines []string
		for _, p := range m.Parts {
			err := out.ReadPart(ctx, p, func(line []byte, _ int) error {
				lines = append(lines, string(line))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if int64(len(lines)) != m.ItemCount {
			t.Errorf("%s: manifest says %d items, parts hold %d", m.Segment, m.ItemCount, len(lines))
		}
		sort.Strings(lines)
		got[m.Segment] = lines
	}
	return got
}

// CompareLines reports, per segment, how got differs from want.
func CompareLines(t testing.TB, got, want map[string][]string) {
	t.Helper()
	segs := map[string]bool{}
	for s := range got {
		segs[s] = true
	}
	for s := range want {
		segs[s] = true
	}
	for s := range segs {
		g, w := got[s], want[s]
		if len(g) != len(w) {
			t.Errorf("%s: %d items, want %d", s, len(g), len(w))
			continue
		}
		for i := range g {
			if g[i] != w[i] {
				t.Errorf("%s: item differs:\n got %.300s\nwant %.300s", s, g[i], w[i])
				break
			}
		}
	}
}

// OpenFixture opens the fixture's full export in st, checking on the way
// that its root, which holds two exports, is refused without a name.
func OpenFixture(t testing.TB, st export.Source) *export.Export {
	t.Helper()
	if _, err := export.OpenExport(context.Background(), st, "", export.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "holds 2 exports") {
		t.Fatalf("opening the fixture's root: %v, want a complaint about 2 exports", err)
	}
	fx := FixtureItems(t)
	e, err := export.OpenExport(context.Background(), st, fx.Full.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Generated writes a full export of about size bytes in files data
// files, of items like those of a simulated workload (seed, changes), and
// opens it; it returns the export and its uncompressed size.
func Generated(tb testing.TB, seed uint64, changes int, size int64, files int) (*export.Export, int64) {
	tb.Helper()
	return GeneratedIn(tb, tb.TempDir(), seed, changes, size, files)
}

// GeneratedIn is Generated into the directory dir (the export is
// dir/AWSDynamoDB/<ExportId>).
func GeneratedIn(tb testing.TB, dir string, seed uint64, changes int, size int64, files int) (*export.Export, int64) {
	tb.Helper()
	ctx := context.Background()
	h, err := sim.Workload{Seed: seed, Changes: changes}.Run()
	if err != nil {
		tb.Fatal(err)
	}
	src := objstore.NewDir(dir).WithoutSync()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := WriteFull(ctx, src, Export{ID: ExportID(at, seed), Time: at, Files: files},
		Synthetic(h.Table.Items(), size, seed))
	if err != nil {
		tb.Fatal(err)
	}
	e, err := export.OpenExport(ctx, src, res.Dir, export.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return e, res.UncompressedBytes
}

// FixtureOverlay opens the fixture's incremental export in src and loads
// it as an overlay onto full, checking on the way that it is the one the
// generator wrote: an incremental export of two data files in the shared
// data folder, touching every changed item.
func FixtureOverlay(t testing.TB, src export.Source, full *export.Export) *export.Overlay {
	t.Helper()
	ctx := context.Background()
	fx := FixtureItems(t)
	inc, err := export.OpenExport(ctx, src, fx.Incremental.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !inc.Summary.Incremental() || len(inc.Files) != 2 || !strings.HasPrefix(inc.DataKey(inc.Files[0]), "AWSDynamoDB/data/") {
		t.Fatalf("incremental export: %+v", inc.Summary)
	}
	ov, err := export.LoadOverlay(ctx, full, []*export.Export{inc}, pipeline.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Len() != len(fx.Changes) {
		t.Errorf("overlay holds %d items, want %d", ov.Len(), len(fx.Changes))
	}
	return ov
}

// Gunzip returns the content of a gzip object, as a data file of an export
// holds it; it fails the test when raw is not gzip.
func Gunzip(tb testing.TB, raw []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

package export_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

var update = flag.Bool("update", false, "rewrite testdata/export from exportgen.WriteFixture")

const fixtureDir = "testdata/export"

// TestFixtureUpToDate regenerates the checked-in export and compares it byte
// for byte: the generator is deterministic, and the fixture is its output.
func TestFixtureUpToDate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := exportgen.WriteFixture(ctx, objstore.NewDir(dir).WithoutSync()); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.RemoveAll(fixtureDir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(fixtureDir, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	want := exportgen.ReadTree(t, dir)
	got := exportgen.ReadTree(t, fixtureDir)
	if len(got) != len(want) {
		t.Fatalf("%s has %d files, the generator writes %d (go test -run TestFixtureUpToDate -update)", fixtureDir, len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s/%s differs from the generator's output (go test -run TestFixtureUpToDate -update)", fixtureDir, name)
		}
	}
}

func TestOverlayGap(t *testing.T) {
	ctx := context.Background()
	src, dir, fx := exportgen.CopyFixture(t)
	full := exportgen.OpenFixture(t, src)
	// Move the incremental export's start an hour past the full export.
	p := filepath.Join(dir, fx.Incremental.Dir, "manifest-summary.json")
	b, _ := os.ReadFile(p)
	e0, _ := export.OpenExport(ctx, src, fx.Incremental.Dir, export.OpenOptions{})
	later := full.Time().Add(time.Hour).Format("2006-01-02T15:04:05.000Z")
	if err := os.WriteFile(p, bytes.Replace(b, []byte(e0.Summary.ExportFromTime), []byte(later), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	inc, err := export.OpenExport(ctx, src, fx.Incremental.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = export.LoadOverlay(ctx, full, []*export.Export{inc}, pipeline.Options{}, false)
	if err == nil || !strings.Contains(err.Error(), "gap between") {
		t.Errorf("gap: %v", err)
	}
}

// TestReadLinesMD5: a data file is hashed and checked against the
// manifest's md5Checksum, unless skipMD5, which skips the hashing too.
func TestReadLinesMD5(t *testing.T) {
	ctx := context.Background()
	src, _, _ := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, src)
	f := e.Files[0]
	if f.MD5Checksum == "" {
		t.Fatalf("the fixture's %s has no md5Checksum", f.DataFileS3Key)
	}
	for _, skip := range []bool{false, true} {
		st, err := e.ReadLines(ctx, f, skip, func([]byte, int) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: f.MD5Checksum, true: ""}[skip]; st.MD5 != want || st.Lines != f.ItemCount {
			t.Errorf("skipMD5 %v: MD5 %q, %d lines; want %q and %d", skip, st.MD5, st.Lines, want, f.ItemCount)
		}
	}
}

// TestReadLinesBodyFaults: a data file whose body fails at its end (a read
// past the last byte, which hashing the whole object drains to, or its
// close) fails ReadLines rather than reading as if all were well.
func TestReadLinesBodyFaults(t *testing.T) {
	ctx := context.Background()
	src, _, _ := exportgen.CopyFixture(t)
	f := exportgen.OpenFixture(t, src).Files[0]
	empty := export.DataFile{DataFileS3Key: strings.Replace(f.DataFileS3Key, ".json.gz", "-empty.json.gz", 1)}
	if err := src.Put(ctx, exportgen.OpenFixture(t, src).DataKey(empty), nil); err != nil {
		t.Fatal(err)
	}
	errEnd, errClose := errors.New("connection reset after the last byte"), errors.New("connection reset while closing")
	for _, tc := range []struct {
		name   string
		file   export.DataFile
		faults objstoretest.Faults
		want   error
		named  bool // the error names the data file
	}{
		{"read after the end", f, objstoretest.Faults{AfterEnd: errEnd}, errEnd, true},
		{"read after the end of an empty file", empty, objstoretest.Faults{AfterEnd: errEnd}, errEnd, true},
		{"close", f, objstoretest.Faults{Close: errClose}, errClose, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := exportgen.OpenFixture(t, objstoretest.Faulty(src, "/data/", tc.faults))
			st, err := e.ReadLines(ctx, tc.file, false, func([]byte, int) error { return nil })
			if !errors.Is(err, tc.want) || tc.named && !strings.Contains(err.Error(), path.Base(tc.file.DataFileS3Key)) {
				t.Errorf("ReadLines: %+v, %v; want %v", st, err, tc.want)
			}
		})
	}
}

// TestItems: the items stream verify reads is the export's final state,
// the incremental export applied.
func TestItems(t *testing.T) {
	ctx := context.Background()
	src, _, fx := exportgen.CopyFixture(t)
	full := exportgen.OpenFixture(t, src)
	ov := exportgen.FixtureOverlay(t, src, full)
	want := map[string]bool{}
	for _, it := range fx.FinalItems {
		want[string(pipeline.AppendItem(nil, it))] = true
	}
	n := 0
	err := export.Items(ctx, full, ov, pipeline.Options{}, false, func(it pipeline.Item) error {
		n++
		if b := pipeline.AppendItem(nil, it); !want[string(b)] {
			t.Errorf("Items gave %.200s, not a final item", b)
		}
		return nil
	})
	if err != nil || n != len(fx.FinalItems) {
		t.Errorf("Items: %d items, err %v; want %d", n, err, len(fx.FinalItems))
	}
}

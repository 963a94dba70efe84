package export_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/export"
)

var update = flag.Bool("update", false, "rewrite testdata/export from exportgen.WriteFixture")

const fixtureDir = "testdata/export"

// TestFixtureUpToDate regenerates the checked-in export and compares it byte
// for byte: the generator is deterministic, and the fixture is its output.
func TestFixtureUpToDate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := exportgen.WriteFixture(ctx, export.NewDir(dir).WithoutSync()); err != nil {
		t.Fatal(err)
	}
	if *update {
		os.RemoveAll(fixtureDir)
		if err := os.CopyFS(fixtureDir, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	want := readTree(t, dir)
	got := readTree(t, fixtureDir)
	if len(got) != len(want) {
		t.Fatalf("%s has %d files, the generator writes %d (go test -run TestFixtureUpToDate -update)", fixtureDir, len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s/%s differs from the generator's output (go test -run TestFixtureUpToDate -update)", fixtureDir, name)
		}
	}
}

func readTree(t *testing.T, root string) map[string][]byte {
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

// fixture copies the checked-in export into a temporary directory (so a
// test may break it) and returns its store and what the generator wrote.
func fixture(t *testing.T) (*export.Dir, string, *exportgen.Fixture) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixtureDir)); err != nil {
		t.Fatal(err)
	}
	fx := fixtureItems(t)
	return export.NewDir(dir).WithoutSync(), dir, fx
}

var (
	fxOnce sync.Once
	fxVal  *exportgen.Fixture
	fxErr  error
)

// fixtureItems returns the generator's account of the fixture (items and
// changes), computed once.
func fixtureItems(t *testing.T) *exportgen.Fixture {
	t.Helper()
	fxOnce.Do(func() {
		fxVal, fxErr = exportgen.WriteFixture(context.Background(), discard{})
	})
	if fxErr != nil {
		t.Fatal(fxErr)
	}
	return fxVal
}

// discard is a Store that keeps nothing.
type discard struct{}

func (discard) Open(context.Context, string) (io.ReadCloser, error) { return nil, export.ErrNotFound }
func (discard) List(context.Context, string, func(export.Object) error) error {
	return nil
}
func (discard) Put(context.Context, string, []byte) error { return nil }
func (discard) Create(context.Context, string) (export.ObjectWriter, error) {
	return nopObject{}, nil
}
func (discard) Delete(context.Context, string) error { return nil }
func (discard) String() string                       { return "discard" }

type nopObject struct{}

func (nopObject) Write(p []byte) (int, error)  { return len(p), nil }
func (nopObject) Commit(context.Context) error { return nil }
func (nopObject) Abort()                       {}

// expectedLines returns, per partition segment, the sorted export lines of
// items: what a repartition must write, byte for byte.
func expectedLines(items []pipeline.Item, transform func(pipeline.Item) pipeline.Item) map[string][]string {
	out := map[string][]string{}
	for _, it := range items {
		if transform != nil {
			it = transform(it)
		}
		typ := ""
		if v, ok := it["EntityType"].(*types.AttributeValueMemberS); ok {
			typ = v.Value
		}
		seg := export.EntitySegment(typ)
		out[seg] = append(out[seg], `{"Item":`+string(pipeline.AppendItem(nil, it))+`}`)
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// outputLines reads every part of a repartition's output, per segment,
// checking the entity manifests and the summary on the way.
func outputLines(t *testing.T, st export.Store) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out, err := export.OpenOutput(ctx, st)
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

func compareLines(t *testing.T, got, want map[string][]string) {
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

func openFixture(t *testing.T, st export.Store) *export.Export {
	t.Helper()
	e, err := export.OpenExport(context.Background(), st, "", export.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "holds 2 exports") {
		t.Fatalf("opening the fixture's root: %v, want a complaint about 2 exports", err)
	}
	fx := fixtureItems(t)
	e, err = export.OpenExport(context.Background(), st, fx.Full.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRepartitionFixture(t *testing.T) {
	ctx := context.Background()
	src, _, fx := fixture(t)
	e := openFixture(t, src)
	if len(e.Files) != 5 || e.Summary.ItemCount != int64(len(fx.FullItems)) {
		t.Fatalf("export: %d files, %d items; want 5 and %d", len(e.Files), e.Summary.ItemCount, len(fx.FullItems))
	}
	outDir := t.TempDir()
	out := export.NewDir(outDir).WithoutSync()
	var progressed int64
	var mu sync.Mutex
	r, err := export.NewRepartitioner(e, nil, out, export.Options{Progress: func(_, items int64) {
		mu.Lock()
		progressed += items
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if progressed != int64(len(fx.FullItems)) {
		t.Errorf("progress reported %d items, want %d", progressed, len(fx.FullItems))
	}
	want := expectedLines(fx.FullItems, nil)
	compareLines(t, outputLines(t, out), want)
	if s.Totals.SourceItems != int64(len(fx.FullItems)) || s.Totals.OutputItems != s.Totals.SourceItems {
		t.Errorf("summary totals %+v", s.Totals)
	}
	for _, seg := range []string{"entity=_unknown", "entity=%5Funknown", "entity=Order%2FArchived%3A2026%3F", "entity=Événement %231 100%25"} {
		if _, ok := want[seg]; !ok {
			t.Errorf("the fixture has no %s partition", seg)
		}
		if _, err := os.Stat(filepath.Join(outDir, seg, "_manifest.json")); err != nil {
			t.Errorf("%s: %v", seg, err)
		}
	}
	if n := len(want["entity=_unknown"]); n != 2 {
		t.Errorf("entity=_unknown holds %d items, want 2 (no type, empty type)", n)
	}
	// A second run finds the output complete and does nothing.
	r2, _ := export.NewRepartitioner(e, nil, out, export.Options{})
	s2, err := r2.Begin(ctx, false)
	if err != nil || s2 == nil || s2.Fingerprint != s.Fingerprint {
		t.Errorf("rerun: summary %v, err %v; want the finished run's", s2, err)
	}
}

func TestRepartitionCompressions(t *testing.T) {
	ctx := context.Background()
	src, _, fx := fixture(t)
	e := openFixture(t, src)
	want := expectedLines(fx.FullItems, nil)
	for _, c := range []export.Compression{export.Gzip, export.Zstd, export.None} {
		t.Run(string(c), func(t *testing.T) {
			out := export.NewDir(t.TempDir()).WithoutSync()
			r, err := export.NewRepartitioner(e, nil, out, export.Options{Compression: c, MaxPartBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.Run(ctx, 2, false)
			if err != nil {
				t.Fatal(err)
			}
			compareLines(t, outputLines(t, out), want)
			parts := 0
			for _, en := range s.Entities {
				parts += en.Parts
				if en.Parts > 1 && !strings.Contains(en.Segment, "=") {
					t.Errorf("bad segment %q", en.Segment)
				}
			}
			if parts <= len(s.Entities) {
				t.Errorf("%d parts for %d entities: a 64 KiB part limit should split some", parts, len(s.Entities))
			}
		})
	}
}

func TestRepartitionTransform(t *testing.T) {
	ctx := context.Background()
	src, _, fx := fixture(t)
	e := openFixture(t, src)
	out := export.NewDir(t.TempDir()).WithoutSync()
	tr, err := export.DefaultTransforms().Lookup("comments-table")
	if err != nil {
		t.Fatal(err)
	}
	r, err := export.NewRepartitioner(e, nil, out, export.Options{Transform: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 2, false); err != nil {
		t.Fatal(err)
	}
	move := func(it pipeline.Item) pipeline.Item {
		if v, ok := it["EntityType"].(*types.AttributeValueMemberS); !ok || v.Value != "Comment" {
			return it
		}
		outs, err := tr.ByType["Comment"](it)
		if err != nil || len(outs) != 1 {
			t.Fatalf("transform: %v", err)
		}
		return outs[0]
	}
	got := outputLines(t, out)
	compareLines(t, got, expectedLines(fx.FullItems, move))
	comments := got["entity=Comment"]
	if len(comments) == 0 {
		t.Fatal("no comments in the fixture")
	}
	for _, l := range comments {
		if !strings.Contains(l, `"PK":{"S":"DOC#`) || !strings.Contains(l, `"SK":{"S":"CMT#`) || !strings.Contains(l, `"workspacePK":{"S":"WS#`) {
			t.Fatalf("comment not moved: %s", l)
		}
	}
}

func TestRepartitionOverlay(t *testing.T) {
	ctx := context.Background()
	src, _, fx := fixture(t)
	full := openFixture(t, src)
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
	out := export.NewDir(t.TempDir()).WithoutSync()
	r, err := export.NewRepartitioner(full, ov, out, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	compareLines(t, outputLines(t, out), expectedLines(fx.FinalItems, nil))
	if s.Totals.Inserted == 0 || s.Totals.Deleted == 0 || s.Totals.Replaced == 0 {
		t.Errorf("the fixture's overlay should insert, delete and replace: %+v", s.Totals)
	}
	// The items stream used by verify gives the same final state.
	var n int
	err = export.Items(ctx, full, ov, pipeline.Options{}, false, func(pipeline.Item) error { n++; return nil })
	if err != nil || n != len(fx.FinalItems) {
		t.Errorf("Items: %d items, err %v; want %d", n, err, len(fx.FinalItems))
	}
}

func TestOverlayGap(t *testing.T) {
	ctx := context.Background()
	src, dir, fx := fixture(t)
	full := openFixture(t, src)
	// Move the incremental export's start an hour past the full export.
	p := filepath.Join(dir, fx.Incremental.Dir, "manifest-summary.json")
	b, _ := os.ReadFile(p)
	e0, _ := export.OpenExport(ctx, src, fx.Incremental.Dir, export.OpenOptions{})
	later := full.Time().Add(time.Hour).Format("2006-01-02T15:04:05.000Z")
	os.WriteFile(p, bytes.Replace(b, []byte(e0.Summary.ExportFromTime), []byte(later), 1), 0o644)
	inc, err := export.OpenExport(ctx, src, fx.Incremental.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = export.LoadOverlay(ctx, full, []*export.Export{inc}, pipeline.Options{}, false)
	if err == nil || !strings.Contains(err.Error(), "gap between") {
		t.Errorf("gap: %v", err)
	}
}

// breakFile rewrites one file of the fixture copy.
func breakFile(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// regzip decompresses a data file, edits its lines and compresses it again,
// updating the manifest's MD5 so that only the edit is wrong.
func regzip(t *testing.T, dir string, fx *exportgen.Fixture, file int, edit func(lines []string) []string) {
	t.Helper()
	p := filepath.Join(dir, fx.Full.DataFiles[file])
	b, _ := os.ReadFile(p)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	lines := edit(strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n"))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
	zw.Close()
	os.WriteFile(p, buf.Bytes(), 0o644)
	fixMD5(t, dir, fx, b, buf.Bytes())
}

// fixMD5 replaces the manifest's md5Checksum of old content by new's.
func fixMD5(t *testing.T, dir string, fx *exportgen.Fixture, old, new []byte) {
	t.Helper()
	mp := filepath.Join(dir, fx.Full.Dir, "manifest-files.json")
	m, _ := os.ReadFile(mp)
	m = bytes.Replace(m, []byte(md5b64(old)), []byte(md5b64(new)), 1)
	os.WriteFile(mp, m, 0o644)
}

func TestRepartitionBrokenInput(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		brk   func(t *testing.T, dir string, fx *exportgen.Fixture)
		open  string // error opening the export
		want  []string
		file0 bool // the error names data file 0
	}{
		{
			name: "bad gzip",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				p := filepath.Join(dir, fx.Full.DataFiles[0])
				var old []byte
				breakFile(t, p, func(b []byte) []byte {
					old = append([]byte(nil), b...)
					for i := len(b) / 2; i < len(b)/2+64; i++ {
						b[i] ^= 0x5a
					}
					return b
				})
				nb, _ := os.ReadFile(p)
				fixMD5(t, dir, fx, old, nb)
			},
			want: []string{" line "}, file0: true,
		},
		{
			name: "truncated",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				p := filepath.Join(dir, fx.Full.DataFiles[0])
				var old []byte
				breakFile(t, p, func(b []byte) []byte { old = append([]byte(nil), b...); return b[:len(b)*2/3] })
				nb, _ := os.ReadFile(p)
				fixMD5(t, dir, fx, old, nb)
			},
			want: []string{"truncated", " line "}, file0: true,
		},
		{
			name: "count mismatch",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				regzip(t, dir, fx, 0, func(l []string) []string { return l[:len(l)-1] })
			},
			want: []string{"the manifest says itemCount"}, file0: true,
		},
		{
			name: "bad line",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				regzip(t, dir, fx, 0, func(l []string) []string { l[2] = l[2][:len(l[2])/2]; return l })
			},
			want: []string{" line 3: ", "invalid JSON"}, file0: true,
		},
		{
			name: "not an item line",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				regzip(t, dir, fx, 0, func(l []string) []string { l[4] = `{"item":{"PK":{"S":"x"}}}`; return l })
			},
			want: []string{" line 5: ", "Item: missing"}, file0: true,
		},
		{
			name: "md5 mismatch",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				regzip(t, dir, fx, 0, func(l []string) []string { return l })
				mp := filepath.Join(dir, fx.Full.Dir, "manifest-files.json")
				breakFile(t, mp, func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"md5Checksum":"`), []byte(`"md5Checksum":"AAAA`), 1)
				})
			},
			want: []string{"md5Checksum"},
		},
		{
			name: "summary count mismatch",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				p := filepath.Join(dir, fx.Full.Dir, "manifest-summary.json")
				breakFile(t, p, func(b []byte) []byte { return bytes.Replace(b, []byte(`"itemCount":`), []byte(`"itemCount":1`), 1) })
			},
			open: "manifest-files.json lists",
		},
		{
			name: "ion",
			brk: func(t *testing.T, dir string, fx *exportgen.Fixture) {
				p := filepath.Join(dir, fx.Full.Dir, "manifest-summary.json")
				breakFile(t, p, func(b []byte) []byte { return bytes.Replace(b, []byte(`"DYNAMODB_JSON"`), []byte(`"ION"`), 1) })
			},
			open: "ION export",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dir, fx := fixture(t)
			tt.brk(t, dir, fx)
			e, err := export.OpenExport(ctx, src, fx.Full.Dir, export.OpenOptions{})
			if tt.open != "" {
				if err == nil || !strings.Contains(err.Error(), tt.open) {
					t.Fatalf("open: %v, want %q", err, tt.open)
				}
				if tt.name == "ion" && !errors.Is(err, export.ErrUnsupportedFormat) {
					t.Errorf("ION: %v does not match ErrUnsupportedFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			outDir := t.TempDir()
			r, _ := export.NewRepartitioner(e, nil, export.NewDir(outDir).WithoutSync(), export.Options{})
			_, err = r.Run(ctx, 2, false)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tt.want, "") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tt.file0 && !strings.Contains(err.Error(), fx.Full.DataFiles[0]) {
				t.Errorf("error %q does not name %s", err, fx.Full.DataFiles[0])
			}
			if !errors.Is(err, export.ErrCorrupt) {
				t.Errorf("error %q does not match ErrCorrupt", err)
			}
			if _, err := os.Stat(filepath.Join(outDir, export.SummaryKey)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed run left %s", export.SummaryKey)
			}
		})
	}
}

func md5b64(b []byte) string {
	s := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

func pipelineOptions() pipeline.Options { return pipeline.Options{} }

// TestTransformDropSplitRetype registers a transform that drops one type,
// splits another into two items, and retypes a third: counts reconcile and
// each result lands in its own type's partition.
func TestTransformDropSplitRetype(t *testing.T) {
	ctx := context.Background()
	src, _, fx := fixture(t)
	e := openFixture(t, src)
	reg := export.NewRegistry()
	reg.Register(&export.Transform{Name: "reshape", ByType: map[string]export.TransformFunc{
		"Cart": func(pipeline.Item) ([]pipeline.Item, error) { return nil, nil },
		"Match": func(it pipeline.Item) ([]pipeline.Item, error) {
			b := make(pipeline.Item, len(it))
			for k, v := range it {
				b[k] = v
			}
			b["SK"] = &types.AttributeValueMemberS{Value: "COPY#" + it["SK"].(*types.AttributeValueMemberS).Value}
			b["EntityType"] = &types.AttributeValueMemberS{Value: "MatchCopy"}
			return []pipeline.Item{it, b}, nil
		},
		"Template": func(it pipeline.Item) ([]pipeline.Item, error) {
			b := make(pipeline.Item, len(it))
			for k, v := range it {
				b[k] = v
			}
			b["EntityType"] = &types.AttributeValueMemberS{Value: "Document"}
			return []pipeline.Item{b}, nil
		},
	}})
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	tr, _ := reg.Lookup("reshape")
	out := export.NewDir(t.TempDir()).WithoutSync()
	r, _ := export.NewRepartitioner(e, nil, out, export.Options{Transform: tr})
	s, err := r.Run(ctx, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	want := expectedLines(fx.FullItems, nil)
	got := outputLines(t, out)
	carts, matches, templates := len(want["entity=Cart"]), len(want["entity=Match"]), len(want["entity=Template"])
	if len(got["entity=Cart"]) != 0 || len(got["entity=MatchCopy"]) != matches || len(got["entity=Match"]) != matches ||
		len(got["entity=Template"]) != 0 || len(got["entity=Document"]) != len(want["entity=Document"])+templates {
		t.Errorf("partitions: %d carts, %d/%d matches, %d templates, %d documents", len(got["entity=Cart"]), len(got["entity=Match"]), len(got["entity=MatchCopy"]), len(got["entity=Template"]), len(got["entity=Document"]))
	}
	if s.Totals.Dropped != int64(carts) || s.Totals.Added != int64(matches) || s.Totals.OutputItems != int64(len(fx.FullItems)-carts+matches) {
		t.Errorf("totals %+v", s.Totals)
	}
	reg.Register(&export.Transform{Name: "reshape", ByType: map[string]export.TransformFunc{"X": func(pipeline.Item) ([]pipeline.Item, error) { return nil, nil }}})
}

// TestRepartitionGzipParts checks the block-compressed gzip output with
// the standard library's decoder, one member at a time: every part is one
// gzip member (header, the blocks' deflate output, trailer with the CRC-32
// and size) holding exactly the part's lines in the order they were read,
// across part limits and parts of many blocks.
func TestRepartitionGzipParts(t *testing.T) {
	ctx := context.Background()
	e, _ := generatedExport(t, 7, 3_000, 12<<20, 2)
	for _, limit := range []int64{0, 700 << 10} {
		dir := t.TempDir()
		out := export.NewDir(dir).WithoutSync()
		r, err := export.NewRepartitioner(e, nil, out, export.Options{MaxPartBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Run(ctx, 2, false)
		if err != nil {
			t.Fatal(err)
		}
		o, err := export.OpenOutput(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		var items, multiBlock int64
		for _, m := range o.Entities {
			for _, p := range m.Parts {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p.Key)))
				if err != nil {
					t.Fatal(err)
				}
				br := bytes.NewReader(b) // an io.ByteReader: the decoder reads no further than its member
				zr, err := stdgzip.NewReader(br)
				if err != nil {
					t.Fatalf("%s: %v", p.Key, err)
				}
				zr.Multistream(false)
				data, err := io.ReadAll(zr)
				if err != nil {
					t.Fatalf("%s: %v", p.Key, err)
				}
				if br.Len() != 0 {
					t.Errorf("%s: %d bytes after the first gzip member", p.Key, br.Len())
				}
				if int64(len(data)) != p.UncompressedBytes || int64(bytes.Count(data, []byte("\n"))) != p.Items {
					t.Errorf("%s: %d bytes, %d lines; manifest says %d and %d", p.Key, len(data), bytes.Count(data, []byte("\n")), p.UncompressedBytes, p.Items)
				}
				if limit > 0 && p.UncompressedBytes > limit+1<<20 {
					t.Errorf("%s: %d bytes, past the part limit %d by more than a block", p.Key, p.UncompressedBytes, limit)
				}
				if p.UncompressedBytes > 1<<20 {
					multiBlock++
				}
				items += p.Items
			}
		}
		if items != s.Totals.SourceItems || multiBlock == 0 {
			t.Errorf("part limit %d: %d items in parts (want %d), %d parts of several blocks (want some)", limit, items, s.Totals.SourceItems, multiBlock)
		}
	}
}

// generatedExport writes a full export of about size bytes in files data
// files, of items like those of a simulated workload (seed, changes), and
// opens it; it returns the export and its uncompressed size.
func generatedExport(tb testing.TB, seed uint64, changes int, size int64, files int) (*export.Export, int64) {
	tb.Helper()
	ctx := context.Background()
	h, err := sim.Workload{Seed: seed, Changes: changes}.Run()
	if err != nil {
		tb.Fatal(err)
	}
	src := export.NewDir(tb.TempDir()).WithoutSync()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(ctx, src, exportgen.Export{ID: exportgen.ExportID(at, seed), Time: at, Files: files},
		exportgen.Synthetic(h.Table.Items(), size, seed))
	if err != nil {
		tb.Fatal(err)
	}
	e, err := export.OpenExport(ctx, src, res.Dir, export.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return e, res.UncompressedBytes
}

// TestReadLinesMD5: a data file is hashed and checked against the
// manifest's md5Checksum, unless skipMD5, which skips the hashing too.
func TestReadLinesMD5(t *testing.T) {
	ctx := context.Background()
	src, _, _ := fixture(t)
	e := openFixture(t, src)
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

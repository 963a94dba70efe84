package repartition_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

func TestRepartitionFixture(t *testing.T) {
	ctx := context.Background()
	src, _, fx := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, src)
	if len(e.Files) != 5 || e.Summary.ItemCount != int64(len(fx.FullItems)) {
		t.Fatalf("export: %d files, %d items; want 5 and %d", len(e.Files), e.Summary.ItemCount, len(fx.FullItems))
	}
	outDir := t.TempDir()
	out := objstore.NewDir(outDir).WithoutSync()
	var progressed int64
	var mu sync.Mutex
	r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{Progress: func(_, items int64) {
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
	want := exportgen.ExpectedLines(fx.FullItems, nil)
	exportgen.CompareLines(t, exportgen.OutputLines(t, out), want)
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
	r2, _ := repartition.NewRepartitioner(e, nil, out, repartition.Options{})
	s2, err := r2.Begin(ctx, false)
	if err != nil || s2 == nil || s2.Fingerprint != s.Fingerprint {
		t.Errorf("rerun: summary %v, err %v; want the finished run's", s2, err)
	}
}

func TestRepartitionCompressions(t *testing.T) {
	ctx := context.Background()
	src, _, fx := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, src)
	want := exportgen.ExpectedLines(fx.FullItems, nil)
	for _, c := range []repartition.Compression{repartition.Gzip, repartition.Zstd, repartition.None} {
		t.Run(string(c), func(t *testing.T) {
			out := objstore.NewDir(t.TempDir()).WithoutSync()
			r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{Compression: c, MaxPartBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.Run(ctx, 2, false)
			if err != nil {
				t.Fatal(err)
			}
			exportgen.CompareLines(t, exportgen.OutputLines(t, out), want)
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
	src, _, fx := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, src)
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	tr, err := seed.Environment().Transform("comments-table")
	if err != nil {
		t.Fatal(err)
	}
	r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{Transform: tr})
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
	got := exportgen.OutputLines(t, out)
	exportgen.CompareLines(t, got, exportgen.ExpectedLines(fx.FullItems, move))
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
	src, _, fx := exportgen.CopyFixture(t)
	full := exportgen.OpenFixture(t, src)
	ov := exportgen.FixtureOverlay(t, src, full)
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	r, err := repartition.NewRepartitioner(full, ov, out, repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	exportgen.CompareLines(t, exportgen.OutputLines(t, out), exportgen.ExpectedLines(fx.FinalItems, nil))
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
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	lines := edit(strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n"))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fixMD5(t, dir, fx, b, buf.Bytes())
}

// fixMD5 replaces the manifest's md5Checksum of old content by new's.
func fixMD5(t *testing.T, dir string, fx *exportgen.Fixture, old, new []byte) {
	t.Helper()
	breakFile(t, filepath.Join(dir, fx.Full.Dir, "manifest-files.json"), func(m []byte) []byte {
		return bytes.Replace(m, []byte(md5b64(old)), []byte(md5b64(new)), 1)
	})
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
			src, dir, fx := exportgen.CopyFixture(t)
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
			r, _ := repartition.NewRepartitioner(e, nil, objstore.NewDir(outDir).WithoutSync(), repartition.Options{})
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
			if _, err := os.Stat(filepath.Join(outDir, repartition.SummaryKey)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed run left %s", repartition.SummaryKey)
			}
		})
	}
}

func md5b64(b []byte) string {
	s := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

// TestTransformDropSplitRetype registers a transform that drops one type,
// splits another into two items, and retypes a third: counts reconcile and
// each result lands in its own type's partition.
func TestTransformDropSplitRetype(t *testing.T) {
	ctx := context.Background()
	src, _, fx := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, src)
	tr := &projections.Transform{Name: "reshape", ByType: map[string]projections.TransformFunc{
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
	}}
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	r, _ := repartition.NewRepartitioner(e, nil, out, repartition.Options{Transform: tr})
	s, err := r.Run(ctx, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	want := exportgen.ExpectedLines(fx.FullItems, nil)
	got := exportgen.OutputLines(t, out)
	carts, matches, templates := len(want["entity=Cart"]), len(want["entity=Match"]), len(want["entity=Template"])
	if len(got["entity=Cart"]) != 0 || len(got["entity=MatchCopy"]) != matches || len(got["entity=Match"]) != matches ||
		len(got["entity=Template"]) != 0 || len(got["entity=Document"]) != len(want["entity=Document"])+templates {
		t.Errorf("partitions: %d carts, %d/%d matches, %d templates, %d documents", len(got["entity=Cart"]), len(got["entity=Match"]), len(got["entity=MatchCopy"]), len(got["entity=Template"]), len(got["entity=Document"]))
	}
	if s.Totals.Dropped != int64(carts) || s.Totals.Added != int64(matches) || s.Totals.OutputItems != int64(len(fx.FullItems)-carts+matches) {
		t.Errorf("totals %+v", s.Totals)
	}
}

// TestRepartitionGzipParts checks the block-compressed gzip output with
// the standard library's decoder, one member at a time: every part is one
// gzip member (header, the blocks' deflate output, trailer with the CRC-32
// and size) holding exactly the part's lines in the order they were read,
// across part limits and parts of many blocks.
func TestRepartitionGzipParts(t *testing.T) {
	ctx := context.Background()
	e, _ := exportgen.Generated(t, 7, 3_000, 12<<20, 2)
	for _, limit := range []int64{0, 700 << 10} {
		dir := t.TempDir()
		out := objstore.NewDir(dir).WithoutSync()
		r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{MaxPartBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Run(ctx, 2, false)
		if err != nil {
			t.Fatal(err)
		}
		o, err := reimport.OpenOutput(ctx, out)
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

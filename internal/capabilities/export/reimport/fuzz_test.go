package reimport_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
)

// FuzzReadPart: whatever bytes a part holds (gzip or not, any lines), with
// a manifest entry that claims n items of exactly those bytes, VerifyPart
// accepts them and ReadPart either hands out n lines or fails with a
// corrupt-data error; neither panics.
func FuzzReadPart(f *testing.F) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write([]byte(s)); err != nil {
			f.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			f.Fatal(err)
		}
		return b.Bytes()
	}
	f.Add(gz(`{"Item":{"PK":{"S":"a"}}}`+"\n"), int64(1))
	f.Add(gz("a\n\nb\n"), int64(3))
	f.Add(gz("no final newline"), int64(1))
	f.Add([]byte("not gzip"), int64(0))
	f.Add([]byte{}, int64(0))
	f.Fuzz(func(t *testing.T, body []byte, items int64) {
		ctx := context.Background()
		dir := t.TempDir()
		st := objstore.NewDir(dir).WithoutSync()
		sum := md5.Sum(body)
		p := repartition.PartInfo{Key: "entity=T/part-x-0000.json.gz", Items: items, Bytes: int64(len(body)), MD5: base64.StdEncoding.EncodeToString(sum[:]), Entity: "T"}
		if err := st.Put(ctx, p.Key, body); err != nil {
			t.Fatal(err)
		}
		out := oneSummary(t, st, p)
		if err := out.VerifyPart(ctx, p); err != nil {
			t.Fatalf("VerifyPart of the very bytes its manifest names: %v", err)
		}
		var n int64
		err := out.ReadPart(ctx, p, func([]byte, int) error { n++; return nil })
		switch {
		case err == nil && n != items:
			t.Fatalf("ReadPart handed out %d lines of a part of %d", n, items)
		case err != nil && !errors.Is(err, export.ErrCorrupt):
			t.Fatalf("ReadPart: %v, not a corrupt-data error", err)
		}
	})
}

// oneSummary writes the manifest and summary of an output of the one part
// p, and opens it.
func oneSummary(t *testing.T, st *objstore.Dir, p repartition.PartInfo) *reimport.Output {
	t.Helper()
	ctx := context.Background()
	m := repartition.EntityManifest{Version: repartition.FormatVersion, Entity: p.Entity, Segment: "entity=T", ImportPrefix: "entity=T/part-",
		Compression: repartition.Gzip, ItemCount: p.Items, Bytes: p.Bytes, Parts: []repartition.PartInfo{p}}
	mb, _ := json.Marshal(m)
	if err := st.Put(ctx, "entity=T/_manifest.json", mb); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(mb)
	s := repartition.RunSummary{Version: repartition.FormatVersion, Entities: []repartition.EntitySummary{{Entity: p.Entity, Segment: "entity=T", Manifest: "entity=T/_manifest.json", ManifestSHA256: hex.EncodeToString(sum[:]), ItemCount: p.Items, Parts: 1}}}
	sb, _ := json.Marshal(s)
	if err := st.Put(ctx, repartition.SummaryKey, sb); err != nil {
		t.Fatal(err)
	}
	out, err := reimport.OpenOutput(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/pipeline"
)

// The compaction's guarantees over the archiver's real output (faults,
// retries, redeliveries, concurrent runs, DuckDB) are tested in
// internal/capabilities/archive (compact_test.go), where the simulation that writes such
// archives lives; this package's tests cover its own parts and S3.

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const testStream = "arn:aws:dynamodb:eu-west-1:123456789012:table/App/stream/2026-01-01T00:00:00.000"

// writeArchive writes objects JSON-lines objects of perObject lines each
// under prefix, as the archiver lays them out: entities types spread over
// two partitions' worth of entity types and dates, items of about
// itemBytes (hex text, which gzip halves), sequence numbers increasing.
// It returns the objects' keys and their total size.
func writeArchive(ctx context.Context, t testing.TB, st archive.Putter, prefix string, objects, perObject, itemBytes int) (keys []string, size int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(objects), uint64(perObject)))
	seq := 0
	var buf []byte
	for o := range objects {
		entity := []string{"Ticket", "Comment", "Agent/Shift"}[o%3]
		date := time.Date(2026, 1, 1+o%5, 0, 0, 0, 0, time.UTC)
		buf = buf[:0]
		first := ""
		for range perObject {
			seq++
			s := fmt.Sprintf("4%027d", seq)
			if first == "" {
				first = s
			}
			blob := make([]byte, itemBytes/2)
			for i := range blob {
				blob[i] = byte(rng.IntN(256))
			}
			item := pipeline.Item{
				"PK":         &types.AttributeValueMemberS{Value: fmt.Sprintf("T#%d", seq)},
				"SK":         &types.AttributeValueMemberS{Value: "META"},
				"EntityType": &types.AttributeValueMemberS{Value: entity},
				"status":     &types.AttributeValueMemberS{Value: []string{"open", "closed"}[seq%2]},
				"amount":     &types.AttributeValueMemberN{Value: fmt.Sprint(seq % 1000)},
				"body":       &types.AttributeValueMemberS{Value: fmt.Sprintf("%x", blob)},
				"ttl":        &types.AttributeValueMemberN{Value: fmt.Sprint(date.Unix())},
			}
			buf = archive.AppendLine(buf, item, archive.Meta{
				EventID: "ev-" + s, RemovedAt: date.Add(time.Hour).Format(time.RFC3339Nano), Table: "App",
				StreamARN: testStream, SequenceNumber: s,
			})
		}
		key := archive.ObjectKey(prefix, archive.EntitySegment(entity), date.Format("2006-01-02"), first)
		body := archive.Gzip(buf)
		if err := st.Put(ctx, key, body); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
		size += int64(len(body))
	}
	return keys, size
}

// lines returns every line the archive's readers give, both forms, in
// order.
func lines(ctx context.Context, t testing.TB, src archive.Source, prefix string) []string {
	t.Helper()
	a := archive.Open(src, prefix).WithCompacted(Decode)
	objs, other, err := a.Objects(ctx, archive.Filter{})
	if err != nil || len(other) > 0 {
		t.Fatalf("objects: %v, other %v", err, other)
	}
	var out []string
	for _, o := range objs {
		if err := a.ReadObject(ctx, o, func(_ int, line []byte) error { out = append(out, string(line)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestCompactLeaseTakeover(t *testing.T) {
	ctx := context.Background()
	dir := objstore.NewDir(t.TempDir())
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	l, err := acquireLease(ctx, dir, "lease", "crashed", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquireLease(ctx, dir, "lease", "next", now.Add(59*time.Minute), time.Hour); !errors.Is(err, errBusy) {
		t.Fatalf("a live lease was taken: %v", err)
	}
	n, err := acquireLease(ctx, dir, "lease", "next", now.Add(61*time.Minute), time.Hour)
	if err != nil {
		t.Fatalf("an expired lease was not taken over: %v", err)
	}
	if err := l.check(ctx, now.Add(time.Minute)); !errors.Is(err, errLeaseLost) {
		t.Fatalf("the crashed run still believes it holds the partition: %v", err)
	}
	if err := n.check(ctx, now.Add(62*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := n.release(ctx, now.Add(63*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := acquireLease(ctx, dir, "lease", "after", now.Add(64*time.Minute), time.Hour); err != nil {
		t.Fatalf("a released lease was not free: %v", err)
	}
}

func TestParseTypedColumns(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"status:string, amount:double,flag:boolean", ""},
		{"", ""},
		{"status", "want attribute:type"},
		{"status:int", "is not string, double or boolean"},
		{"Bad-Name:string", "not a column name"},
		{"item:string", "exists already"},
		{"a:string,A:double", "exists already"},
	} {
		_, err := ParseTypedColumns(tc.in)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseTypedColumns(%q) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

// TestReadersNeedTheDecoder: a reader without the compacted form's decoder
// refuses an archive holding compacted objects (rather than leave their
// items out); with it, it gives the same lines as before compaction.
func TestReadersNeedTheDecoder(t *testing.T) {
	ctx := context.Background()
	dir := objstore.NewDir(t.TempDir())
	writeArchive(ctx, t, dir, "archive", 6, 5, 100)
	before := lines(ctx, t, dir, "archive")
	if _, err := Compact(ctx, dir, Options{Prefix: "archive", Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	_, _, err := archive.Open(dir, "archive").Objects(ctx, archive.Filter{})
	if !errors.Is(err, archive.ErrNoCompactedDecoder) || !strings.Contains(err.Error(), "archive/compacted/entity=") {
		t.Fatalf("a reader without the decoder: %v, want ErrNoCompactedDecoder naming the object", err)
	}
	after := lines(ctx, t, dir, "archive")
	if strings.Join(sorted(after), "\n") != strings.Join(sorted(before), "\n") || len(after) != 30 {
		t.Fatalf("after compaction %d lines, before %d", len(after), len(before))
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// FuzzDecode: whatever bytes sit under a compacted object's name, the
// decoder returns rows or an error, never panics. The seed is a file
// Compact wrote, with typed columns.
func FuzzDecode(f *testing.F) {
	ctx := context.Background()
	dir := objstore.NewDir(f.TempDir())
	writeArchive(ctx, f, dir, "", 3, 4, 60)
	res, err := Compact(ctx, dir, Options{Logger: quiet, Typed: []TypedColumn{{Attribute: "status", Type: "string"}, {Attribute: "amount", Type: "double"}}})
	if err != nil || len(res.Written) == 0 {
		f.Fatal(res, err)
	}
	b, err := objstore.ReadAll(ctx, dir, res.Written[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(bytes.NewReader(data), "k.parquet")
		if err != nil {
			return
		}
		_ = c.Rows(func(int, json.RawMessage, archive.Meta) error { return nil })
	})
}

package lake

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
)

// rewriteStore rewrites (as a retried batch of the archiver would) the
// first JSON-lines object compaction reads, right after it read it, so
// that the removal meets a newer version.
type rewriteStore struct {
	*objstore.S3
	done bool
}

func (s *rewriteStore) Get(ctx context.Context, key string) ([]byte, string, error) {
	b, v, err := s.S3.Get(ctx, key)
	if err == nil && !s.done && len(key) > 9 && key[len(key)-9:] == ".jsonl.gz" {
		s.done = true
		// A rewrite of the same bytes keeps S3's ETag (its MD5); one with
		// more lines changes it. An empty gzip member appended gives the
		// same lines under a new tag.
		if err := s.S3.Put(ctx, key, append(b[:len(b):len(b)], gzipEmpty()...)); err != nil {
			return nil, "", err
		}
	}
	return b, v, err
}

func gzipEmpty() []byte {
	return []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
}

// TestCompactS3Integration compacts an archive on moto: the readers give
// the same lines before and after, the JSON-lines objects are gone, a
// rerun is a no-op, and an object rewritten between its read and its
// removal is not removed (DeleteObject If-Match), then taken by the next
// run without doubling a line.
func TestCompactS3Integration(t *testing.T) {
	ctx := context.Background()
	c, log, bucket := awstest.LoggedS3(t, awstest.S3)
	st := objstore.NewS3(c, bucket, "", objstore.S3Options{})
	keys, _ := writeArchive(ctx, t, st, "ttl-archive", 12, 20, 200)
	before := lines(ctx, t, st, "ttl-archive")

	rs := &rewriteStore{S3: st}
	res, err := Compact(ctx, rs, Options{Prefix: "ttl-archive", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inputs != len(keys) || res.Rows != len(before) || res.Removed != len(keys)-1 || res.Rewritten != 1 {
		t.Fatalf("first run: %+v; want %d inputs, %d rows, one rewritten object left", res, len(keys), len(before))
	}
	if n := awstest.Count(log.Take()); n["DELETE"] != len(keys) {
		t.Errorf("requests %v, want a conditional DeleteObject per input", n)
	}
	if got := lines(ctx, t, st, "ttl-archive"); len(got) != len(before)+20 {
		t.Fatalf("between the runs: %d lines, want the rewritten object's 20 beside the compacted %d", len(got), len(before))
	}
	res, err = Compact(ctx, st, Options{Prefix: "ttl-archive", Logger: quiet})
	if err != nil || res.Inputs != 1 || res.Duplicates != 20 || res.Rows != 0 || res.Removed != 1 || len(res.Written) != 0 {
		t.Fatalf("second run: %+v %v; want the rewritten object's 20 lines found held, and it removed", res, err)
	}
	if got := lines(ctx, t, st, "ttl-archive"); fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(before)) {
		t.Fatalf("after compaction: %d lines, before %d", len(got), len(before))
	}
	res, err = Compact(ctx, st, Options{Prefix: "ttl-archive", Logger: quiet})
	if err != nil || res.Inputs != 0 || len(res.Written) != 0 || res.Partitions != 0 {
		t.Fatalf("a rerun is no no-op: %+v %v", res, err)
	}
}

// TestDeleteIfIntegration: moto honours DeleteObject If-Match, as S3 does
// for general purpose buckets.
func TestDeleteIfIntegration(t *testing.T) {
	ctx := context.Background()
	c, _, bucket := awstest.LoggedS3(t, awstest.S3)
	st := objstore.NewS3(c, bucket, "", objstore.S3Options{})
	if err := st.Put(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	_, v1, _ := st.Get(ctx, "a")
	if err := st.Put(ctx, "a", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteIf(ctx, "a", v1); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("stale DeleteIf: %v", err)
	}
}

// BenchmarkCompactS3Integration compacts, on moto, an archive of objects of
// the archiver's realistic size (a batch of 100 items of about 800 bytes:
// about 40 KB gzipped), with reading every object (what `archive cat`
// does) as the baseline in the same run.
//
//	bash .ci/servers.sh run -- go test -run '^$' -bench BenchmarkCompactS3Integration -benchtime 1x ./internal/capabilities/archive/lake/
func BenchmarkCompactS3Integration(b *testing.B) {
	ctx := context.Background()
	objects := 2000
	if testing.Short() {
		objects = 100
	}
	c := awstest.S3(b)
	for b.Loop() {
		b.StopTimer()
		bucket := awstest.CreateBucket(ctx, b, c, "bench")
		st := objstore.NewS3(c, bucket, "", objstore.S3Options{})
		keys, size := writeArchive(ctx, b, st, "archive", objects, 100, 800)
		b.StartTimer()
		t0 := time.Now()
		n := 0
		for _, k := range keys {
			body, err := objstore.ReadAll(ctx, st, k)
			if err != nil {
				b.Fatal(err)
			}
			n += len(body)
		}
		read := time.Since(t0)
		t0 = time.Now()
		res, err := Compact(ctx, st, Options{Prefix: "archive", Logger: quiet})
		if err != nil || res.Inputs != objects || res.Removed != objects {
			b.Fatal(res, err)
		}
		compact := time.Since(t0)
		b.ReportMetric(float64(objects)/read.Seconds(), "read-objects/s")
		b.ReportMetric(float64(size)/read.Seconds()/1e6, "read-MB/s")
		b.ReportMetric(float64(objects)/compact.Seconds(), "objects/s")
		b.ReportMetric(float64(size)/compact.Seconds()/1e6, "MB/s")
		b.ReportMetric(float64(size)/float64(objects), "bytes/object")
		b.ReportMetric(float64(res.OutputBytes), "parquet-bytes")
		b.ReportMetric(float64(len(res.Written)), "parquet-objects")
	}
}

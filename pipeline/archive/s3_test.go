package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
)

// wireLog records the HTTP requests an S3 client sends, as they go on the
// wire: it is the client's transport.
type wireLog struct {
	mu    sync.Mutex
	inner http.RoundTripper
	reqs  []wireReq
}

type wireReq struct {
	method string
	path   string
	query  string
	header http.Header
}

// op names the S3 operation of a request.
func (r wireReq) op() string {
	switch {
	case r.method == http.MethodPut && strings.Contains(r.query, "partNumber="):
		return "UploadPart"
	case r.method == http.MethodPut:
		return "PutObject"
	case r.method == http.MethodPost && strings.Contains(r.query, "uploads"):
		return "CreateMultipartUpload"
	case r.method == http.MethodPost && strings.Contains(r.query, "uploadId="):
		return "CompleteMultipartUpload"
	case r.method == http.MethodDelete && strings.Contains(r.query, "uploadId="):
		return "AbortMultipartUpload"
	}
	return r.method
}

func (w *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	w.reqs = append(w.reqs, wireReq{req.Method, req.URL.Path, req.URL.RawQuery, req.Header.Clone()})
	w.mu.Unlock()
	return w.inner.RoundTrip(req)
}

func (w *wireLog) take() []wireReq {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.reqs
	w.reqs = nil
	return r
}

// count returns how many requests of each operation were sent.
func count(reqs []wireReq) map[string]int {
	m := map[string]int{}
	for _, r := range reqs {
		m[r.op()]++
	}
	return m
}

// checkEncryption asserts that every request that creates an object
// (PutObject, CreateMultipartUpload) carries the encryption headers. The
// parts of a multipart upload (UploadPart) are encrypted as their
// CreateMultipartUpload says; S3 takes no SSE-S3 or SSE-KMS header on them.
func checkEncryption(t *testing.T, reqs []wireReq, kmsKey string) {
	t.Helper()
	writes := 0
	for _, r := range reqs {
		switch r.op() {
		case "PutObject", "CreateMultipartUpload":
			writes++
			want := "AES256"
			if kmsKey != "" {
				want = "aws:kms"
			}
			if got := r.header.Get("X-Amz-Server-Side-Encryption"); got != want {
				t.Errorf("%s %s: x-amz-server-side-encryption %q, want %q", r.op(), r.path, got, want)
			}
			if got := r.header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"); got != kmsKey {
				t.Errorf("%s %s: KMS key %q, want %q", r.op(), r.path, got, kmsKey)
			}
		}
	}
	if writes == 0 {
		t.Errorf("no object was written")
	}
}

// gofakes3Client starts an in-process S3 server and returns a path-style
// client over plain HTTP that logs its requests, and a bucket on it.
func gofakes3Client(t *testing.T) (*s3.Client, *wireLog, string) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	log := &wireLog{inner: http.DefaultTransport}
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   &http.Client{Transport: log},
	})
	bucket := "archive-test"
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	log.take()
	return c, log, bucket
}

// motoClient returns a logging client for the integration server and a
// fresh bucket on it, emptied and deleted at the end of the test.
func motoClient(t *testing.T) (*s3.Client, *wireLog, string) {
	t.Helper()
	cfg := awstest.Config(t)
	log := &wireLog{inner: http.DefaultTransport}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.HTTPClient = &http.Client{Transport: log}
	})
	ctx := context.Background()
	bucket := awstest.UniqueName(t, "arch")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Errorf("emptying %s: %v", bucket, err)
				return
			}
			for _, o := range page.Contents {
				c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			}
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Errorf("deleting %s: %v", bucket, err)
		}
	})
	log.take()
	return c, log, bucket
}

// bigEvent returns an event of n TTL removals of one entity type and date,
// each carrying size random (incompressible) bytes, so that their object is
// about n*size bytes even gzipped.
func bigEvent(t *testing.T, n, size int) []byte {
	t.Helper()
	var recs []simRecord
	for i := range n {
		blob := make([]byte, size)
		rand.Read(blob)
		it := pipeline.Item{
			"PK":         &types.AttributeValueMemberS{Value: fmt.Sprintf("BLOB#%d", i)},
			"SK":         &types.AttributeValueMemberS{Value: "META"},
			"EntityType": &types.AttributeValueMemberS{Value: "Blob"},
			"data":       &types.AttributeValueMemberB{Value: blob},
			"ttl":        &types.AttributeValueMemberN{Value: "1767225000"},
		}
		seq := fmt.Sprintf("5%021d", i)
		var b []byte
		b = fmt.Appendf(b, `{"eventID":"big-%d","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":%q,`, i, simStreamARN)
		b = append(b, `"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},"dynamodb":{"ApproximateCreationDateTime":1767225600,"Keys":{"PK":{"S":"`...)
		b = fmt.Appendf(b, `BLOB#%d"},"SK":{"S":"META"}},"OldImage":`, i)
		b = pipeline.AppendItem(b, it)
		b = fmt.Appendf(b, `,"SequenceNumber":%q,"SizeBytes":%d,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`, seq, size)
		recs = append(recs, simRecord{json: b})
	}
	return eventJSON(recs)
}

// readAll returns every object of a store, by key.
func readAll(t *testing.T, src Source) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	err := src.List(ctx, "", func(o Object) error {
		rc, err := src.Open(ctx, o.Key)
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if int64(len(b)) != o.Size {
			return fmt.Errorf("%s: listed %d bytes, read %d", o.Key, o.Size, len(b))
		}
		out[o.Key] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testS3Store runs the S3 store against a real S3-protocol server.
func testS3Store(t *testing.T, newClient func(t *testing.T) (*s3.Client, *wireLog, string)) {
	ctx := context.Background()

	t.Run("SameLayoutAsDir", func(t *testing.T) {
		// The golden event, archived to S3 and to a directory, gives the
		// same keys and the same bytes; every write is SSE-S3 encrypted.
		c, log, bucket := newClient(t)
		store := NewS3(c, bucket, S3Options{})
		proc := pipeline.NewStreamsProcessor(New(store, Options{Prefix: "ttl-archive/app", Logger: quiet}), pipeline.Config{Logger: quiet})
		if out, err := proc.Invoke(ctx, readEvent(t)); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s %v", out, err)
		}
		reqs := log.take()
		checkEncryption(t, reqs, "")
		if n := count(reqs); n["PutObject"] != 5 || n["CreateMultipartUpload"] != 0 {
			t.Errorf("requests %v, want 5 PutObject", n)
		}
		dir := NewDir(t.TempDir())
		proc = pipeline.NewStreamsProcessor(New(dir, Options{Prefix: "ttl-archive/app", Logger: quiet}), pipeline.Config{Logger: quiet})
		if _, err := proc.Invoke(ctx, readEvent(t)); err != nil {
			t.Fatal(err)
		}
		got, want := readAll(t, store), readAll(t, dir)
		if len(got) != len(want) || len(got) != 5 {
			t.Fatalf("S3 has %d objects, the directory %d", len(got), len(want))
		}
		for k, b := range want {
			if !bytes.Equal(got[k], b) {
				t.Errorf("%s differs between S3 and the directory", k)
			}
		}
		if err := checkNoUnreadable(ctx, store, "ttl-archive/app"); err != nil {
			t.Error(err)
		}
	})

	t.Run("KMS", func(t *testing.T) {
		c, log, bucket := newClient(t)
		const key = "arn:aws:kms:us-east-1:111122223333:key/00000000-1111-2222-3333-444444444444"
		store := NewS3(c, bucket, S3Options{KMSKeyID: key})
		if err := store.Put(ctx, "k/one.jsonl.gz", Gzip([]byte("{}\n"))); err != nil {
			t.Fatal(err)
		}
		checkEncryption(t, log.take(), key)
	})

	t.Run("LowThresholdGoesThroughUploader", func(t *testing.T) {
		// With the threshold at 1 KiB, objects above it go through the
		// multipart upload manager; below a part (5 MiB) the manager sends
		// one PutObject, still encrypted.
		c, log, bucket := newClient(t)
		store := NewS3(c, bucket, S3Options{MultipartThreshold: 1 << 10})
		proc := pipeline.NewStreamsProcessor(New(store, Options{Logger: quiet}), pipeline.Config{Logger: quiet})
		if out, err := proc.Invoke(ctx, bigEvent(t, 3, 2<<10)); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s %v", out, err)
		}
		reqs := log.take()
		checkEncryption(t, reqs, "")
		if n := count(reqs); n["PutObject"] != 1 {
			t.Errorf("requests %v", n)
		}
	})

	t.Run("Multipart", func(t *testing.T) {
		// A real multipart upload: 16 items of 400 KB random bytes make a
		// 6.4 MB gzip object, sent as two parts of S3's minimum size.
		c, log, bucket := newClient(t)
		store := NewS3(c, bucket, S3Options{})
		h := New(store, Options{Logger: quiet})
		event := bigEvent(t, 16, 400_000)
		out, err := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet}).Invoke(ctx, event)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s %v", out, err)
		}
		reqs := log.take()
		checkEncryption(t, reqs, "")
		n := count(reqs)
		if n["CreateMultipartUpload"] != 1 || n["UploadPart"] != 2 || n["CompleteMultipartUpload"] != 1 || n["PutObject"] != 0 {
			t.Errorf("requests %v, want one multipart upload of 2 parts", n)
		}
		// Reading it back gives the same bytes as the same batch archived to
		// a directory.
		dir := NewDir(t.TempDir())
		if _, err := pipeline.NewStreamsProcessor(New(dir, Options{Logger: quiet}), pipeline.Config{Logger: quiet}).Invoke(ctx, event); err != nil {
			t.Fatal(err)
		}
		got, want := readAll(t, store), readAll(t, dir)
		for k, b := range want {
			if len(b) <= 5<<20 {
				t.Errorf("%s is %d bytes, not above one part", k, len(b))
			}
			if !bytes.Equal(got[k], b) {
				t.Errorf("%s: %d bytes read back, want %d identical bytes", k, len(got[k]), len(b))
			}
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		c, _, bucket := newClient(t)
		if _, err := NewS3(c, bucket, S3Options{}).Open(ctx, "missing.jsonl.gz"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open of a missing object: %v", err)
		}
	})
}

// checkNoUnreadable reads every line of every object under prefix.
func checkNoUnreadable(ctx context.Context, src Source, prefix string) error {
	a := Open(src, prefix)
	objs, other, err := a.Objects(ctx, Filter{})
	if err != nil {
		return err
	}
	if len(other) > 0 {
		return fmt.Errorf("unexpected objects %v", other)
	}
	for _, o := range objs {
		if err := a.ReadLines(ctx, o.Key, func(_ int, line []byte) error {
			_, err := ParseLine(line)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// TestS3StoreGofakes3 runs the S3 store against gofakes3, in process.
func TestS3StoreGofakes3(t *testing.T) { testS3Store(t, gofakes3Client) }

// TestS3StoreIntegration runs the S3 store against moto_server.
func TestS3StoreIntegration(t *testing.T) { testS3Store(t, motoClient) }

// TestS3PutFailure: a failed write is an error naming the object.
func TestS3PutFailure(t *testing.T) {
	c, _, _ := gofakes3Client(t)
	store := NewS3(c, "no-such-bucket", S3Options{})
	err := store.Put(context.Background(), "a/b.jsonl.gz", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "s3://no-such-bucket/a/b.jsonl.gz") {
		t.Fatalf("error %v", err)
	}
}

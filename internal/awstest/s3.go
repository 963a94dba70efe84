package awstest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// GoFakeS3 starts an in-process S3 server (gofakes3, in memory) for the
// test's lifetime and returns a path-style client for it over plain HTTP;
// opts adjust the client (a logging HTTPClient, say). It needs no harness:
// the unit tests of S3 code run on it, and the integration tests on moto
// ([S3]) run the same code again.
func GoFakeS3(t testing.TB, opts ...func(*s3.Options)) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(conditionalDelete(gofakes3.New(s3mem.New()).Server()))
	t.Cleanup(srv.Close)
	o := s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		// Test servers send no response checksums; do not log each one.
		DisableLogOutputChecksumValidationSkipped: true,
	}
	for _, fn := range opts {
		fn(&o)
	}
	return s3.New(o)
}

// conditionalDelete gives gofakes3 S3's DeleteObject If-Match, which it
// lacks: 404 for a missing object, 412 for another ETag (read by a HEAD of
// the same server; in process, requests of one test rarely race, and moto
// runs the same tests with S3's own check).
func conditionalDelete(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := r.Header.Get("If-Match")
		if r.Method != http.MethodDelete || want == "" || r.URL.RawQuery != "" && !strings.HasPrefix(r.URL.RawQuery, "x-id=") {
			h.ServeHTTP(w, r)
			return
		}
		head := httptest.NewRecorder()
		hr := r.Clone(r.Context())
		hr.Method = http.MethodHead
		hr.Header.Del("If-Match")
		h.ServeHTTP(head, hr)
		etag := strings.Trim(head.Header().Get("ETag"), `"`)
		switch {
		case head.Code == http.StatusNotFound:
			http.Error(w, "<Error><Code>NoSuchKey</Code></Error>", http.StatusNotFound)
		case want != "*" && strings.Trim(want, `"`) != etag:
			http.Error(w, "<Error><Code>PreconditionFailed</Code></Error>", http.StatusPreconditionFailed)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// CreateBucket creates a bucket named from prefix and the test
// ([UniqueName]) and registers a cleanup that empties (objects and
// incomplete multipart uploads) and deletes it.
func CreateBucket(ctx context.Context, t testing.TB, c *s3.Client, prefix string) string {
	t.Helper()
	name := UniqueName(t, prefix)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("awstest.CreateBucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		// The test's context may already be cancelled here.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Errorf("awstest: emptying bucket %s: %v", name, err)
				return
			}
			for _, o := range page.Contents {
				if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key}); err != nil {
					t.Errorf("awstest: emptying bucket %s: %v", name, err)
				}
			}
		}
		ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(name)})
		if err == nil {
			for _, u := range ups.Uploads {
				if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(name), Key: u.Key, UploadId: u.UploadId}); err != nil {
					t.Errorf("awstest: aborting an upload to bucket %s: %v", name, err)
				}
			}
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("awstest: deleting bucket %s: %v", name, err)
		}
	})
	return name
}

// S3Log is an http.RoundTripper (for an S3 client's HTTPClient) that
// records the requests the client sends, as they go on the wire, and names
// their S3 operations: what a test checks about headers (encryption,
// conditions) and about how an object was uploaded.
type S3Log struct {
	mu   sync.Mutex
	reqs []S3Request
}

// S3Request is one request an [S3Log] saw.
type S3Request struct {
	Op, Method, Path, Query string
	Header                  http.Header
}

// RoundTrip records req and sends it with http.DefaultTransport.
func (l *S3Log) RoundTrip(req *http.Request) (*http.Response, error) {
	r := S3Request{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Header: req.Header.Clone()}
	switch {
	case r.Method == http.MethodPut && strings.Contains(r.Query, "partNumber="):
		r.Op = "UploadPart"
	case r.Method == http.MethodPut:
		r.Op = "PutObject"
	case r.Method == http.MethodPost && strings.Contains(r.Query, "uploads"):
		r.Op = "CreateMultipartUpload"
	case r.Method == http.MethodPost && strings.Contains(r.Query, "uploadId="):
		r.Op = "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && strings.Contains(r.Query, "uploadId="):
		r.Op = "AbortMultipartUpload"
	default:
		r.Op = r.Method
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// Take returns the requests recorded since the last Take.
func (l *S3Log) Take() []S3Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reqs
	l.reqs = nil
	return r
}

// Count returns how many requests of each operation reqs holds.
func Count(reqs []S3Request) map[string]int {
	m := map[string]int{}
	for _, r := range reqs {
		m[r.Op]++
	}
	return m
}

// LoggedS3 returns an S3 client with an [S3Log] on the given server (GoFakeS3
// or the integration server's S3) and a fresh bucket on it.
func LoggedS3(t testing.TB, server func(t testing.TB, opts ...func(*s3.Options)) *s3.Client) (*s3.Client, *S3Log, string) {
	t.Helper()
	log := &S3Log{}
	c := server(t, func(o *s3.Options) { o.HTTPClient = &http.Client{Transport: log} })
	bucket := CreateBucket(context.Background(), t, c, "b")
	log.Take()
	return c, log, bucket
}

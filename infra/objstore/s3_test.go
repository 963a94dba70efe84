package objstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/awstest"
)

// server is an S3-protocol server for the tests: a client that logs its
// requests, and a fresh bucket on it.
type server func(t *testing.T) (*s3.Client, *awstest.S3Log, string)

func gofakes3(t *testing.T) (*s3.Client, *awstest.S3Log, string) {
	return awstest.LoggedS3(t, awstest.GoFakeS3)
}

func moto(t *testing.T) (*s3.Client, *awstest.S3Log, string) { return awstest.LoggedS3(t, awstest.S3) }

func TestS3ConformanceGofakes3(t *testing.T) { testS3(t, gofakes3) }

func TestS3ConformanceIntegration(t *testing.T) { testS3(t, moto) }

func testS3(t *testing.T, srv server) {
	ctx := context.Background()
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		c, _, bucket := srv(t)
		return objstore.NewS3(c, bucket, "tributary/run", objstore.S3Options{TempDir: t.TempDir()})
	})

	t.Run("PrefixIsASegment", func(t *testing.T) {
		c, _, bucket := srv(t)
		a := objstore.NewS3(c, bucket, "out", objstore.S3Options{})
		b := objstore.NewS3(c, bucket, "out2", objstore.S3Options{})
		if err := b.Put(ctx, "x.json", []byte("b")); err != nil {
			t.Fatal(err)
		}
		if err := a.List(ctx, "", func(o objstore.Object) error { t.Errorf("s3://%s/out lists %s", bucket, o.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		if a.String() != "s3://"+bucket+"/out" || objstore.NewS3(c, bucket, "", objstore.S3Options{}).String() != "s3://"+bucket {
			t.Errorf("String: %s", a)
		}
	})

	t.Run("FoldersAreNotObjects", func(t *testing.T) {
		c, _, bucket := srv(t)
		st := objstore.NewS3(c, bucket, "dest", objstore.S3Options{})
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("dest/aws/"), Body: bytes.NewReader(nil)}); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, "aws/record", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		var keys []string
		if err := st.List(ctx, "", func(o objstore.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(keys, ",") != "aws/record" {
			t.Errorf("listed %q", keys)
		}
	})

	t.Run("EncryptionOnEveryWrite", func(t *testing.T) {
		for _, kms := range []string{"", "arn:aws:kms:us-east-1:111122223333:key/00000000-1111-2222-3333-444444444444"} {
			c, log, bucket := srv(t)
			st := objstore.NewS3(c, bucket, "p", objstore.S3Options{KMSKeyID: kms, TempDir: t.TempDir(), PartSize: objstore.MinPartSize})
			if err := st.Put(ctx, "small.json", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if _, err := st.PutIfAbsent(ctx, "claim.json", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			big := make([]byte, objstore.MinPartSize+1)
			w, err := st.Create(ctx, "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(big); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			writes := 0
			for _, r := range log.Take() {
				switch r.Op {
				case "PutObject", "CreateMultipartUpload":
					writes++
					want := "AES256"
					if kms != "" {
						want = "aws:kms"
					}
					if got := r.Header.Get("X-Amz-Server-Side-Encryption"); got != want {
						t.Errorf("%s %s: x-amz-server-side-encryption %q, want %q", r.Op, r.Path, got, want)
					}
					if got := r.Header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"); got != kms {
						t.Errorf("%s %s: KMS key %q, want %q", r.Op, r.Path, got, kms)
					}
				}
			}
			if writes != 3 {
				t.Errorf("%d object-creating requests, want 3", writes)
			}
		}
	})

	t.Run("MultipartFromTheThreshold", func(t *testing.T) {
		c, log, bucket := srv(t)
		st := objstore.NewS3(c, bucket, "", objstore.S3Options{PartSize: objstore.MinPartSize, TempDir: t.TempDir()})
		body := make([]byte, 2*objstore.MinPartSize+7)
		rand.Read(body)
		if err := st.Put(ctx, "below", body[:objstore.MinPartSize-1]); err != nil {
			t.Fatal(err)
		}
		if n := awstest.Count(log.Take()); n["PutObject"] != 1 || n["CreateMultipartUpload"] != 0 {
			t.Errorf("below the threshold: %v, want one PutObject", n)
		}
		if err := st.Put(ctx, "above", body); err != nil {
			t.Fatal(err)
		}
		if n := awstest.Count(log.Take()); n["CreateMultipartUpload"] != 1 || n["UploadPart"] != 3 || n["CompleteMultipartUpload"] != 1 || n["PutObject"] != 0 {
			t.Errorf("above the threshold: %v, want one multipart upload of 3 parts", n)
		}
		if got, _ := objstore.ReadAll(ctx, st, "above"); !bytes.Equal(got, body) {
			t.Errorf("multipart object read back as %d bytes, want %d", len(got), len(body))
		}
		// A conditional write is one PutObject whatever its size.
		log.Take()
		if _, err := st.PutIfAbsent(ctx, "claim", body); err != nil {
			t.Fatal(err)
		}
		reqs := log.Take()
		if n := awstest.Count(reqs); n["PutObject"] != 1 || n["CreateMultipartUpload"] != 0 {
			t.Errorf("conditional write: %v, want one PutObject", n)
		}
		if reqs[0].Header.Get("If-None-Match") != "*" {
			t.Errorf("PutIfAbsent sent If-None-Match %q", reqs[0].Header.Get("If-None-Match"))
		}
	})

	t.Run("SweepAbortsIncompleteUploads", func(t *testing.T) {
		c, _, bucket := srv(t)
		st := objstore.NewS3(c, bucket, "out", objstore.S3Options{TempDir: t.TempDir()})
		// What a process killed during a multipart upload leaves.
		for _, k := range []string{"out/entity=A/part-0.json.gz", "other/x"} {
			if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := st.Sweep(ctx, "")
		if err != nil || n != 1 {
			t.Fatalf("Sweep: %d, %v; want 1 upload aborted", n, err)
		}
		ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatal(err)
		}
		if len(ups.Uploads) != 1 || aws.ToString(ups.Uploads[0].Key) != "other/x" {
			t.Errorf("uploads left: %+v, want only other/x", ups.Uploads)
		}
	})

	t.Run("NoSuchBucket", func(t *testing.T) {
		c, _, _ := srv(t)
		st := objstore.NewS3(c, "no-such-bucket-here", "p", objstore.S3Options{})
		err := st.Put(ctx, "a/b.json", []byte("x"))
		if err == nil || !strings.Contains(err.Error(), "s3://no-such-bucket-here/p/a/b.json") {
			t.Errorf("Put into a missing bucket: %v", err)
		}
		if _, err := st.Open(ctx, "a/b.json"); err == nil || errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Open in a missing bucket: %v, want an error other than not found", err)
		}
	})
}

// TestS3SpoolOfDeadProcesses: the spool files a killed process left in the
// spool directory go at the next process's first write, and the live
// process's open ones stay.
func TestS3SpoolOfDeadProcesses(t *testing.T) {
	ctx := context.Background()
	c, _, bucket := gofakes3(t)
	dir := t.TempDir()
	// A process that no longer runs (PID 2^22-1 is above Linux's default
	// pid_max, 2^22, less one) and an earlier process of this PID.
	stale := []string{"tributary-spool-4194303-1", "tributary-spool-" + strconv.Itoa(os.Getpid()) + "-2"}
	for _, name := range stale {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("parts of a dead upload"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "unrelated"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := objstore.NewS3(c, bucket, "", objstore.S3Options{TempDir: dir})
	w, err := st.Create(ctx, "a.json")
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[1] != "unrelated" || !strings.HasPrefix(names[0], "tributary-spool-"+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("spool directory holds %q, want this writer's spool file and the unrelated file", names)
	}
	if n, _ := st.Sweep(ctx, ""); n != 0 {
		t.Errorf("Sweep removed %d files while a writer is open", n)
	}
	if _, err := w.Write([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left after Commit, want the unrelated one", len(ents))
	}
}

// closeFailsTransport sends requests as they are, and gives every response
// a body that reads whole but fails to close.
type closeFailsTransport struct{}

type closeFailsBody struct{ io.ReadCloser }

func (b closeFailsBody) Close() error { return errors.Join(b.ReadCloser.Close(), errClose) }

func (closeFailsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		resp.Body = closeFailsBody{resp.Body}
	}
	return resp, err
}

// TestS3CloseErrorsNameTheObject: an object whose response body fails to
// close is not read as if all were well, by Get or by Open, and the error
// names the object.
func TestS3CloseErrorsNameTheObject(t *testing.T) {
	ctx := context.Background()
	c := awstest.GoFakeS3(t)
	bucket := awstest.CreateBucket(ctx, t, c, "close")
	if err := objstore.NewS3(c, bucket, "", objstore.S3Options{}).Put(ctx, "claim.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	failing := s3.New(c.Options(), func(o *s3.Options) { o.HTTPClient = &http.Client{Transport: closeFailsTransport{}} })
	st := objstore.NewS3(failing, bucket, "", objstore.S3Options{})
	name := "s3://" + bucket + "/claim.json"
	if b, _, err := st.Get(ctx, "claim.json"); !errors.Is(err, errClose) || !strings.Contains(err.Error(), name) {
		t.Errorf("Get: %q, %v; want the close error, naming %s", b, err, name)
	}
	if b, err := objstore.ReadAll(ctx, st, "claim.json"); !errors.Is(err, errClose) || !strings.Contains(err.Error(), name) {
		t.Errorf("ReadAll: %q, %v; want the close error, naming %s", b, err, name)
	}
}

package objstore_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
)

// TestIntegrationS3OpenVersion: on the test server, OpenVersion reads an
// object only while its ETag is the one given (If-Match), returns the
// ETag it read, and fails with ErrPreconditionFailed once the object is
// another, or for an ETag it never had.
func TestIntegrationS3OpenVersion(t *testing.T) {
	ctx := context.Background()
	c := awstest.S3(t)
	bucket := awstest.CreateBucket(ctx, t, c, "openversion")
	st := objstore.NewS3(c, bucket, "p/", objstore.S3Options{})
	if err := st.Put(ctx, "a", []byte("first")); err != nil {
		t.Fatal(err)
	}
	read := func(version string) (string, string, error) {
		r, got, err := st.OpenVersion(ctx, "a", version)
		if err != nil {
			return "", "", err
		}
		b, err := io.ReadAll(r)
		return string(b), got, errors.Join(err, r.Close())
	}
	body, etag, err := read("")
	if err != nil || body != "first" || etag == "" {
		t.Fatalf("any version: %q, ETag %q, %v", body, etag, err)
	}
	if body, got, err := read(etag); err != nil || body != "first" || got != etag {
		t.Fatalf("its own ETag: %q, ETag %q, %v", body, got, err)
	}
	if _, _, err := read(`"0123456789abcdef0123456789abcdef-1"`); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("another ETag: %v, want ErrPreconditionFailed", err)
	}
	if err := st.Put(ctx, "a", []byte("second")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := read(etag); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("the ETag of the object replaced: %v, want ErrPreconditionFailed", err)
	}
	if _, _, err := st.OpenVersion(ctx, "missing", etag); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("a missing object: %v, want ErrNotFound", err)
	}
}

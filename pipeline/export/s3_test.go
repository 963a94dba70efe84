package export_test

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline/export"
)

// gofakes3Client starts an in-process S3 server and returns a path-style
// client over plain HTTP and a bucket on it.
func gofakes3Client(t *testing.T) (*s3.Client, string) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	bucket := "export-test"
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return c, bucket
}

// TestS3RoundTrip reads the fixture export from S3 (addressed by the
// export's own directory, as a user would paste it), repartitions it into
// S3 with multipart uploads, and reads the output back.
func TestS3RoundTrip(t *testing.T) {
	ctx := context.Background()
	client, bucket := gofakes3Client(t)
	fx := fixtureItems(t)
	if err := exportgen.CopyDir(ctx, export.NewS3(client, bucket, "exports/app", export.S3Options{}), fixtureDir); err != nil {
		t.Fatal(err)
	}

	newStore := func(l export.Location) (export.Store, error) {
		return export.NewS3(client, l.Bucket, l.Prefix, export.S3Options{TempDir: t.TempDir()}), nil
	}
	loc, _ := export.ParseLocation("s3://" + bucket + "/exports/app/" + fx.Full.Dir)
	e, err := export.OpenExportAt(ctx, loc, newStore, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Summary.ItemCount != int64(len(fx.FullItems)) {
		t.Fatalf("itemCount %d", e.Summary.ItemCount)
	}
	incLoc, _ := export.ParseLocation("s3://" + bucket + "/exports/app/" + fx.Incremental.Dir)
	inc, err := export.OpenExportAt(ctx, incLoc, newStore, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := export.LoadOverlay(ctx, e, []*export.Export{inc}, pipelineOptions(), false)
	if err != nil {
		t.Fatal(err)
	}
	out := export.NewS3(client, bucket, "split/run1", export.S3Options{TempDir: t.TempDir()})
	r, err := export.NewRepartitioner(e, ov, out, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 3, false); err != nil {
		t.Fatal(err)
	}
	compareLines(t, outputLines(t, out), expectedLines(fx.FinalItems, nil))

	// The big document's part is over 8 MiB uncompressed but compresses
	// small; a multipart upload happens for parts over the part size: check
	// one explicitly.
	big := bytes.Repeat([]byte("0123456789abcdef"), 9<<20/16)
	w, err := out.Create(ctx, "scratch/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(big)
	if err := w.Commit(ctx); err != nil {
		t.Fatalf("multipart commit: %v", err)
	}
	rc, err := out.Open(ctx, "scratch/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, big) {
		t.Errorf("multipart object: %d bytes back, want %d", len(got), len(big))
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("split/run1/" + export.SummaryKey)})
	if err != nil {
		t.Fatal(err)
	}
	if head.ServerSideEncryption != "AES256" {
		t.Logf("summary's SSE header: %q (gofakes3 may not echo it)", head.ServerSideEncryption)
	}
	// A listing with a prefix that is not a directory boundary.
	var keys []string
	out.List(ctx, "entity=Comment/part-", func(o export.Object) error { keys = append(keys, o.Key); return nil })
	if len(keys) == 0 || !strings.HasPrefix(keys[0], "entity=Comment/part-") {
		t.Errorf("listing the import prefix: %v", keys)
	}
}

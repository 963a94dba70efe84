package repartition_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

// TestS3RoundTrip reads the fixture export from S3 (addressed by the
// export's own directory, as a user would paste it), repartitions it into
// S3 with multipart uploads, and reads the output back.
func TestS3RoundTrip(t *testing.T) {
	ctx := context.Background()
	client := awstest.GoFakeS3(t)
	bucket := awstest.CreateBucket(ctx, t, client, "export")
	fx := exportgen.FixtureItems(t)
	if err := exportgen.CopyDir(ctx, objstore.NewS3(client, bucket, "exports/app", objstore.S3Options{}), exportgen.FixtureDir()); err != nil {
		t.Fatal(err)
	}

	newStore := func(l objstore.Location) (export.Source, error) {
		return objstore.NewS3(client, l.Bucket, l.Prefix, objstore.S3Options{TempDir: t.TempDir()}), nil
	}
	loc, _ := objstore.Parse("s3://" + bucket + "/exports/app/" + fx.Full.Dir)
	e, err := export.OpenExportAt(ctx, loc, newStore, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Summary.ItemCount != int64(len(fx.FullItems)) {
		t.Fatalf("itemCount %d", e.Summary.ItemCount)
	}
	incLoc, _ := objstore.Parse("s3://" + bucket + "/exports/app/" + fx.Incremental.Dir)
	inc, err := export.OpenExportAt(ctx, incLoc, newStore, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := export.LoadOverlay(ctx, e, []*export.Export{inc}, pipeline.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	out := objstore.NewS3(client, bucket, "split/run1", objstore.S3Options{TempDir: t.TempDir()})
	r, err := repartition.NewRepartitioner(e, ov, out, repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 3, false); err != nil {
		t.Fatal(err)
	}
	exportgen.CompareLines(t, exportgen.OutputLines(t, out), exportgen.ExpectedLines(fx.FinalItems, nil))

	// The big document's part is over 8 MiB uncompressed but compresses
	// small; a multipart upload happens for parts over the part size: check
	// one explicitly.
	big := bytes.Repeat([]byte("0123456789abcdef"), 9<<20/16)
	w, err := out.Create(ctx, "scratch/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(big); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatalf("multipart commit: %v", err)
	}
	got, err := objstore.ReadAll(ctx, out, "scratch/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Errorf("multipart object: %d bytes back, want %d", len(got), len(big))
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("split/run1/" + repartition.SummaryKey)})
	if err != nil {
		t.Fatal(err)
	}
	if head.ServerSideEncryption != "AES256" {
		t.Logf("summary's SSE header: %q (gofakes3 may not echo it)", head.ServerSideEncryption)
	}
	// A listing with a prefix that is not a directory boundary.
	var keys []string
	if err := out.List(ctx, "entity=Comment/part-", func(o objstore.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 || !strings.HasPrefix(keys[0], "entity=Comment/part-") {
		t.Errorf("listing the import prefix: %v", keys)
	}
}

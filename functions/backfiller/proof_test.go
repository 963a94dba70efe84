package backfiller_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
)

// ifMatchS3 evaluates a GetObject's If-Match as S3 does, which gofakes3
// does not on reads.
type ifMatchS3 struct{ objstore.S3API }

func (c ifMatchS3) GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if in.IfMatch != nil {
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: in.Bucket, Key: in.Key})
		if err != nil {
			return nil, err
		}
		if aws.ToString(head.ETag) != aws.ToString(in.IfMatch) {
			return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
		}
	}
	return c.S3API.GetObject(ctx, in, optFns...)
}

// TestFileStepProvesTheObject: a file step over a data file whose object
// in the bucket is not the exported one (another order status: valid
// gzip, another MD5) applies nothing of it and fails naming it; once the
// exported object is back, the job completes and its aggregates are the
// recomputation's, where the items applied from the other object would
// have stayed, passed over as applied.
func TestFileStepProvesTheObject(t *testing.T) {
	ctx := context.Background()
	raw, full, inc := fixtureInS3(t)
	client := ifMatchS3{raw}
	bucket, _, _ := strings.Cut(strings.TrimPrefix(full, "s3://"), "/")
	src := objstore.NewS3(client, bucket, "exports/app", objstore.S3Options{})
	st := boltstoretest.Open(t)
	cfg, err := backfiller.LoadConfig(vars(map[string]string{"AGGREGATE_TABLE": "aggregates", "EXPORT_LOCATION": full, "BATCH_SIZE": "10"}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := backfiller.New(cfg, seed.Environment(), client, st, quiet())
	if err != nil {
		t.Fatal(err)
	}
	step := func(action, file string) (backfiller.Response, error) {
		return h.Handle(ctx, backfiller.Event{Action: action, Incrementals: []string{inc}, DataFileS3Key: file})
	}
	plan, err := step("plan", "")
	if err != nil {
		t.Fatal(err)
	}
	file := plan.Plan.Files[0]
	key := file[strings.Index(file, "AWSDynamoDB/"):]
	orig, err := objstore.ReadAll(ctx, src, key)
	if err != nil {
		t.Fatal(err)
	}
	data := exportgen.Gunzip(t, orig)
	i := bytes.Index(data, []byte(`"status":{"S":"PENDING"}`))
	if i < 0 || i > len(data)*3/4 {
		t.Fatalf("no PENDING order early in %s", file)
	}
	other := bytes.Replace(data, []byte(`"status":{"S":"PENDING"}`), []byte(`"status":{"S":"SHIPPED"}`), 1)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(other); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Put(ctx, key, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	r, err := step("file", file)
	if err == nil || !strings.Contains(err.Error(), "not the exported object") || !strings.Contains(err.Error(), "nothing of it was read") || r.Items != 0 {
		t.Fatalf("the file step over another object: %+v, %v; want it refused before a line of it is read", r, err)
	}
	if err := src.Put(ctx, key, orig); err != nil {
		t.Fatal(err)
	}
	for {
		plan, err := step("plan", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Plan.Files) == 0 {
			break
		}
		for _, f := range plan.Plan.Files {
			if _, err := step("file", f); err != nil {
				t.Fatalf("file %s: %v", f, err)
			}
		}
	}
	if done, err := step("finish", ""); err != nil || !done.Complete {
		t.Fatalf("finish: %+v, %v", done, err)
	}
	check(t, "after the exported object was put back", st)
}

package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
)

// bigEvent returns an event of n TTL removals of one entity type and date,
// each carrying size random (incompressible) bytes, so that their object is
// about n*size bytes even gzipped.
func bigEvent(t *testing.T, n, size int) []byte {
	t.Helper()
	var recs []simRecord
	for i := range n {
		blob := make([]byte, size)
		rand.Read(blob)
		recs = append(recs, ttlRemoval(pipeline.Item{
			"PK":         &types.AttributeValueMemberS{Value: fmt.Sprintf("BLOB#%d", i)},
			"SK":         &types.AttributeValueMemberS{Value: "META"},
			"EntityType": &types.AttributeValueMemberS{Value: "Blob"},
			"data":       &types.AttributeValueMemberB{Value: blob},
			"ttl":        &types.AttributeValueMemberN{Value: "1767225000"},
		}, fmt.Sprintf("5%021d", i)))
	}
	return eventJSON(recs)
}

// ttlRemoval is the stream record of the TTL removal of it (keyed by its
// PK and SK) at sequence number seq.
func ttlRemoval(it pipeline.Item, seq string) simRecord {
	keys := pipeline.Item{"PK": it["PK"], "SK": it["SK"]}
	var b []byte
	b = fmt.Appendf(b, `{"eventID":"ttl-%s","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":%q,`, seq, simStreamARN)
	b = append(b, `"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},"dynamodb":{"ApproximateCreationDateTime":1767225600,"Keys":`...)
	b = pipeline.AppendItem(b, keys)
	b = append(b, `,"OldImage":`...)
	b = pipeline.AppendItem(b, it)
	b = fmt.Appendf(b, `,"SequenceNumber":%q,"SizeBytes":%d,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`, seq, pipeline.ItemSize(it))
	return simRecord{json: b, seq: seq, ttl: true}
}

// readAll returns every object of a store, by key.
func readAll(t *testing.T, src Source) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	err := src.List(ctx, "", func(o objstore.Object) error {
		rc, err := src.Open(ctx, o.Key)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		err = errors.Join(err, rc.Close())
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

// testS3Store archives through the S3 store on a real S3-protocol server.
func testS3Store(t *testing.T, server func(t testing.TB, opts ...func(*s3.Options)) *s3.Client) {
	ctx := context.Background()

	t.Run("SameLayoutAsDir", func(t *testing.T) {
		// The golden event, archived to S3 and to a directory, gives the
		// same keys and the same bytes, one PutObject per object.
		c, log, bucket := awstest.LoggedS3(t, server)
		store := objstore.NewS3(c, bucket, "", archiverS3Options)
		proc := pipeline.NewStreamsProcessor(New(store, Options{Prefix: "ttl-archive/app", Logger: quiet}), pipeline.Config{Logger: quiet})
		if out, err := proc.Invoke(ctx, readEvent(t)); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s %v", out, err)
		}
		if n := awstest.Count(log.Take()); n["PutObject"] != 5 || n["CreateMultipartUpload"] != 0 {
			t.Errorf("requests %v, want 5 PutObject", n)
		}
		dir := objstore.NewDir(t.TempDir())
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

	t.Run("Multipart", func(t *testing.T) {
		// A real multipart upload at the archiver's settings: 16 items of
		// 400 KB random bytes make a 6.4 MB gzip object, sent as two parts
		// of S3's minimum size.
		c, log, bucket := awstest.LoggedS3(t, server)
		store := objstore.NewS3(c, bucket, "", archiverS3Options)
		h := New(store, Options{Logger: quiet})
		event := bigEvent(t, 16, 400_000)
		out, err := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet}).Invoke(ctx, event)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s %v", out, err)
		}
		n := awstest.Count(log.Take())
		if n["CreateMultipartUpload"] != 1 || n["UploadPart"] != 2 || n["CompleteMultipartUpload"] != 1 || n["PutObject"] != 0 {
			t.Errorf("requests %v, want one multipart upload of 2 parts", n)
		}
		// Reading it back gives the same bytes as the same batch archived to
		// a directory.
		dir := objstore.NewDir(t.TempDir())
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

// TestS3StoreGofakes3 archives to gofakes3, in process.
func TestS3StoreGofakes3(t *testing.T) { testS3Store(t, awstest.GoFakeS3) }

// TestS3StoreIntegration archives to moto_server.
func TestS3StoreIntegration(t *testing.T) { testS3Store(t, awstest.S3) }

// archiverS3Options are the S3 options the archiver function uses by
// default (archiver.Config.S3Options).
var archiverS3Options = objstore.S3Options{MultipartThreshold: objstore.MinPartSize, PartSize: objstore.MinPartSize}

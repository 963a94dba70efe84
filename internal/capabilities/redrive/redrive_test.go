package redrive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/redrive"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openEngine opens an engine of the seed projections over st; a failure is
// a mistake in the test's wiring.
func openEngine(st driver.Table) *engine.Engine {
	e, err := engine.Open(context.Background(), st, seed.Set(), engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}})
	if err != nil {
		panic(err)
	}
	return e
}

func view(t *testing.T, r driver.Reader) *projections.View {
	t.Helper()
	v, err := projections.ReadView(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParse(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(destination, filepath.FromSlash(kinesisKey)))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := redrive.Parse(kinesisKey, data)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Source != pipeline.SourceKinesis || inv.Condition != "RetryAttemptsExhausted" || inv.InvokeCount != 3 || inv.Version != "1.0" ||
		inv.Batch.ShardID != "shardId-000000000001" || inv.Batch.BatchSize != 7 || inv.Timestamp.IsZero() || inv.Batch.ApproximateArrivalOfFirst.IsZero() ||
		!strings.HasPrefix(inv.Batch.StreamARN, "arn:aws:kinesis:") || !bytes.HasPrefix(inv.Payload, []byte(`{"Records":[`)) {
		t.Fatalf("parsed %+v", inv)
	}
	changes, err := inv.Decode(pipeline.Options{})
	if err != nil || len(changes) != 7 || changes[0].Position.SequenceNumber != inv.Batch.StartSequenceNumber || changes[6].Position.SequenceNumber != inv.Batch.EndSequenceNumber {
		t.Fatalf("decoded %d changes: %v", len(changes), err)
	}

	// The same record gzip-compressed, and with the event as an object.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if inv2, err := redrive.Parse("k.gz", gz.Bytes()); err != nil || !bytes.Equal(inv2.Payload, inv.Payload) {
		t.Errorf("gzip: %v", err)
	}
	obj := bytes.Replace(data, []byte(`"payload": "`), []byte(`"payload": `), 1)
	obj = append(obj[:bytes.LastIndex(obj, []byte(`"`))], []byte("\n}\n")...)
	obj = bytes.ReplaceAll(obj, []byte(`\"`), []byte(`"`))
	if inv3, err := redrive.Parse("k.obj", obj); err != nil || len(inv3.Payload) == 0 {
		t.Errorf("payload as an object: %v", err)
	}

	for _, tc := range []struct{ name, body, want string }{
		{"not json", "hello", "not an invocation record"},
		{"no batch info", `{"version":"1.0","payload":"{}"}`, "want exactly one of"},
		{"both", `{"KinesisBatchInfo":{},"DDBStreamBatchInfo":{},"payload":"{}"}`, "want exactly one of"},
		{"payload not an event", `{"KinesisBatchInfo":{},"payload":"[1]"}`, "not a JSON event"},
	} {
		if _, err := redrive.Parse(tc.name, []byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A metadata-only record (an SQS or SNS destination's) says where to read again.
	meta := `{"requestContext":{"condition":"RecordAgeExceeded"},"version":"1.0","timestamp":"2026-11-30T10:13:49.717Z",
	  "DDBStreamBatchInfo":{"shardId":"shardId-00000001764489600000-1a2b3c4d","startSequenceNumber":"800000000003126276362","endSequenceNumber":"800000000003126276370",
	  "approximateArrivalOfFirstRecord":"2026-11-30T10:13:19Z","approximateArrivalOfLastRecord":"2026-11-30T10:13:20Z","batchSize":9,"streamArn":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000"}}`
	inv4, err := redrive.Parse("meta", []byte(meta))
	if !errors.Is(err, redrive.ErrNoPayload) || inv4 == nil || inv4.Batch.StartSequenceNumber != "800000000003126276362" || !strings.Contains(err.Error(), "shardId-00000001764489600000-1a2b3c4d") {
		t.Errorf("metadata only: %+v, %v", inv4, err)
	}
}

// TestRedriveDir redrives the fixtures' batches from a local copy of the
// destination: every record but the poison one is applied, as by the
// projector; the poison one fails again and is reported. A second redrive
// is a no-op.
func TestRedriveDir(t *testing.T) {
	ctx := context.Background()
	st := boltstoretest.Open(t)
	e := openEngine(st)
	rep, err := redrive.Run(ctx, objstore.NewDir(destination), redrive.Config{Handler: e, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Objects != 2 || rep.Records != 11 || rep.Applied != 10 || rep.Failed != 1 || rep.Done != 1 {
		t.Fatalf("report %+v", rep)
	}
	var poisoned redrive.ObjectResult
	for _, r := range rep.Results {
		if !r.Done() {
			poisoned = r
		}
	}
	if poisoned.Key != kinesisKey || !strings.Contains(poisoned.Failed[0].Err.Error(), "LOST") || poisoned.Failed[0].SequenceNumber == "" {
		t.Errorf("poisoned object: %+v", poisoned)
	}

	// The same changes, through the projector's own processors, give the same aggregates.
	ref := boltstoretest.Open(t)
	re := openEngine(ref)
	for _, key := range []string{kinesisKey, streamsKey} {
		data, _ := os.ReadFile(filepath.Join(destination, filepath.FromSlash(key)))
		inv, _ := redrive.Parse(key, data)
		p := pipeline.NewStreamsProcessor(re, pipeline.Config{Logger: quiet(), Permanent: pipeline.SkipPermanent})
		if inv.Source == pipeline.SourceKinesis {
			p = pipeline.NewKinesisProcessor(re, pipeline.Config{Logger: quiet(), Permanent: pipeline.SkipPermanent})
		}
		if _, err := p.Invoke(ctx, inv.Payload); err != nil {
			t.Fatal(err)
		}
	}
	got, want := view(t, st), view(t, ref)
	if d := projections.Diff(got, want); len(d) > 0 || len(got.Aggregates) == 0 {
		t.Fatalf("redriven aggregates differ from the projector's: %v", d)
	}

	before := e.Stats()
	rep2, err := redrive.Run(ctx, objstore.NewDir(destination), redrive.Config{Handler: e, Logger: quiet()})
	if err != nil || rep2.Applied != 10 {
		t.Fatalf("second redrive: %+v, %v", rep2, err)
	}
	if after := e.Stats(); after.Items != before.Items || after.Stale == before.Stale {
		t.Errorf("second redrive wrote %d item states, skipped %d as applied; want none written", after.Items-before.Items, after.Stale-before.Stale)
	}
	if d := projections.Diff(view(t, st), want); len(d) > 0 {
		t.Errorf("after the second redrive: %v", d)
	}
}

// TestIntegrationRedriveS3 uploads the fixtures under a prefix of a bucket
// on the test server and redrives them from there.
func TestIntegrationRedriveS3(t *testing.T) {
	ctx := context.Background()
	client := awstest.S3(t)
	bucket := awstest.CreateBucket(ctx, t, client, "failures")
	dest := objstore.NewS3(client, bucket, "projector", objstore.S3Options{})
	src := objstore.NewDir(destination)
	err := src.List(ctx, "", func(o objstore.Object) error {
		data, err := objstore.ReadAll(ctx, src, o.Key)
		if err != nil {
			return err
		}
		return dest.Put(ctx, o.Key, data)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Something else in the bucket, outside the prefix.
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("other/readme.txt"), Body: strings.NewReader("hi")}); err != nil {
		t.Fatal(err)
	}
	st := boltstoretest.Open(t)
	rep, err := redrive.Run(ctx, dest, redrive.Config{Handler: openEngine(st), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Objects != 2 || rep.Applied != 10 || rep.Failed != 1 {
		t.Fatalf("report %+v", rep)
	}
	if rep.Results[0].Key != kinesisKey {
		t.Errorf("keys: %s", rep.Results[0].Key)
	}
}

// TestRedriveSkipsHiddenFiles: the hidden files of a local copy (a Finder's
// .DS_Store, a sync tool's folder) are not taken for invocation records.
func TestRedriveSkipsHiddenFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(destination)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".DS_Store", "aws/.sync/state", "aws/lambda/.keep"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("not a record"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := redrive.Run(ctx, objstore.NewDir(dir), redrive.Config{Handler: openEngine(boltstoretest.Open(t)), Logger: quiet()})
	if err != nil || rep.Objects != 2 || rep.Unreadable != 0 {
		t.Fatalf("report %+v, %v; want the 2 records and nothing unreadable", rep, err)
	}
}

// TestRedriveCloseError: an object whose body fails to close is reported
// with the error and not counted as done; the others are redriven.
func TestRedriveCloseError(t *testing.T) {
	errClose := errors.New("connection reset while closing")
	objs := objstoretest.Faulty(objstore.NewDir(destination), kinesisKey, objstoretest.Faults{Close: errClose})
	rep, err := redrive.Run(context.Background(), objs, redrive.Config{Handler: openEngine(boltstoretest.Open(t)), Logger: quiet()})
	if err != nil || rep.Objects != 2 || rep.Done != 1 {
		t.Fatalf("report %+v, %v; want 2 objects, 1 done", rep, err)
	}
	for _, r := range rep.Results {
		if failed := r.Key == kinesisKey; failed != errors.Is(r.Err, errClose) {
			t.Errorf("%s: %v", r.Key, r.Err)
		}
	}
}

// An object whose payload is not an event (Records is not an array, the
// JSON is cut short) counts as unreadable, with the reason.
func TestUnreadablePayload(t *testing.T) {
	dir := t.TempDir()
	info := map[string]any{"shardId": "shardId-000000000001", "startSequenceNumber": "1", "endSequenceNumber": "2", "batchSize": 2, "streamArn": "arn:aws:kinesis:eu-west-1:111122223333:stream/app-changes"}
	for name, payload := range map[string]string{
		"records-not-array": `{"Records":5}`,
		"cut-short":         `{"Records":[{"kinesis":`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), record(t, "KinesisBatchInfo", info, []byte(payload), "r-"+name, 3, "2026-11-30T10:15:42.123Z"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := redrive.Run(context.Background(), objstore.NewDir(dir), redrive.Config{Handler: openEngine(boltstoretest.Open(t)), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Objects != 2 || rep.Unreadable != 2 || rep.Done != 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range rep.Results {
		if !errors.Is(r.Err, pipeline.ErrNotEvent) {
			t.Errorf("%s: %v", r.Key, r.Err)
		}
	}
}

// Records no projection reads (the Integration) are counted as skipped,
// not applied.
func TestSkippedRecordsCounted(t *testing.T) {
	dir := t.TempDir()
	event, err := os.ReadFile(filepath.Join("..", "..", "..", "pipeline", "testdata", "streams", "mentions-kinesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]any{"shardId": "shardId-00000001796000000000-abcdef12", "startSequenceNumber": "4421587000000000017450442001", "endSequenceNumber": "4421587100000000017450442002", "batchSize": 2, "streamArn": "arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000"}
	if err := os.WriteFile(filepath.Join(dir, "obj"), record(t, "DDBStreamBatchInfo", info, event, "r-skip", 3, "2026-11-30T10:15:42.123Z"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := redrive.Run(context.Background(), objstore.NewDir(dir), redrive.Config{Handler: openEngine(boltstoretest.Open(t)), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 2 || rep.Applied != 1 || rep.Skipped != 1 || rep.Done != 1 {
		t.Fatalf("report %+v; want 1 applied and 1 skipped", rep)
	}
}

// An object is decompressed no further than an invocation record can be
// (one quoted Lambda event), and its payload may be no larger than a
// Lambda event.
func TestParseBounded(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	if _, err := zw.Write([]byte(`{"KinesisBatchInfo":{},"payload":"`)); err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 1<<20)
	for i := 0; i < 64; i++ {
		if _, err := zw.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := redrive.Parse("bomb.gz", bomb.Bytes()); err == nil || !strings.Contains(err.Error(), "redrive: bomb.gz: decompresses to more than 18939904 bytes: not an invocation record") {
		t.Errorf("bomb: %v", err)
	}
	big := `{"KinesisBatchInfo":{},"payload":{"Records":[],"pad":"` + strings.Repeat("x", 7<<20) + `"}}`
	if _, err := redrive.Parse("big", []byte(big)); err == nil || !strings.Contains(err.Error(), "not a Lambda event, which is at most Lambda's 6291456-byte payload") {
		t.Errorf("7 MB payload: %v", err)
	}
}

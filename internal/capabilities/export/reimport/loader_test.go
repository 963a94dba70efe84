package reimport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/infra/batchwrite"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
)

// The loaders against the AWS-protocol test server (moto), through the
// recording wire of wire_test.go: what moto cannot do (leave items
// unprocessed, throttle) is produced by rewriting its real responses or by
// answering a real DynamoDB error in front of it. Without a server these
// tests skip (awstest).

// repartitioned returns the fixture repartitioned into a fresh directory,
// opened as an output, and the lines it must hold.
func repartitioned(t *testing.T, opts repartition.Options) (*reimport.Output, map[string][]string) {
	t.Helper()
	src, _, fx := exportgen.CopyFixture(t)
	return repartitionedExport(t, exportgen.OpenFixture(t, src), opts), exportgen.ExpectedLines(fx.FullItems, nil)
}

// repartitionedExport returns e repartitioned into a fresh directory,
// opened as an output.
func repartitionedExport(t *testing.T, e *export.Export, opts repartition.Options) *reimport.Output {
	t.Helper()
	ctx := context.Background()
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	r, err := repartition.NewRepartitioner(e, nil, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 2, false); err != nil {
		t.Fatal(err)
	}
	o, err := reimport.OpenOutput(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestLoadIntegrationResumesFromCheckpoint throttles the ninth
// BatchWriteItem (through the SDK's retries) and every one after it, so the
// first load fails; the second resumes from the checkpoint and writes only
// the items the first did not.
func TestLoadIntegrationResumesFromCheckpoint(t *testing.T) {
	client, w := awstest.WireDynamoDB(t)
	table := newTable(t)
	out, lines := repartitioned(t, repartition.Options{MaxPartBytes: 16 << 10})
	want := wantLines(lines)
	w.Reset()
	w.On("BatchWriteItem", awstest.FailFrom(9, awstest.Throttled))
	opts := reimport.LoadOptions{Table: table, Workers: 1, Write: batchwrite.Options{CheckpointEvery: time.Millisecond}}
	s1, err := reimport.Load(t.Context(), client, out, opts)
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || !strings.Contains(err.Error(), "BatchWriteItem into "+table) {
		t.Fatalf("first load: %v, want the throttling error", err)
	}
	written := map[string]bool{}
	forwarded, injected := 0, 0
	for _, c := range w.Recorded("BatchWriteItem") {
		if c.Injected {
			injected++
			continue
		}
		forwarded++
		for _, it := range awstest.PutItems(t, c.Sent, table) {
			written[awstest.ItemKey(t, it)] = true
		}
	}
	if forwarded != 8 || injected == 0 || int64(len(written)) != s1.Written {
		t.Errorf("first load: %d requests reached the server with %d items, %d were throttled; it reports %d written", forwarded, len(written), injected, s1.Written)
	}
	if got := awstest.TableLines(t, table); len(got) != len(written) {
		t.Errorf("after the first load the table holds %d items, want %d", len(got), len(written))
	}

	w.Reset()
	opts.Write.Resume = true
	s2, err := reimport.Load(t.Context(), client, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	awstest.SameLines(t, awstest.TableLines(t, table), want)
	calls := w.Recorded("BatchWriteItem")
	again := 0
	for _, c := range calls {
		for _, it := range awstest.PutItems(t, c.Sent, table) {
			if written[awstest.ItemKey(t, it)] {
				t.Errorf("item %s, written by the first load, written again", awstest.ItemKey(t, it))
			}
			again++
		}
	}
	if int64(again) != s2.Written {
		t.Errorf("second load sent %d items, reported %d written", again, s2.Written)
	}
	if s1.Written == 0 || s2.Resumed != s1.Written {
		t.Errorf("first run wrote %d, second resumed past %d; want the same, more than 0", s1.Written, s2.Resumed)
	}
	if s2.Written+s2.Resumed != int64(len(want)) {
		t.Errorf("second run: %d written + %d resumed, want %d", s2.Written, s2.Resumed, len(want))
	}
	if len(calls) != int(s2.Requests) {
		t.Errorf("second run made %d calls, reported %d", len(calls), s2.Requests)
	}
	// A checkpoint of another load is refused, before writing anything.
	w.Reset()
	opts.IfNewer = true
	if _, err := reimport.Load(t.Context(), client, out, opts); err == nil || !strings.Contains(err.Error(), "another load") {
		t.Errorf("mismatched checkpoint: %v", err)
	}
	if calls := w.Recorded("BatchWriteItem", "PutItem"); len(calls) != 0 {
		t.Errorf("%d writes after refusing the checkpoint", len(calls))
	}
}

// TestBulkPutIntegrationRequest checks the StartBulkPutItems request that
// StartBulkPut sends for an output in S3 (moto's), and what it reports.
//
// moto has neither StartBulkPutItems nor DescribeBulkOperation: it answers
// both with an HTTP 500 (NotImplementedError in its log). So the request is
// checked as it went out on the wire, and the error as the command reports
// it. The bulk-put path has NOT run against a real service (nor has
// WaitBulkPut's polling of a running operation): only its request shape and
// its error reporting are tested here.
func TestBulkPutIntegrationRequest(t *testing.T) {
	client, w := awstest.WireDynamoDB(t)
	ctx := t.Context()
	client3 := awstest.S3(t)
	bucket := awstest.CreateBucket(ctx, t, client3, "export")
	out0, _ := repartitioned(t, repartition.Options{Compression: repartition.Zstd})
	// Copy the output into S3.
	s3out := objstore.NewS3(client3, bucket, "split", objstore.S3Options{})
	var keys []string
	if err := out0.Store().List(ctx, "", func(o objstore.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, err := objstore.ReadAll(ctx, out0.Store(), k)
		if err != nil {
			t.Fatal(err)
		}
		if err := s3out.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
	}
	out, err := reimport.OpenOutput(ctx, s3out)
	if err != nil {
		t.Fatal(err)
	}
	w.Reset()
	if _, err := reimport.StartBulkPut(ctx, client, out, reimport.BulkPutOptions{Table: "comments", Entity: "Comment", MaxWriteUnits: 100}); err == nil {
		t.Error("MaxWriteUnits 100 accepted; the API's minimum is 1,024")
	}
	if calls := w.Recorded(); len(calls) != 0 {
		t.Errorf("%d requests for a refused MaxWriteUnits", len(calls))
	}

	// The request, and moto's answer as the command reports it.
	start := func() (map[string]any, error) {
		t.Helper()
		w.Reset()
		_, err := reimport.StartBulkPut(ctx, client, out, reimport.BulkPutOptions{Table: "comments", Entity: "Comment", MaxWriteUnits: 2048})
		calls := w.Recorded()
		if len(calls) == 0 {
			t.Fatalf("no request went out (%v)", err)
		}
		for _, c := range calls {
			if c.Op != "StartBulkPutItems" || c.Injected || string(c.Req) != string(calls[0].Req) {
				t.Errorf("request %s (injected %v): %.300s; want the same StartBulkPutItems, to the server", c.Op, c.Injected, c.Req)
			}
		}
		var in map[string]any
		if err := json.Unmarshal(calls[0].Req, &in); err != nil {
			t.Fatal(err)
		}
		return in, err
	}
	in, err := start()
	if err == nil {
		t.Fatal("moto accepted StartBulkPutItems; it had no such operation: this test can now check the operation itself")
	}
	t.Logf("StartBulkPut against moto: %v", err)
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusInternalServerError ||
		!strings.Contains(err.Error(), "reimport: StartBulkPutItems of s3://"+bucket+"/split/entity=Comment/part- into comments: ") ||
		!strings.Contains(err.Error(), "StatusCode: 500") {
		t.Errorf("moto's unknown-operation error reported as %q; want the operation, source, table and the server's HTTP 500", err)
	}
	src, _ := in["InputS3Configuration"].(map[string]any)
	if src["S3Bucket"] != bucket || src["S3KeyPrefix"] != "split/entity=Comment/part-" || src["InputCompressionType"] != "ZSTD" || src["InputFormat"] != "DYNAMODB_JSON" {
		t.Errorf("InputS3Configuration %v", src)
	}
	tok, _ := in["ClientToken"].(string)
	if in["TableName"] != "comments" || in["MaxWriteRequestUnits"] != float64(2048) || len(tok) != 32 {
		t.Errorf("request %v", in)
	}
	rep, _ := in["OutputS3Configuration"].(map[string]any)
	if rep["S3Bucket"] != bucket || rep["S3KeyPrefix"] != "split/_bulkput/comments/" || rep["S3SseAlgorithm"] != "AES256" {
		t.Errorf("OutputS3Configuration %v", rep)
	}
	// The same request again carries the same token.
	if again, _ := start(); again["ClientToken"] != tok {
		t.Errorf("the client token is not derived from the request: %v, then %v", tok, again["ClientToken"])
	}

	// WaitBulkPut: moto has no DescribeBulkOperation either.
	w.Reset()
	const arn = "arn:aws:dynamodb:us-east-1:123456789012:table/comments/bulk-operation/01"
	var polls int
	if _, err := reimport.WaitBulkPut(ctx, client, arn, time.Millisecond, func(*types.BulkOperationDescription) { polls++ }); err == nil ||
		!strings.Contains(err.Error(), "reimport: DescribeBulkOperation "+arn+": ") || !strings.Contains(err.Error(), "StatusCode: 500") {
		t.Errorf("wait: %v", err)
	}
	if polls != 0 {
		t.Errorf("progress called %d times without a description", polls)
	}
	for _, c := range w.Recorded() {
		var in struct {
			BulkOperationARN string `json:"BulkOperationArn"`
		}
		if c.Op != "DescribeBulkOperation" || json.Unmarshal(c.Req, &in) != nil || in.BulkOperationARN != arn {
			t.Errorf("request %s %.200s", c.Op, c.Req)
		}
	}

	// A stray object under the prefix would be loaded too: refused.
	w.Reset()
	if err := s3out.Put(ctx, "entity=Comment/part-stray.json.zst", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := reimport.StartBulkPut(ctx, client, out, reimport.BulkPutOptions{Table: "comments", Entity: "Comment"}); err == nil || !strings.Contains(err.Error(), "does not list") {
		t.Errorf("stray object: %v", err)
	}
	// A part another writer replaced would be loaded as it is: refused.
	if err := s3out.Delete(ctx, "entity=Comment/part-stray.json.zst"); err != nil {
		t.Fatal(err)
	}
	m, _ := out.Entity("Comment")
	if err := s3out.Put(ctx, m.Parts[0].Key, []byte("another run's bytes")); err != nil {
		t.Fatal(err)
	}
	if _, err := reimport.StartBulkPut(ctx, client, out, reimport.BulkPutOptions{Table: "comments", Entity: "Comment"}); err == nil || !strings.Contains(err.Error(), m.Parts[0].Key) || !strings.Contains(err.Error(), "bytes, the manifest says") {
		t.Errorf("replaced part: %v", err)
	}
	// A local output cannot be bulk-put.
	if _, err := reimport.StartBulkPut(ctx, client, out0, reimport.BulkPutOptions{Table: "comments", Entity: "Comment"}); err == nil || !strings.Contains(err.Error(), "not in S3") {
		t.Errorf("local output: %v", err)
	}
	if calls := w.Recorded(); len(calls) != 0 {
		t.Errorf("%d requests for refused bulk puts", len(calls))
	}
}

// TestLoadIntegrationConcurrentRefused holds a load in its first
// BatchWriteItem and starts a second load of the same output into the same
// table: the second is refused, naming the first, before it writes
// anything; the first, released, loads everything.
func TestLoadIntegrationConcurrentRefused(t *testing.T) {
	client, w := awstest.WireDynamoDB(t)
	table := newTable(t)
	out, lines := repartitioned(t, repartition.Options{MaxPartBytes: 16 << 10})
	w.Reset()
	arrived, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	w.On("BatchWriteItem", func(req *http.Request, body []byte, forward awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
		if first.CompareAndSwap(false, true) {
			close(arrived)
			<-release
		}
		resp, rb, err := forward(body)
		return resp, rb, false, err
	})
	opts := reimport.LoadOptions{Table: table, Workers: 1} // one write in flight: the held one
	done := make(chan error, 1)
	go func() {
		_, err := reimport.Load(t.Context(), client, out, opts)
		done <- err
	}()
	<-arrived
	before := len(w.Recorded("BatchWriteItem", "PutItem"))
	second, err := reimport.OpenOutput(t.Context(), out.Store())
	if err != nil {
		t.Fatal(err)
	}
	_, err = reimport.Load(t.Context(), client, second, opts)
	if !errors.Is(err, objstore.ErrHeld) || !strings.Contains(err.Error(), table) {
		t.Errorf("second load: %v, want it refused as held by the first", err)
	}
	if after := len(w.Recorded("BatchWriteItem", "PutItem")); after != before {
		t.Errorf("the refused load wrote: %d writes before it, %d after", before, after)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	awstest.SameLines(t, awstest.TableLines(t, table), wantLines(lines))
}

// TestLoadIntegrationReleaseFailure: a load whose claim cannot be released
// writes every item and still fails, naming the claim it leaves held,
// which the next load on another machine would otherwise find held with
// no word why.
func TestLoadIntegrationReleaseFailure(t *testing.T) {
	client, _ := awstest.WireDynamoDB(t)
	table := newTable(t)
	out, lines := repartitioned(t, repartition.Options{})
	errStuck := errors.New("the service is unavailable")
	stuck, err := reimport.OpenOutput(t.Context(), objstoretest.Faulty(out.Store().(objstore.Store), ".run.json", objstoretest.Faults{Swap: errStuck}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = reimport.Load(t.Context(), client, stuck, reimport.LoadOptions{Table: table})
	if !errors.Is(err, errStuck) || !strings.Contains(err.Error(), reimport.CheckpointDir) {
		t.Errorf("load: %v, want the release's error, naming the claim", err)
	}
	awstest.SameLines(t, awstest.TableLines(t, table), wantLines(lines))
}

// TestLoadIntegrationTamperedPart changes the last line of a part of many
// batches (still a valid item, so only the part's size and MD5 can tell):
// the load fails naming the part and what its manifest says, and writes
// none of its items, the tampered one or any other.
func TestLoadIntegrationTamperedPart(t *testing.T) {
	ctx := t.Context()
	client, w := awstest.WireDynamoDB(t)
	table := newTable(t)
	e, _ := exportgen.Generated(t, 3, 3000, 2<<20, 1)
	out := repartitionedExport(t, e, repartition.Options{})
	m := out.Entities[0]
	for _, c := range out.Entities {
		if c.ItemCount > m.ItemCount {
			m = c
		}
	}
	if len(m.Parts) != 1 || m.ItemCount < 4*25 {
		t.Fatalf("%s: %d items in %d parts, want one part of several batches", m.Segment, m.ItemCount, len(m.Parts))
	}
	p := m.Parts[0]
	dir := out.Store().String()
	path := filepath.Join(dir, filepath.FromSlash(p.Key))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	lines := strings.SplitAfter(string(raw), "\n")
	last := len(lines) - 2 // the last line (the final element is empty)
	lines[last] = strings.Replace(lines[last], `"S":"`, `"S":"tampered `, 1)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(strings.Join(lines, ""))); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Reset()
	_, err = reimport.Load(ctx, client, out, reimport.LoadOptions{Table: table, Entities: []string{m.Entity}, Workers: 1})
	if !errors.Is(err, export.ErrCorrupt) || !strings.Contains(err.Error(), p.Key) || !strings.Contains(err.Error(), "the manifest says") {
		t.Fatalf("load of a tampered part: %v, want a corrupt-data error naming %s and what its manifest says", err, p.Key)
	}
	if n := len(w.Recorded("BatchWriteItem", "PutItem")); n != 0 {
		t.Errorf("%d writes before the tampered part was refused", n)
	}
	if got := awstest.TableLines(t, table); len(got) != 0 {
		t.Errorf("the table holds %d items of the tampered part", len(got))
	}
}

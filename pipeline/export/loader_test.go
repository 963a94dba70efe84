package export_test

// The loaders against the AWS-protocol test server (moto), through the
// recording wire of wire_test.go: what moto cannot do (leave items
// unprocessed, throttle) is produced by rewriting its real responses or by
// answering a real DynamoDB error in front of it. Without a server these
// tests skip (awstest).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline/export"
)

// repartitioned returns the fixture repartitioned into a fresh directory,
// opened as an output.
func repartitioned(t *testing.T, opts export.Options) (*export.Output, map[string][]string) {
	t.Helper()
	ctx := context.Background()
	src, _, fx := fixture(t)
	e := openFixture(t, src)
	out := export.NewDir(t.TempDir()).WithoutSync()
	r, err := export.NewRepartitioner(e, nil, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 2, false); err != nil {
		t.Fatal(err)
	}
	o, err := export.OpenOutput(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	return o, expectedLines(fx.FullItems, nil)
}

// TestLoadIntegrationRetriesUnprocessed loads three entities while six
// BatchWriteItem requests have half their items left unprocessed: those
// are retried, after a backoff each, until every item is in the table,
// byte for byte, and none was sent twice.
func TestLoadIntegrationRetriesUnprocessed(t *testing.T) {
	client, w := newWireDynamo(t)
	table := newTable(t)
	out, lines := repartitioned(t, export.Options{MaxPartBytes: 16 << 10})
	w.Reset()
	var held int
	w.On("BatchWriteItem", holdBack(t, 6, &held))
	var mu sync.Mutex
	var sleeps []time.Duration
	segs := []string{"entity=Order", "entity=Comment", "entity=Document"}
	stats, err := export.Load(t.Context(), client, out, export.LoadOptions{
		Table: table, Entities: []string{"Order", "Comment", "Document"}, Workers: 3,
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			sleeps = append(sleeps, d)
			mu.Unlock()
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := wantLines(lines, segs...)
	sameLines(t, tableLines(t, table), want)

	// On the wire: every item reached the server exactly once; the ones held
	// back were asked for again.
	calls := w.Recorded("BatchWriteItem")
	requested, sent := 0, map[string]int{}
	for _, c := range calls {
		if c.Injected || c.Status != http.StatusOK {
			t.Fatalf("BatchWriteItem answered %d (injected %v): %s", c.Status, c.Injected, c.Resp)
		}
		requested += len(putItems(t, c.Req, table))
		for _, it := range putItems(t, c.Sent, table) {
			sent[itemKey(t, it)]++
		}
	}
	for k, n := range sent {
		if n != 1 {
			t.Errorf("item %s reached the server %d times", k, n)
		}
	}
	if len(sent) != len(want) || requested != len(want)+held {
		t.Errorf("%d items reached the server in %d requested; want %d, and %d more asked for again", len(sent), requested, len(want), held)
	}
	if held == 0 || stats.Written != int64(len(want)) || stats.Unprocessed != int64(held) || len(sleeps) != 6 || stats.Requests != int64(len(calls)) {
		t.Errorf("stats %+v, %d backoffs, %d requests on the wire; want %d written, %d unprocessed, 6 backoffs", stats, len(sleeps), len(calls), len(want), held)
	}
	for _, d := range sleeps {
		if d < 0 || d >= 10*time.Second {
			t.Errorf("backoff %v outside [0, 10s)", d)
		}
	}
}

// TestLoadIntegrationGivesUpAfterMaxAttempts answers every BatchWriteItem
// with all its items unprocessed, without reaching the server.
func TestLoadIntegrationGivesUpAfterMaxAttempts(t *testing.T) {
	client, w := newWireDynamo(t)
	table := newTable(t)
	out, _ := repartitioned(t, export.Options{})
	w.Reset()
	w.On("BatchWriteItem", processNothing)
	_, err := export.Load(t.Context(), client, out, export.LoadOptions{
		Table: table, Entities: []string{"Order"}, MaxAttempts: 3, Workers: 1,
		Sleep: func(context.Context, time.Duration) error { return nil },
	})
	if err == nil || !strings.Contains(err.Error(), "still unprocessed after 3 attempts") {
		t.Errorf("err %v", err)
	}
	calls := w.Recorded("BatchWriteItem")
	if len(calls) != 3 {
		t.Fatalf("%d BatchWriteItem requests, want 3", len(calls))
	}
	first := canonItems(t, calls[0].Req, table)
	for _, c := range calls {
		if got := canonItems(t, c.Req, table); !c.Injected || strings.Join(got, "\n") != strings.Join(first, "\n") {
			t.Errorf("attempt reached the server (%v) or asked for other items than the first: %.200s", !c.Injected, c.Req)
		}
	}
	if n := len(putItems(t, calls[0].Req, table)); n == 0 || n > 25 {
		t.Errorf("a batch of %d items", n)
	}
	if got := tableLines(t, table); len(got) != 0 {
		t.Errorf("the table holds %d items, want none", len(got))
	}
}

// TestLoadIntegrationRateLimit loads everything at 200 write units a
// second on a clock that moves only when the loader sleeps, and measures
// the units of the requests on the wire against the time each was sent.
func TestLoadIntegrationRateLimit(t *testing.T) {
	client, w := newWireDynamo(t)
	table := newTable(t)
	out, lines := repartitioned(t, export.Options{})
	w.Reset()
	var mu sync.Mutex
	var slept time.Duration
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clock := start
	type request struct {
		at   time.Time
		body []byte
	}
	var requests []request
	w.On("BatchWriteItem", func(_ *http.Request, body []byte, forward awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
		mu.Lock()
		requests = append(requests, request{clock, body})
		mu.Unlock()
		resp, rb, err := forward(body)
		return resp, rb, false, err
	})
	const rate = 200
	stats, err := export.Load(t.Context(), client, out, export.LoadOptions{
		Table: table, MaxWriteUnits: rate, Workers: 1,
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			slept += d
			clock = clock.Add(d)
			return nil
		},
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return clock
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := wantLines(lines)
	if stats.Written != int64(len(want)) {
		t.Errorf("wrote %d, want %d", stats.Written, len(want))
	}
	sameLines(t, tableLines(t, table), want)

	// The units on the wire, request by request.
	units := make([]float64, len(requests))
	var total float64
	for i, r := range requests {
		for _, it := range putItems(t, r.body, table) {
			units[i] += writeUnits(t, it)
		}
		total += units[i]
	}
	if total != stats.Units {
		t.Errorf("the requests carry %.0f write units, the loader counted %.0f", total, stats.Units)
	}
	if total < 5*rate {
		t.Fatalf("only %.0f write units: too few to measure a rate of %d/s", total, rate)
	}
	// A token bucket of one second's worth: between any two requests no
	// more units go out than the time between them earns, plus the burst.
	const slack = 0.5
	for i := range requests {
		var sum float64
		for j := i + 1; j < len(requests); j++ {
			sum += units[j]
			if earned := rate * requests[j].at.Sub(requests[i].at).Seconds(); sum > earned+rate+slack {
				t.Fatalf("requests %d..%d carry %.0f units in %v, over %d/s with a burst of %d", i+1, j, sum, requests[j].at.Sub(requests[i].at), rate, rate)
			}
		}
	}
	// From the start, and no slower than the rate either: time passes only
	// in sleeps, so the last request went out as soon as its units were
	// earned.
	var cum float64
	for i, r := range requests {
		cum += units[i]
		if earned := rate * r.at.Sub(start).Seconds(); cum > earned+rate+slack {
			t.Fatalf("by request %d, %.0f units went out in %v, over %d/s with a burst of %d", i, cum, r.at.Sub(start), rate, rate)
		}
	}
	if last := requests[len(requests)-1].at.Sub(start); rate*last.Seconds() > total-rate+slack {
		t.Errorf("%.0f units took %v at %d/s: slower than the limit", total, last, rate)
	}
	// The sleeps add up to the time the units take at the rate, less the
	// initial burst of one second's worth.
	wantSlept := time.Duration((stats.Units - rate) / rate * float64(time.Second))
	if slept < wantSlept-time.Second || slept > wantSlept+time.Second {
		t.Errorf("slept %v for %.0f units at %d/s; want about %v", slept, stats.Units, rate, wantSlept)
	}
}

// TestLoadIntegrationResumesFromCheckpoint throttles the ninth
// BatchWriteItem (through the SDK's retries) and every one after it, so the
// first load fails; the second resumes from the checkpoint and writes only
// the items the first did not.
func TestLoadIntegrationResumesFromCheckpoint(t *testing.T) {
	client, w := newWireDynamo(t)
	table := newTable(t)
	out, lines := repartitioned(t, export.Options{MaxPartBytes: 16 << 10})
	want := wantLines(lines)
	w.Reset()
	var mu sync.Mutex
	n := 0
	w.On("BatchWriteItem", func(req *http.Request, body []byte, forward awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
		mu.Lock()
		n++
		fail := n >= 9
		mu.Unlock()
		if fail {
			return awstest.Fail(throttled)(req, body, forward)
		}
		resp, rb, err := forward(body)
		return resp, rb, false, err
	})
	opts := export.LoadOptions{Table: table, Workers: 1, CheckpointEvery: time.Millisecond}
	s1, err := export.Load(t.Context(), client, out, opts)
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
		for _, it := range putItems(t, c.Sent, table) {
			written[itemKey(t, it)] = true
		}
	}
	if forwarded != 8 || injected == 0 || int64(len(written)) != s1.Written {
		t.Errorf("first load: %d requests reached the server with %d items, %d were throttled; it reports %d written", forwarded, len(written), injected, s1.Written)
	}
	if got := tableLines(t, table); len(got) != len(written) {
		t.Errorf("after the first load the table holds %d items, want %d", len(got), len(written))
	}

	w.Reset()
	opts.Resume = true
	s2, err := export.Load(t.Context(), client, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, tableLines(t, table), want)
	calls := w.Recorded("BatchWriteItem")
	again := 0
	for _, c := range calls {
		for _, it := range putItems(t, c.Sent, table) {
			if written[itemKey(t, it)] {
				t.Errorf("item %s, written by the first load, written again", itemKey(t, it))
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
	if _, err := export.Load(t.Context(), client, out, opts); err == nil || !strings.Contains(err.Error(), "another load") {
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
	client, w := newWireDynamo(t)
	client3, bucket := newBucket(t)
	ctx := t.Context()
	out0, _ := repartitioned(t, export.Options{Compression: export.Zstd})
	// Copy the output into S3.
	s3out := export.NewS3(client3, bucket, "split", export.S3Options{})
	var keys []string
	if err := out0.Store().List(ctx, "", func(o export.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rc, err := out0.Store().Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := s3out.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
	}
	out, err := export.OpenOutput(ctx, s3out)
	if err != nil {
		t.Fatal(err)
	}
	w.Reset()
	if _, err := export.StartBulkPut(ctx, client, out, export.BulkPutOptions{Table: "comments", Entity: "Comment", MaxWriteUnits: 100}); err == nil {
		t.Error("MaxWriteUnits 100 accepted; the API's minimum is 1,024")
	}
	if calls := w.Recorded(); len(calls) != 0 {
		t.Errorf("%d requests for a refused MaxWriteUnits", len(calls))
	}

	// The request, and moto's answer as the command reports it.
	start := func() (map[string]any, error) {
		t.Helper()
		w.Reset()
		_, err := export.StartBulkPut(ctx, client, out, export.BulkPutOptions{Table: "comments", Entity: "Comment", MaxWriteUnits: 2048})
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
		!strings.Contains(err.Error(), "export: StartBulkPutItems of s3://"+bucket+"/split/entity=Comment/part- into comments: ") ||
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
	if _, err := export.WaitBulkPut(ctx, client, arn, time.Millisecond, func(*types.BulkOperationDescription) { polls++ }); err == nil ||
		!strings.Contains(err.Error(), "export: DescribeBulkOperation "+arn+": ") || !strings.Contains(err.Error(), "StatusCode: 500") {
		t.Errorf("wait: %v", err)
	}
	if polls != 0 {
		t.Errorf("progress called %d times without a description", polls)
	}
	for _, c := range w.Recorded() {
		var in struct{ BulkOperationArn string }
		if c.Op != "DescribeBulkOperation" || json.Unmarshal(c.Req, &in) != nil || in.BulkOperationArn != arn {
			t.Errorf("request %s %.200s", c.Op, c.Req)
		}
	}

	// A stray object under the prefix would be loaded too: refused.
	w.Reset()
	if err := s3out.Put(ctx, "entity=Comment/part-stray.json.zst", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := export.StartBulkPut(ctx, client, out, export.BulkPutOptions{Table: "comments", Entity: "Comment"}); err == nil || !strings.Contains(err.Error(), "does not list") {
		t.Errorf("stray object: %v", err)
	}
	// A local output cannot be bulk-put.
	if _, err := export.StartBulkPut(ctx, client, out0, export.BulkPutOptions{Table: "comments", Entity: "Comment"}); err == nil || !strings.Contains(err.Error(), "not in S3") {
		t.Errorf("local output: %v", err)
	}
	if calls := w.Recorded(); len(calls) != 0 {
		t.Errorf("%d requests for refused bulk puts", len(calls))
	}
}

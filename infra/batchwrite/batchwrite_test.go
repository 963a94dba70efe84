package batchwrite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/batchwrite"
	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

// The writer against the AWS-protocol test server (moto), through the
// recording wire (awstest.Wire): what moto cannot do (leave items
// unprocessed, throttle) is produced by rewriting its real responses or by
// answering a real DynamoDB error in front of it. Nothing below the HTTP
// layer is faked. Without a server these tests skip (awstest).

// items returns the items of a simulated table, sorted by key, and their
// export lines, sorted.
func items(t *testing.T, seed uint64, changes int) ([]pipeline.Item, []string) {
	t.Helper()
	h, err := sim.Workload{Seed: seed, Changes: changes}.Run()
	if err != nil {
		t.Fatal(err)
	}
	its := h.Table.Items()
	sort.Slice(its, func(i, j int) bool { return key(its[i]) < key(its[j]) })
	var lines []string
	for _, it := range its {
		lines = append(lines, `{"Item":`+string(pipeline.AppendItem(nil, it))+`}`)
	}
	sort.Strings(lines)
	return its, lines
}

func key(it pipeline.Item) string {
	return pipeline.ItemKey(pipeline.Item{"PK": it["PK"], "SK": it["SK"]})
}

// wireTable returns a client for the test server through a recording wire,
// the wire, and a fresh PK/SK table.
func wireTable(t *testing.T) (*dynamodb.Client, *awstest.Wire, string) {
	t.Helper()
	client, wire := awstest.WireDynamoDB(t)
	name := awstest.UniqueName(t, "bw")
	awstest.CreateTable(t.Context(), t, awstest.DynamoDB(t), name, false)
	return client, wire, name
}

// write loads its into table through w, source by source of per items.
func write(ctx context.Context, w *batchwrite.Writer, its []pipeline.Item, per int) error {
	for s := 0; s*per < len(its); s++ {
		src := fmt.Sprintf("source-%02d", s)
		b := w.Source(src)
		from := w.Position(src)
		for i, it := range its[s*per : min((s+1)*per, len(its))] {
			if pos := int64(i + 1); pos > from {
				if err := b.Add(ctx, key(it), it, pos); err != nil {
					return err
				}
			} else if pos == from {
				w.Resumed(from)
			}
		}
		if err := b.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

func noSleep(context.Context, time.Duration) error { return nil }

// TestIntegrationRetriesUnprocessed writes while six BatchWriteItem
// requests have half their items left unprocessed: those are retried, after
// a backoff each, until every item is in the table, byte for byte, and none
// was sent twice.
func TestIntegrationRetriesUnprocessed(t *testing.T) {
	ctx := t.Context()
	client, wire, table := wireTable(t)
	its, want := items(t, 1, 600)
	wire.Reset()
	var held int
	wire.On("BatchWriteItem", awstest.HoldBack(t, 6, &held))
	var mu sync.Mutex
	var sleeps []time.Duration
	w, err := batchwrite.New(ctx, client, table, batchwrite.Options{Sleep: func(_ context.Context, d time.Duration) error {
		mu.Lock()
		sleeps = append(sleeps, d)
		mu.Unlock()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := write(ctx, w, its, 100); err != nil {
		t.Fatal(err)
	}
	stats, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	awstest.SameLines(t, awstest.TableLines(t, table), want)
	calls := wire.Recorded("BatchWriteItem")
	requested, sent := 0, map[string]int{}
	for _, c := range calls {
		if c.Injected || c.Status != http.StatusOK {
			t.Fatalf("BatchWriteItem answered %d (injected %v): %s", c.Status, c.Injected, c.Resp)
		}
		n := len(awstest.PutItems(t, c.Req, table))
		if n == 0 || n > batchwrite.MaxBatch {
			t.Errorf("a request of %d items", n)
		}
		requested += n
		for _, it := range awstest.PutItems(t, c.Sent, table) {
			sent[awstest.ItemKey(t, it)]++
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

// TestIntegrationGivesUpAfterMaxAttempts answers every BatchWriteItem with
// all its items unprocessed, without reaching the server.
func TestIntegrationGivesUpAfterMaxAttempts(t *testing.T) {
	ctx := t.Context()
	client, wire, table := wireTable(t)
	its, _ := items(t, 2, 200)
	wire.Reset()
	wire.On("BatchWriteItem", awstest.ProcessNothing)
	w, err := batchwrite.New(ctx, client, table, batchwrite.Options{MaxAttempts: 3, Sleep: noSleep})
	if err != nil {
		t.Fatal(err)
	}
	err = write(ctx, w, its, 100)
	if err == nil || !strings.Contains(err.Error(), "still unprocessed after 3 attempts") || !strings.Contains(err.Error(), "source-00") {
		t.Errorf("err %v, want the source and the attempts", err)
	}
	calls := wire.Recorded("BatchWriteItem")
	if len(calls) != 3 {
		t.Fatalf("%d BatchWriteItem requests, want 3", len(calls))
	}
	first := awstest.CanonItems(t, calls[0].Req, table)
	for _, c := range calls {
		if got := awstest.CanonItems(t, c.Req, table); !c.Injected || strings.Join(got, "\n") != strings.Join(first, "\n") {
			t.Errorf("attempt reached the server (%v) or asked for other items than the first: %.200s", !c.Injected, c.Req)
		}
	}
	if got := awstest.TableLines(t, table); len(got) != 0 {
		t.Errorf("the table holds %d items, want none", len(got))
	}
}

// TestIntegrationRepeatedKey: an item added twice in a row for one key goes
// in two requests, in order, so the table holds the later one.
func TestIntegrationRepeatedKey(t *testing.T) {
	ctx := t.Context()
	client, wire, table := wireTable(t)
	w, err := batchwrite.New(ctx, client, table, batchwrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wire.Reset()
	b := w.Source("s")
	for i, v := range []string{"first", "other", "second"} {
		it := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "K"}, "SK": &types.AttributeValueMemberS{Value: "1"}, "v": &types.AttributeValueMemberS{Value: v}}
		if v == "other" {
			it["SK"] = &types.AttributeValueMemberS{Value: "2"}
		}
		if err := b.Add(ctx, key(it), it, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := wire.Recorded("BatchWriteItem"); len(calls) != 2 || len(awstest.PutItems(t, calls[0].Req, table)) != 2 {
		t.Fatalf("%d requests, want 2: the batch sent before the repeated key", len(calls))
	}
	got := awstest.TableLines(t, table)
	if len(got) != 2 || !strings.Contains(got[0], `"second"`) {
		t.Errorf("table %q, want K/1 as second", got)
	}
}

// TestIntegrationCondition: with a Condition each item is one conditional
// PutItem; the items whose condition fails are counted skipped, and their
// units are counted all the same.
func TestIntegrationCondition(t *testing.T) {
	ctx := t.Context()
	client, wire, table := wireTable(t)
	its, want := items(t, 3, 300)
	absent := func(pipeline.Item) batchwrite.Condition {
		return batchwrite.Condition{Expression: "attribute_not_exists(#k)", Names: map[string]string{"#k": "PK"}}
	}
	for run := range 2 {
		wire.Reset()
		w, err := batchwrite.New(ctx, client, table, batchwrite.Options{Condition: absent})
		if err != nil {
			t.Fatal(err)
		}
		if err := write(ctx, w, its, 100); err != nil {
			t.Fatal(err)
		}
		s, _ := w.Close(ctx)
		puts := wire.Recorded("PutItem")
		if len(wire.Recorded("BatchWriteItem")) != 0 || len(puts) != len(its) || s.Requests != int64(len(its)) || s.Units < float64(len(its)) {
			t.Errorf("run %d: %d PutItem, stats %+v; want one PutItem per item and no BatchWriteItem", run, len(puts), s)
		}
		if run == 0 && (s.Written != int64(len(its)) || s.Skipped != 0) || run == 1 && (s.Written != 0 || s.Skipped != int64(len(its))) {
			t.Errorf("run %d: %d written, %d skipped", run, s.Written, s.Skipped)
		}
	}
	awstest.SameLines(t, awstest.TableLines(t, table), want)
}

// TestIntegrationCheckpoint throttles every BatchWriteItem from the fifth
// on, so the first run fails; a rerun resumes from the checkpoint and
// writes only what the first did not. Of two runs of the load at once, the
// one whose checkpoint the other saved over stops; a checkpoint of another
// load is refused.
func TestIntegrationCheckpoint(t *testing.T) {
	ctx := t.Context()
	client, wire, table := wireTable(t)
	its, want := items(t, 4, 600)
	cps := checkpoint.NewDir(t.TempDir())
	job := checkpoint.JobIDFor("test", table)
	opts := batchwrite.Options{Checkpoints: cps, Job: job, About: map[string]string{"table": table}, CheckpointEvery: time.Millisecond, Sleep: noSleep}
	wire.Reset()
	wire.On("BatchWriteItem", awstest.FailFrom(5, awstest.Throttled))
	w1, err := batchwrite.New(ctx, client, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	err = write(ctx, w1, its, 50)
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || !strings.Contains(err.Error(), "BatchWriteItem into "+table) {
		t.Fatalf("first run: %v, want the throttling error", err)
	}
	s1, err := w1.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for _, c := range wire.Recorded("BatchWriteItem") {
		if !c.Injected {
			for _, it := range awstest.PutItems(t, c.Sent, table) {
				written[awstest.ItemKey(t, it)] = true
			}
		}
	}
	if s1.Written != 4*batchwrite.MaxBatch || int64(len(written)) != s1.Written {
		t.Errorf("first run: %d items reached the server, %d reported written; want 4 batches", len(written), s1.Written)
	}
	cp, err := cps.Load(ctx, job)
	if err != nil || cp.Sources["source-00"] != 50 || cp.Sources["source-01"] != 50 || len(cp.Sources) != 2 {
		t.Fatalf("checkpoint %+v, %v; want 50 items of source-00 and of source-01", cp, err)
	}

	// Of another load: refused, writing nothing.
	wire.Reset()
	other := opts
	other.Resume, other.About = true, map[string]string{"table": "elsewhere"}
	if _, err := batchwrite.New(ctx, client, table, other); err == nil || !strings.Contains(err.Error(), "another load") {
		t.Errorf("a checkpoint of another load: %v", err)
	}

	// Two reruns at once: the later one saves over the earlier's
	// checkpoint, which stops at its next save. The earlier one saves only
	// when it starts and when it closes: a save of its ticker between the
	// later one's load and save would refuse the later one instead, which
	// is right too, but not this scenario.
	wire.On("BatchWriteItem", nil)
	opts.Resume = true
	earlyOpts := opts
	earlyOpts.CheckpointEvery = time.Hour
	early, err := batchwrite.New(ctx, client, table, earlyOpts)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := batchwrite.New(ctx, client, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := early.Close(ctx); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("the run whose checkpoint was saved over: %v, want ErrConflict", err)
	}
	if err := write(ctx, w2, its, 50); err != nil {
		t.Fatal(err)
	}
	s2, err := w2.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	awstest.SameLines(t, awstest.TableLines(t, table), want)
	for _, c := range wire.Recorded("BatchWriteItem") {
		for _, it := range awstest.PutItems(t, c.Sent, table) {
			if written[awstest.ItemKey(t, it)] {
				t.Errorf("item %s, written by the first run, written again", awstest.ItemKey(t, it))
			}
		}
	}
	if s2.Resumed != s1.Written || s2.Written+s2.Resumed != int64(len(want)) {
		t.Errorf("rerun: %d written, %d resumed; want %d resumed and %d in all", s2.Written, s2.Resumed, s1.Written, len(want))
	}
}

// TestIntegrationRateLimit writes at 200 write units a second on a clock
// that moves only when the writer sleeps, and measures the units of the
// requests on the wire against the time each was sent.
func TestIntegrationRateLimit(t *testing.T) {
	ctx := t.Context()
	client, wire, table := wireTable(t)
	its, want := items(t, 5, 6000)
	wire.Reset()
	var mu sync.Mutex
	var slept time.Duration
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clock := start
	type request struct {
		at   time.Time
		body []byte
	}
	var requests []request
	wire.On("BatchWriteItem", func(_ *http.Request, body []byte, forward awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
		mu.Lock()
		requests = append(requests, request{clock, body})
		mu.Unlock()
		resp, rb, err := forward(body)
		return resp, rb, false, err
	})
	const rate = 200
	w, err := batchwrite.New(ctx, client, table, batchwrite.Options{
		MaxWriteUnits: rate,
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
	if err := write(ctx, w, its, 1000); err != nil {
		t.Fatal(err)
	}
	stats, _ := w.Close(ctx)
	if stats.Written != int64(len(want)) {
		t.Errorf("wrote %d, want %d", stats.Written, len(want))
	}
	awstest.SameLines(t, awstest.TableLines(t, table), want)

	units := make([]float64, len(requests))
	var total float64
	for i, r := range requests {
		for _, it := range awstest.PutItems(t, r.body, table) {
			units[i] += writeUnits(t, it)
		}
		total += units[i]
	}
	if total != stats.Units {
		t.Errorf("the requests carry %.0f write units, the writer counted %.0f", total, stats.Units)
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
	wantSlept := time.Duration((stats.Units - rate) / rate * float64(time.Second))
	if slept < wantSlept-time.Second || slept > wantSlept+time.Second {
		t.Errorf("slept %v for %.0f units at %d/s; want about %v", slept, stats.Units, rate, wantSlept)
	}
}

// itemSize is an item's size as DynamoDB counts it for write units:
// attribute names plus values (strings and binaries by length, numbers by
// about one byte per two significant digits plus one, 1 for a boolean or
// null, 3 plus one per element for lists and maps), from its DynamoDB JSON.
func itemSize(t testing.TB, item json.RawMessage) int {
	t.Helper()
	var m map[string]map[string]json.RawMessage
	if err := json.Unmarshal(item, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, v := range m {
		n += len(name) + valueSize(t, v)
	}
	return n
}

func valueSize(t testing.TB, v map[string]json.RawMessage) int {
	t.Helper()
	str := func(raw json.RawMessage) string {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	strs := func(raw json.RawMessage) []string {
		var s []string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	num := func(s string) int { return (len(strings.TrimLeft(s, "-0."))+1)/2 + 1 }
	bin := func(s string) int { return len(s)/4*3 - strings.Count(s[max(len(s)-2, 0):], "=") }
	for typ, raw := range v {
		switch typ {
		case "S":
			return len(str(raw))
		case "N":
			return num(str(raw))
		case "B":
			return bin(str(raw))
		case "BOOL", "NULL":
			return 1
		case "SS", "NS", "BS":
			n := 0
			for _, s := range strs(raw) {
				switch typ {
				case "SS":
					n += len(s)
				case "NS":
					n += num(s)
				default:
					n += bin(s)
				}
			}
			return n
		case "M":
			var m map[string]map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			n := 3
			for k, e := range m {
				n += len(k) + valueSize(t, e) + 1
			}
			return n
		case "L":
			var l []map[string]json.RawMessage
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			n := 3
			for _, e := range l {
				n += valueSize(t, e) + 1
			}
			return n
		}
	}
	t.Fatalf("attribute value %v of no known type", v)
	return 0
}

// writeUnits is the write units of putting item: one per started KB.
func writeUnits(t testing.TB, item json.RawMessage) float64 {
	return float64((itemSize(t, item) + 1023) / 1024)
}

package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tributary/tributary/pipeline"
)

// streamsEvent builds a Lambda DynamoDB Streams event of n Order inserts with
// sequence numbers 1000, 1001, ...; bad lists indexes whose total is not a number.
func streamsEvent(n int, bad ...int) []byte {
	var b strings.Builder
	b.WriteString(`{"Records":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		total := fmt.Sprintf("%d.50", i)
		for _, j := range bad {
			if i == j {
				total = "12x"
			}
		}
		fmt.Fprintf(&b, `{"eventID":"e%d","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1",
"eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000",
"dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":{"PK":{"S":"USER#u%d"},"SK":{"S":"ORDER#2026-11-30#o%d"}},
"NewImage":{"PK":{"S":"USER#u%d"},"SK":{"S":"ORDER#2026-11-30#o%d"},"EntityType":{"S":"Order"},"status":{"S":"PENDING"},"total":{"N":"%s"},"version":{"N":"1"}},
"SequenceNumber":"%d","SizeBytes":120,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`, i, i, i, i, i, total, 1000+i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// recorder is a batch handler that applies changes in order, recording
// what it applied, and stops at a chosen sequence number with an error (a
// *BatchError naming it) or a panic.
type recorder struct {
	seen    []string
	failAt  map[string]error
	panicAt string
}

func (r *recorder) HandleBatch(_ context.Context, changes []pipeline.Change) error {
	for i, c := range changes {
		seq := c.Position.SequenceNumber
		if seq == r.panicAt {
			panic("handler bug on " + seq)
		}
		if err := r.failAt[seq]; err != nil {
			return &pipeline.BatchError{Index: i, Err: err}
		}
		r.seen = append(r.seen, seq)
	}
	return nil
}

func quietConfig() pipeline.Config {
	return pipeline.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestBatchSemantics(t *testing.T) {
	transient := errors.New("throttled")
	tests := []struct {
		name     string
		event    []byte
		rec      *recorder
		policy   pipeline.PermanentPolicy
		wantSeen []string
		wantResp string
	}{
		{
			name:     "all succeed",
			event:    streamsEvent(3),
			rec:      &recorder{},
			wantSeen: []string{"1000", "1001", "1002"},
			wantResp: `{"batchItemFailures":[]}`,
		},
		{
			name:     "failure in the middle stops there",
			event:    streamsEvent(5),
			rec:      &recorder{failAt: map[string]error{"1002": transient}},
			wantSeen: []string{"1000", "1001"},
			wantResp: `{"batchItemFailures":[{"itemIdentifier":"1002"}]}`,
		},
		{
			// A panic claims nothing: the batch's first record is reported
			// (the engine turns a projection's panic into its record's
			// permanent failure itself).
			name:     "panic is contained and fails the batch",
			event:    streamsEvent(4),
			rec:      &recorder{panicAt: "1001"},
			wantSeen: []string{"1000"},
			wantResp: `{"batchItemFailures":[{"itemIdentifier":"1000"}]}`,
		},
		{
			name:     "undecodable record stops the batch before it",
			event:    streamsEvent(4, 2),
			rec:      &recorder{},
			wantSeen: []string{"1000", "1001"},
			wantResp: `{"batchItemFailures":[{"itemIdentifier":"1002"}]}`,
		},
		{
			name:     "handler failure before an undecodable record wins",
			event:    streamsEvent(4, 3),
			rec:      &recorder{failAt: map[string]error{"1001": transient}},
			wantSeen: []string{"1000"},
			wantResp: `{"batchItemFailures":[{"itemIdentifier":"1001"}]}`,
		},
		{
			name:     "skip policy skips undecodable and permanent records",
			event:    streamsEvent(5, 1),
			rec:      &recorder{failAt: map[string]error{"1003": pipeline.Permanent(errors.New("bad item"))}},
			policy:   pipeline.SkipPermanent,
			wantSeen: []string{"1000", "1002", "1004"},
			wantResp: `{"batchItemFailures":[]}`,
		},
		{
			name:     "skip policy still stops at a transient failure",
			event:    streamsEvent(4),
			rec:      &recorder{failAt: map[string]error{"1002": transient}},
			policy:   pipeline.SkipPermanent,
			wantSeen: []string{"1000", "1001"},
			wantResp: `{"batchItemFailures":[{"itemIdentifier":"1002"}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := quietConfig()
			cfg.Permanent = tt.policy
			p := pipeline.NewStreamsProcessor(tt.rec, cfg)
			// Through aws-lambda-go's own invoke path, as the runtime calls it.
			out, err := lambda.NewHandler(p).Invoke(context.Background(), tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.wantResp {
				t.Errorf("response %s, want %s", out, tt.wantResp)
			}
			if fmt.Sprint(tt.rec.seen) != fmt.Sprint(tt.wantSeen) {
				t.Errorf("handled %v, want %v", tt.rec.seen, tt.wantSeen)
			}
		})
	}
}

func TestBatchErrorIndexFromBatchHandler(t *testing.T) {
	h := pipeline.BatchHandlerFunc(func(_ context.Context, cs []pipeline.Change) error {
		return &pipeline.BatchError{Index: 2, Err: errors.New("conflict")}
	})
	p := pipeline.NewStreamsProcessor(h, quietConfig())
	res, err := p.Process(context.Background(), streamsEvent(5))
	if err != nil {
		t.Fatal(err)
	}
	if res.Report != "1002" || res.Applied != 2 || len(res.Failed) != 1 {
		t.Errorf("result %+v", res)
	}
	// A plain error claims nothing: the first record is reported.
	p = pipeline.NewStreamsProcessor(pipeline.BatchHandlerFunc(func(context.Context, []pipeline.Change) error { return errors.New("down") }), quietConfig())
	if res, _ := p.Process(context.Background(), streamsEvent(3)); res.Report != "1000" {
		t.Errorf("plain error reported %q, want 1000", res.Report)
	}
}

func TestWholePayloadErrorFailsInvocation(t *testing.T) {
	p := pipeline.NewStreamsProcessor(&recorder{}, quietConfig())
	if _, err := p.Invoke(context.Background(), []byte(`{"Records":[{"eventID":`)); err == nil {
		t.Fatal("truncated payload: want an invocation error so Lambda retries the batch")
	}
}

func TestKinesisResponse(t *testing.T) {
	rec := &recorder{}
	changes, err := pipeline.DecodeKinesisEvent(read(t, "kinesis/event-ms.json"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec.failAt = map[string]error{changes[1].Position.SequenceNumber: errors.New("throttled")}
	p := pipeline.NewKinesisProcessor(rec, quietConfig())
	out, err := p.Invoke(context.Background(), read(t, "kinesis/event-ms.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"batchItemFailures":[{"itemIdentifier":"` + changes[1].Position.SequenceNumber + `"}]}`
	if string(out) != want {
		t.Errorf("response %s, want %s", out, want)
	}
}

func TestMetricsAndLogs(t *testing.T) {
	var logs, metrics bytes.Buffer
	cfg := pipeline.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: &metrics, Function: "projector", EntityTypes: []string{"Order"}}
	p := pipeline.NewStreamsProcessor(&recorder{failAt: map[string]error{"1001": errors.New("boom")}}, cfg)
	if _, err := p.Process(context.Background(), streamsEvent(3)); err != nil {
		t.Fatal(err)
	}
	var sawFailure bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if m["seq"] == "1001" && m["level"] == "ERROR" && m["error"] == "boom" {
			sawFailure = true
		}
	}
	if !sawFailure {
		t.Errorf("no error log naming seq 1001:\n%s", logs.String())
	}
	var sawOrder bool
	for _, line := range strings.Split(strings.TrimSpace(metrics.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metrics line is not JSON: %s", line)
		}
		if _, ok := m["_aws"]; !ok {
			t.Errorf("EMF line without _aws: %s", line)
		}
		if m["EntityType"] == "Order" {
			sawOrder = true
			if m["Records"] != 3.0 || m["Processed"] != 1.0 || m["Skipped"] != 0.0 || m["Failed"] != 1.0 || m["Function"] != "projector" {
				t.Errorf("Order metrics %v", m)
			}
		}
	}
	if !sawOrder {
		t.Errorf("no per-entity metrics:\n%s", metrics.String())
	}
}

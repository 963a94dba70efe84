package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

// Errors say what was found where a JSON object should be, and name each
// record, file and line once.
func TestErrorMessages(t *testing.T) {
	tests := []struct {
		name   string
		decode func() ([]pipeline.Change, error)
		want   []string // the records' messages, in order
	}{
		{
			name: "KinesisPlainText",
			decode: func() ([]pipeline.Change, error) {
				return pipeline.DecodeKinesisEvent(read(t, "kinesis/plain-text.json"), pipeline.Options{})
			},
			want: []string{
				`record 0 (shard shardId-000000000006, seq 49656632116218945776331460766870512464380820032064733186): kinesis.data: not JSON: starts with "Hello, this is a"`,
				`record 1 (shard shardId-000000000006, seq 49656632116218945776331460766871721390200434661239439362): kinesis.data: not JSON: starts with "This is only a t"`,
			},
		},
		{
			name:   "ExportION",
			decode: func() ([]pipeline.Change, error) { return decodeAllLines(read(t, "export/ion.json")) },
			want: []string{
				"data.json line 1: ION is not supported: export the table in DYNAMODB_JSON",
				"data.json line 2: ION is not supported: export the table in DYNAMODB_JSON",
			},
		},
		{
			name: "ExportLineNamedOnce",
			decode: func() ([]pipeline.Change, error) {
				return decodeAllLines(read(t, "malformed/export-ss-non-string.json"))
			},
			want: []string{"data.json line 2: Item.tags.SS[1]: want string, got number"},
		},
		{
			name: "ExportLineArray",
			decode: func() ([]pipeline.Change, error) {
				return decodeAllLines([]byte(`[{"Item":{}}]` + "\n"))
			},
			want: []string{"data.json line 1: want a JSON object, got a JSON array"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.decode()
			var de *pipeline.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DecodeError", err)
			}
			var got []string
			for _, r := range de.Records {
				got = append(got, r.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	_, err := pipeline.DecodeStreamsEvent([]byte("Hello, this is a test."), pipeline.Options{})
	if err == nil || err.Error() != `pipeline: event: not JSON: starts with "Hello, this is a"` || !errors.Is(err, pipeline.ErrNotEvent) {
		t.Errorf("plain text event: %v", err)
	}
}

// decodeAllLines decodes every line of an export file, collecting the
// errors as the CLI does.
func decodeAllLines(b []byte) ([]pipeline.Change, error) {
	d := pipeline.NewExportDecoder(pipeline.Options{})
	var (
		out []pipeline.Change
		bad []*pipeline.RecordError
	)
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		c, err := d.Decode(line, "data.json", i+1)
		var re *pipeline.RecordError
		switch {
		case errors.As(err, &re):
			bad = append(bad, re)
		case err != nil:
			return out, err
		default:
			out = append(out, c)
		}
	}
	if bad != nil {
		return out, &pipeline.DecodeError{Records: bad}
	}
	return out, nil
}

// A failure names its record once, with what the record error does not
// already say; the processor's log line of an undecodable Kinesis record
// has the shard its event ID names.
func TestFailureNamesTheRecordOnce(t *testing.T) {
	var logs bytes.Buffer
	h := &recorder{}
	p := pipeline.NewKinesisProcessor(h, pipeline.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Permanent: pipeline.SkipPermanent})
	res, err := p.Process(context.Background(), read(t, "kinesis/plain-text.json"))
	if err != nil || len(res.Failed) != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	f := res.Failed[0]
	if got := f.String(); strings.Count(got, "record 0") != 1 || !strings.HasSuffix(got, `kinesis.data: not JSON: starts with "Hello, this is a"`) {
		t.Errorf("failure: %s", got)
	}
	if f.Shard != "shardId-000000000006" {
		t.Errorf("failure shard %q", f.Shard)
	}
	var line struct{ Shard string }
	if err := json.Unmarshal(bytes.SplitN(logs.Bytes(), []byte("\n"), 2)[0], &line); err != nil || line.Shard != "shardId-000000000006" {
		t.Errorf("log line shard %q (%v):\n%s", line.Shard, err, logs.String())
	}

	// A handler's failure is named by the processor.
	h2 := eachChange(func(context.Context, pipeline.Change) error { return errors.New("rejected") })
	res, _ = pipeline.NewStreamsProcessor(h2, quietConfig()).Process(context.Background(), streamsEvent(1))
	if got := res.Failed[0].String(); got != "record 0 (seq 1000, entity type Order): rejected" {
		t.Errorf("handler failure: %s", got)
	}

	// A record that fails without a sequence number fails the invocation,
	// named once.
	event := bytes.Replace(streamsEvent(1), []byte(`"SequenceNumber":"1000",`), nil, 1)
	_, err = pipeline.NewStreamsProcessor(h2, quietConfig()).Process(context.Background(), event)
	if err == nil || strings.Count(err.Error(), "record 0") != 1 {
		t.Errorf("invocation error: %v", err)
	}
}

// eachChange is a BatchHandler that calls the function for every change in
// order and fails the batch at the first error.
type eachChange func(ctx context.Context, c pipeline.Change) error

func (f eachChange) HandleBatch(ctx context.Context, changes []pipeline.Change) error {
	for i, c := range changes {
		if err := f(ctx, c); err != nil {
			return &pipeline.BatchError{Index: i, Err: err}
		}
	}
	return nil
}

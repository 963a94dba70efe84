package pipeline_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

func TestDetectFormatFixtures(t *testing.T) {
	tests := []struct {
		file string
		want pipeline.Format
	}{
		{"streams/event.json", pipeline.FormatStreamsEvent},
		{"streams/all-types.json", pipeline.FormatStreamsEvent},
		{"streams/mentions-kinesis.json", pipeline.FormatStreamsEvent},
		{"kinesis/event-ms.json", pipeline.FormatKinesisEvent},
		{"kinesis/event-us.json", pipeline.FormatKinesisEvent},
		{"streams-api/getrecords.json", pipeline.FormatStreamsAPI},
		{"export/full.json", pipeline.FormatExport},
		{"export/incremental.json", pipeline.FormatExport},
		{"export/incremental-new-image.json", pipeline.FormatExport},
		{"large/streams-modify-400kb-binary.json.gz", pipeline.FormatStreamsEvent},
		{"large/kinesis-modify-400kb.json.gz", pipeline.FormatKinesisEvent},
		{"large/export-incremental-400kb-binary.json.gz", pipeline.FormatExport},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var data []byte
			if strings.HasSuffix(tt.file, ".gz") {
				data = readGz(t, tt.file)
			} else {
				data = read(t, tt.file)
			}
			for _, n := range []int{len(data), 4096} { // the whole file, and its first 4 KB
				got, err := pipeline.DetectFormat(data[:min(n, len(data))])
				if err != nil || got != tt.want {
					t.Errorf("first %d bytes: %v, %v; want %v", n, got, err, tt.want)
				}
			}
		})
	}
}

// The items of a Streams event may say "kinesis" anywhere: in attribute
// names, in values, in the first 4 KB. The event is still a Streams event,
// and decodes as one.
func TestDetectFormatIgnoresItems(t *testing.T) {
	data := read(t, "streams/mentions-kinesis.json")
	if head := data[:min(len(data), 4096)]; !bytes.Contains(head, []byte(`"kinesis"`)) || !bytes.Contains(head, []byte(`"aws:kinesis"`)) {
		t.Fatal("the fixture should mention kinesis in its first 4 KB")
	}
	f, err := pipeline.DetectFormat(data)
	if err != nil || f != pipeline.FormatStreamsEvent {
		t.Fatalf("DetectFormat = %v, %v", f, err)
	}
	changes, err := pipeline.DecodeStreamsEvent(data, pipeline.Options{})
	if err != nil || len(changes) != 2 {
		t.Fatalf("%d changes, %v", len(changes), err)
	}
	golden(t, "streams_mentions-kinesis.jsonl", render(changes))
}

func TestDetectFormat(t *testing.T) {
	kinesisData := base64.StdEncoding.EncodeToString([]byte(`{"eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{}}`))
	tests := []struct {
		name    string
		in      string
		want    pipeline.Format
		wantErr string
	}{
		{"StreamsEventSourceLast", `{"Records":[{"eventSourceARN":"arn:aws:dynamodb:eu-west-1:1:table/t/stream/x","dynamodb":{"NewImage":{"kinesis":{"S":"aws:kinesis"}}},"eventSource":"aws:dynamodb"}]}`, pipeline.FormatStreamsEvent, ""},
		{"StreamsDynamodbFirst", `{"Records":[{"dynamodb":{"Keys":{"eventSource":{"S":"aws:kinesis"}}},"eventSourceARN":"x"}]}`, pipeline.FormatStreamsEvent, ""},
		{"KinesisDataFirst", `{"Records":[{"kinesis":{"data":"` + kinesisData + `"},"eventSource":"aws:kinesis"}]}`, pipeline.FormatKinesisEvent, ""},
		{"KinesisEventSourceFirst", `{"Records":[{"eventSource":"aws:kinesis","kinesis":{}}]}`, pipeline.FormatKinesisEvent, ""},
		{"GetRecordsRecordsFirst", `{"Records":[{"eventSource":"aws:dynamodb","dynamodb":{}}],"NextShardIterator":"arn|1|AAAA"}`, pipeline.FormatStreamsAPI, ""},
		{"GetRecordsIteratorFirst", `{"NextShardIterator":"arn|1|AAAA","Records":[]}`, pipeline.FormatStreamsAPI, ""},
		{"GetRecordsShardClosed", `{"Records":[{"eventSource":"aws:dynamodb","dynamodb":{}}]}`, pipeline.FormatStreamsEvent, ""},
		{"NoRecords", `{"Records":[]}`, pipeline.FormatStreamsEvent, ""},
		{"NullRecords", `{"Records":null}`, pipeline.FormatStreamsEvent, ""},
		{"FullExportLine", `{"Item":{"PK":{"S":"a"}}}` + "\n" + `{"Item":`, pipeline.FormatExport, ""},
		{"IncrementalExportLine", `{"Metadata":{"WriteTimestampMicros":{"N":"1"}},"Keys":{"PK":{"S":"a"}}}`, pipeline.FormatExport, ""},
		{"LeadingSpace", "\n\t {\"Records\":[{\"eventSource\":\"aws:kinesis\"}]}", pipeline.FormatKinesisEvent, ""},
		{"DecidedBeforeTheEnd", `{"Records":[{"eventSource":"aws:kinesis","kinesis":{"data":"eyJ`, pipeline.FormatKinesisEvent, ""},
		{"Empty", "", pipeline.FormatUnknown, "empty"},
		{"IONText", `$ion_1_0 {Item:{PK:"a"}}`, pipeline.FormatUnknown, "ION is not supported"},
		{"IONBinary", "\xe0\x01\x00\xea\x00", pipeline.FormatUnknown, "ION is not supported"},
		{"PlainText", "Hello, this is a test 123.", pipeline.FormatUnknown, `not JSON: starts with "Hello, this is a"`},
		{"Array", `[{"eventSource":"aws:dynamodb"}]`, pipeline.FormatUnknown, "want a JSON object, got a JSON array"},
		{"Number", `42`, pipeline.FormatUnknown, "want a JSON object, got a JSON number"},
		{"SyntaxError", `{"Records":[{"eventSource" "aws:dynamodb"}]}`, pipeline.FormatUnknown, "not JSON"},
		{"UnknownEventSource", `{"Records":[{"eventSource":"aws:sqs"}]}`, pipeline.FormatUnknown, `eventSource "aws:sqs": neither aws:dynamodb nor aws:kinesis`},
		{"RecordWithoutSource", `{"Records":[{"eventID":"1"}]}`, pipeline.FormatUnknown, "no eventSource, kinesis or dynamodb member"},
		{"RecordsNotArray", `{"Records":{"eventSource":"aws:kinesis"}}`, pipeline.FormatUnknown, "want Records to be an array, got {"},
		{"NothingKnown", `{"foo":{"kinesis":{}}}`, pipeline.FormatUnknown, "neither an event"},
		{"CutBeforeTheFormatShows", `{"Records":[{"eventID":"0123456789`, pipeline.FormatUnknown, "the first 34 bytes: ends before the format shows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pipeline.DetectFormat([]byte(tt.in))
			if got != tt.want {
				t.Errorf("format %v, want %v (err %v)", got, tt.want, err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
	if _, err := pipeline.DetectFormat([]byte("$ion_1_0 {}")); !errors.Is(err, pipeline.ErrION) {
		t.Errorf("ION: %v, want ErrION", err)
	}
}

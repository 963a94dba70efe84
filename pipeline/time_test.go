package pipeline_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/pipeline"
)

// kinesisTimeEvent is a one-record Lambda Kinesis event whose payload's
// dynamodb member has the given ApproximateCreationDateTime (and precision,
// if any), as JSON text.
func kinesisTimeEvent(at, precision string) []byte {
	ddb := `{"ApproximateCreationDateTime":` + at
	if precision != "" {
		ddb += `,"ApproximateCreationDateTimePrecision":"` + precision + `"`
	}
	ddb += `,"Keys":{"PK":{"S":"a"}},"NewImage":{"PK":{"S":"a"}},"SizeBytes":4}`
	data := base64.StdEncoding.EncodeToString([]byte(`{"awsRegion":"eu-west-1","eventID":"e","eventName":"INSERT","dynamodb":` + ddb + `,"eventSource":"aws:dynamodb"}`))
	return []byte(`{"Records":[{"kinesis":{"sequenceNumber":"1","data":"` + data + `"},"eventSource":"aws:kinesis","eventID":"shardId-000000000000:1"}]}`)
}

// streamsTimeEvent is a one-record Streams event (or GetRecords body) with
// the given ApproximateCreationDateTime, as JSON text.
func streamsTimeEvent(at string) []byte {
	return []byte(`{"Records":[{"eventID":"e","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":` + at +
		`,"Keys":{"PK":{"S":"a"}},"NewImage":{"PK":{"S":"a"}},"SequenceNumber":"100000000000000000001","StreamViewType":"NEW_AND_OLD_IMAGES"}}]}`)
}

func TestTimestamps(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 15, 0, 0, time.UTC)
	api := func(b []byte) ([]pipeline.Change, error) {
		return pipeline.DecodeStreamsAPIResponse(b, "stream", "shard", pipeline.Options{})
	}
	streams := func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeStreamsEvent(b, pipeline.Options{}) }
	kinesis := func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeKinesisEvent(b, pipeline.Options{}) }
	tests := []struct {
		name      string
		decode    func([]byte) ([]pipeline.Change, error)
		event     []byte
		want      time.Time
		precision pipeline.Precision
		wantErr   string
	}{
		{"KinesisMilliseconds", kinesis, kinesisTimeEvent("1796033700123", ""), at.Add(123 * time.Millisecond), pipeline.Millisecond, ""},
		{"KinesisMillisecondsStated", kinesis, kinesisTimeEvent("1796033700123", "MILLISECOND"), at.Add(123 * time.Millisecond), pipeline.Millisecond, ""},
		{"KinesisMicroseconds", kinesis, kinesisTimeEvent("1796033700123456", "MICROSECOND"), at.Add(123456 * time.Microsecond), pipeline.Microsecond, ""},
		{"KinesisMicrosecondsByLength", kinesis, kinesisTimeEvent("1796033700123456", ""), at.Add(123456 * time.Microsecond), pipeline.Microsecond, ""},
		{"KinesisSeconds", kinesis, kinesisTimeEvent("1796033700", ""), time.Time{}, 0,
			"kinesis.data.dynamodb.ApproximateCreationDateTime: 1796033700 has 10 digits, a time in seconds (2026-11-30T10:15:00Z); the Kinesis streaming destination writes milliseconds (13 digits) or, with ApproximateCreationDateTimePrecision MICROSECOND, microseconds (16)"},
		{"KinesisMicrosecondsStatedAsMilliseconds", kinesis, kinesisTimeEvent("1796033700123456", "MILLISECOND"), time.Time{}, 0,
			"1796033700123456 has 16 digits, not the 13 of a time in milliseconds"},
		{"KinesisMillisecondsStatedAsMicroseconds", kinesis, kinesisTimeEvent("1796033700123", "MICROSECOND"), time.Time{}, 0,
			"1796033700123 has 13 digits, not the 16 of a time in microseconds"},
		{"KinesisNanoseconds", kinesis, kinesisTimeEvent("1796033700123456789", ""), time.Time{}, 0,
			"1796033700123456789 has 19 digits"},
		{"KinesisFraction", kinesis, kinesisTimeEvent("1796033700123.5", ""), time.Time{}, 0,
			"1796033700123.5 is not an integer"},
		{"StreamsSeconds", streams, streamsTimeEvent("1796033700"), at, pipeline.Second, ""},
		{"StreamsMilliseconds", streams, streamsTimeEvent("1796033700123"), time.Time{}, 0,
			"dynamodb.ApproximateCreationDateTime: 1796033700123 is not a time in seconds: it has 13 digits, a time in milliseconds"},
		{"StreamsString", streams, streamsTimeEvent(`"1.7960337E9"`), time.Time{}, 0,
			"dynamodb.ApproximateCreationDateTime: want a number of seconds, got a string: Lambda writes a JSON number"},
		{"APINumber", api, streamsTimeEvent("1.7960337E9"), at, pipeline.Second, ""},
		{"APIFraction", api, streamsTimeEvent("1796033700.5"), at.Add(500 * time.Millisecond), pipeline.Millisecond, ""},
		// The API reference's GetRecords example writes the number as a
		// string, as boto3 and the AWS SDK for JavaScript read it.
		{"APINumberString", api, streamsTimeEvent(`"1.7960337E9"`), at, pipeline.Second, ""},
		// The AWS CLI (v2) prints timestamps in ISO 8601.
		{"APIISO8601", api, streamsTimeEvent(`"2026-11-30T10:15:00+00:00"`), at, pipeline.Second, ""},
		{"APIISO8601Fraction", api, streamsTimeEvent(`"2026-11-30T11:15:00.250+01:00"`), at.Add(250 * time.Millisecond), pipeline.Millisecond, ""},
		{"APINotATime", api, streamsTimeEvent(`"soon"`), time.Time{}, 0,
			`dynamodb.ApproximateCreationDateTime: "soon" is neither a number of seconds nor an ISO 8601 time`},
		{"APITooLarge", api, streamsTimeEvent("1E+300"), time.Time{}, 0, "is not a time in seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, err := tt.decode(tt.event)
			if tt.wantErr != "" {
				var de *pipeline.DecodeError
				if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v\nwant one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(changes) != 1 {
				t.Fatalf("%d changes, %v", len(changes), err)
			}
			if c := changes[0]; !c.Time.Equal(tt.want) || c.Precision != tt.precision {
				t.Errorf("time %v (%v), want %v (%v)", c.Time, c.Precision, tt.want, tt.precision)
			}
		})
	}
}

// A GetRecords body captured with the AWS CLI, or copied from the API
// reference, has its times as strings: it decodes like the numeric one.
func TestGetRecordsStringTimes(t *testing.T) {
	num, err := pipeline.DecodeStreamsAPIResponse(read(t, "streams-api/getrecords.json"), "s", "shard", pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	str, err := pipeline.DecodeStreamsAPIResponse(read(t, "streams-api/getrecords-cli.json"), "s", "shard", pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(render(num), render(str)) {
		t.Errorf("string times decode differently:\n%s\n%s", render(num), render(str))
	}
}

// decode's JSON carries the item version as a string, as it carries the
// images' numbers: a version past 2^53 reads back exactly with a reader
// that parses JSON numbers as floats.
func TestChangeJSONVersionIsExact(t *testing.T) {
	event := bytes.Replace(streamsEvent(1), []byte(`"version":{"N":"1"}`), []byte(`"version":{"N":"9007199254740993"}`), 1)
	changes, err := pipeline.DecodeStreamsEvent(event, pipeline.Options{})
	if err != nil || changes[0].Version != 9007199254740993 {
		t.Fatalf("%v, %+v", err, changes)
	}
	var got map[string]any
	if err := json.Unmarshal(changes[0].AppendJSON(nil), &got); err != nil {
		t.Fatal(err)
	}
	if got["version"] != "9007199254740993" {
		t.Errorf("version read back as %#v", got["version"])
	}
}

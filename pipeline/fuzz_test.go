package pipeline_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/pipeline"
)

// seed adds the fixtures matching globs, each with a record limit of a
// third of its size, so that some of its records go over it.
func seed(f *testing.F, globs ...string) {
	for _, g := range globs {
		files, _ := filepath.Glob(filepath.Join("testdata", g))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			if len(b) > 64<<10 {
				continue
			}
			f.Add(b, uint16(len(b)/3))
		}
	}
}

// checkImages re-encodes every decoded image and checks that the SDK's parser
// reads the same item back: decoding is exact and encoding is its inverse. No
// image is over DynamoDB's 400 KB item limit.
func checkImages(t *testing.T, changes []pipeline.Change) {
	for _, c := range changes {
		for _, img := range []pipeline.Item{c.Keys, c.Old, c.New} {
			if img == nil {
				continue
			}
			if n := pipeline.ItemSize(img); n > 400<<10 {
				t.Fatalf("decoded an image of %d bytes, over the 400 KB limit", n)
			}
			enc := pipeline.AppendItem(nil, img)
			back, err := attributevalue.UnmarshalMapJSON(enc)
			if err != nil {
				t.Fatalf("re-encoded image does not parse: %v\n%s", err, enc)
			}
			if !reflect.DeepEqual(back, img) {
				t.Fatalf("image does not round-trip:\n%s\n%s", enc, pipeline.AppendItem(nil, back))
			}
		}
	}
}

// checkLimit decodes data again with a record limit of limit bytes: the
// records it keeps are those decoded without one, and every record it
// drops is reported as over the limit; a limit of the whole payload keeps
// them all.
func checkLimit(t *testing.T, data []byte, limit int, decode func([]byte, pipeline.Options) ([]pipeline.Change, error)) {
	all, allErr := decode(data, pipeline.Options{})
	some, someErr := decode(data, pipeline.Options{MaxRecordBytes: limit})
	if (allErr == nil) != (someErr == nil) && !errors.As(someErr, new(*pipeline.DecodeError)) {
		t.Fatalf("limit %d: error %v, without it %v", limit, someErr, allErr)
	}
	kept := map[int]bool{}
	for _, c := range some {
		kept[c.Position.Index] = true
	}
	reported := map[int]string{}
	var de *pipeline.DecodeError
	if errors.As(someErr, &de) {
		for _, r := range de.Records {
			reported[r.Index] = r.Error()
		}
	}
	for _, c := range all {
		i := c.Position.Index
		if kept[i] {
			delete(kept, i)
			continue
		}
		if !strings.Contains(reported[i], fmt.Sprintf("over the limit of %d", limit)) {
			t.Fatalf("limit %d: record %d dropped, reported as %q", limit, i, reported[i])
		}
		if limit >= len(data) {
			t.Fatalf("limit %d of a %d-byte payload dropped record %d", limit, len(data), i)
		}
	}
	if len(kept) > 0 {
		t.Fatalf("limit %d: records %v decode only with the limit", limit, kept)
	}
}

// oversized is a Streams event and an export line whose item is one byte over
// DynamoDB's 400 KB limit as ItemSize counts it ("PK", "pad" and the values).
func oversized() (event, line []byte) {
	pad := strings.Repeat("x", 400<<10-len("PK")-1-len("pad")+1)
	item := `{"PK":{"S":"a"},"pad":{"S":"` + pad + `"}}`
	event = []byte(`{"Records":[{"eventID":"1","eventName":"INSERT","dynamodb":{"Keys":{"PK":{"S":"a"}},"NewImage":` + item +
		`,"SequenceNumber":"1","StreamViewType":"NEW_AND_OLD_IMAGES"}}]}`)
	return event, []byte(`{"Item":` + item + `}`)
}

func FuzzDecodeStreamsEvent(f *testing.F) {
	seed(f, "streams/*.json", "streams-api/*.json", "malformed/streams-*.json")
	big, _ := oversized()
	f.Add(big, uint16(len(big)/3))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		changes, _ := pipeline.DecodeStreamsEvent(data, pipeline.Options{})
		checkImages(t, changes)
		checkLimit(t, data, int(limit)+1, pipeline.DecodeStreamsEvent)
	})
}

func FuzzDecodeKinesisEvent(f *testing.F) {
	seed(f, "kinesis/event-*.json", "malformed/kinesis-*.json")
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		changes, _ := pipeline.DecodeKinesisEvent(data, pipeline.Options{})
		checkImages(t, changes)
		checkLimit(t, data, int(limit)+1, pipeline.DecodeKinesisEvent)
	})
}

func FuzzKinesisRecordData(f *testing.F) {
	seed(f, "kinesis/*.payloads.json")
	f.Add([]byte(`{"eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"S":"a"}},"NewImage":{"PK":{"S":"a"}}}}`), uint16(40))
	// The rules of the shared scanner core: a name given twice, 32 and 33
	// levels of nesting, invalid UTF-8, a bad number, an empty set, an
	// unknown type.
	for _, img := range []string{
		`{"PK":{"S":"a"},"EntityType":{"S":"A"},"EntityType":{"S":"B"}}`,
		`{"PK":{"S":"a"},"d":` + strings.Repeat(`{"M":{"b":`, 32) + `{"N":"1"}` + strings.Repeat(`}}`, 32) + `}`,
		`{"PK":{"S":"a"},"d":` + strings.Repeat(`{"L":[`, 33) + `{"N":"1"}` + strings.Repeat(`]}`, 33) + `}`,
		"{\"PK\":{\"S\":\"a\xff\"}}",
		`{"PK":{"S":"a"},"n":{"N":"1234567890123456789012345678901234567890"}}`,
		`{"PK":{"S":"a"},"s":{"SS":[]}}`,
		`{"PK":{"S":"a"},"q":{"Q":"1"}}`,
	} {
		f.Add([]byte(`{"eventName":"INSERT","eventName":"MODIFY","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"S":"a"}},"NewImage":`+img+`}}`), uint16(400))
		f.Add([]byte(`{"eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"S":"a"}},"NewImage":`+img+`}}`), uint16(400))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		seq := "1"
		r := ktypes.Record{Data: data, SequenceNumber: &seq}
		c, err := pipeline.FromKinesisRecord(r, "s", "shardId-0", pipeline.Options{})
		if err == nil {
			checkImages(t, []pipeline.Change{c})
		}
		max := int(limit) + 1
		_, lerr := pipeline.FromKinesisRecord(r, "s", "shardId-0", pipeline.Options{MaxRecordBytes: max})
		over := lerr != nil && strings.Contains(lerr.Error(), fmt.Sprintf("over the limit of %d", max))
		switch {
		case over != (len(data) > max):
			t.Fatalf("data of %d bytes, limit %d: %v", len(data), max, lerr)
		case !over && (err == nil) != (lerr == nil):
			t.Fatalf("limit %d changed the outcome: %v, without it %v", max, lerr, err)
		}
	})
}

func FuzzExportLine(f *testing.F) {
	for _, g := range []string{"export/*.json", "malformed/export-*.json"} {
		files, _ := filepath.Glob(filepath.Join("testdata", g))
		for _, file := range files {
			b, _ := os.ReadFile(file)
			for _, line := range bytes.Split(b, []byte("\n")) {
				f.Add(line, uint16(len(line)/2))
			}
		}
	}
	_, big := oversized()
	f.Add(big, uint16(len(big)/2))
	d := pipeline.NewExportDecoder(pipeline.Options{})
	f.Fuzz(func(t *testing.T, line []byte, limit uint16) {
		c, err := d.Decode(line, "f", 1)
		if err != nil {
			return
		}
		checkImages(t, []pipeline.Change{c})
		// The decoder measures only images whose JSON is longer than the
		// item limit: no image's JSON is shorter than its size.
		for _, img := range []pipeline.Item{c.Keys, c.Old, c.New} {
			if n := pipeline.ItemSize(img); n > len(line) {
				t.Fatalf("an image of %d bytes from a line of %d", n, len(line))
			}
		}
		// Under a limit, a line is refused for its size exactly when it is
		// longer, and decodes as without one otherwise.
		_, lerr := pipeline.NewExportDecoder(pipeline.Options{MaxRecordBytes: int(limit) + 1}).Decode(line, "f", 1)
		over := lerr != nil && strings.Contains(lerr.Error(), fmt.Sprintf("over the limit of %d", int(limit)+1))
		switch {
		case over != (len(line) > int(limit)+1):
			t.Fatalf("line of %d bytes, limit %d: %v", len(line), int(limit)+1, lerr)
		case !over && (err == nil) != (lerr == nil):
			t.Fatalf("limit %d changed the outcome: %v, without it %v", int(limit)+1, lerr, err)
		}
	})
}

// FuzzDetectFormat puts whatever an item can hold (an attribute of any name
// and string value, at the top of the image and nested) into each format:
// the format detected is the one the payload has, never one an item
// mentions. On any other input, DetectFormat returns a format or an error.
func FuzzDetectFormat(f *testing.F) {
	f.Add("kinesis", []byte("aws:kinesis"))
	f.Add("eventSource", []byte(`"aws:kinesis"`))
	f.Add("Records", []byte(`{"Records":[{"eventSource":"aws:kinesis"}]}`))
	f.Add("NextShardIterator", []byte("Item"))
	f.Add("Item", []byte("$ion_1_0"))
	f.Fuzz(func(t *testing.T, name string, value []byte) {
		// No panic, whatever it is, and a format only with no error.
		if got, err := pipeline.DetectFormat(value); err == nil {
			switch got {
			case pipeline.FormatStreamsEvent, pipeline.FormatStreamsAPI, pipeline.FormatKinesisEvent, pipeline.FormatExport:
			default:
				t.Fatalf("DetectFormat = %v and no error", got)
			}
		}
		if name == "" {
			return
		}
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		img := `{"PK":{"S":"a"},` + q(name) + `:{"S":` + q(string(value)) + `},"n":{"M":{` + q(name) + `:{"S":` + q(string(value)) + `}}}}`
		if name == "PK" {
			img = `{"PK":{"S":` + q(string(value)) + `}}`
		}
		record := `"dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":{"PK":{"S":"a"}},"NewImage":` + img + `,"SequenceNumber":"100000000000000000001","StreamViewType":"NEW_AND_OLD_IMAGES"}`
		data := base64.StdEncoding.EncodeToString([]byte(`{"eventName":"INSERT","eventSource":"aws:dynamodb",` + record + `}`))
		for _, tc := range []struct {
			payload string
			want    pipeline.Format
		}{
			{`{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb",` + record + `,"eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/t/stream/x"}]}`, pipeline.FormatStreamsEvent},
			{`{"Records":[{"eventName":"INSERT",` + record + `,"eventSource":"aws:dynamodb"}],"NextShardIterator":"x"}`, pipeline.FormatStreamsAPI},
			{`{"Records":[{"kinesis":{"sequenceNumber":"1","data":"` + data + `"},"eventSource":"aws:kinesis","eventID":"shardId-000000000000:1"}]}`, pipeline.FormatKinesisEvent},
			{`{"Item":` + img + `}`, pipeline.FormatExport},
			{`{"Keys":{"PK":{"S":"a"}},"Metadata":{"WriteTimestampMicros":{"N":"1"}},"NewImage":` + img + `}`, pipeline.FormatExport},
		} {
			got, err := pipeline.DetectFormat([]byte(tc.payload))
			if err != nil || got != tc.want {
				t.Fatalf("DetectFormat = %v, %v; want %v\n%s", got, err, tc.want, tc.payload)
			}
		}
	})
}

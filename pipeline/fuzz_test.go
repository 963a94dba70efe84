package pipeline_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/pipeline"
)

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
			f.Add(b)
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
	f.Add(big)
	f.Fuzz(func(t *testing.T, data []byte) {
		changes, _ := pipeline.DecodeStreamsEvent(data, pipeline.Options{})
		checkImages(t, changes)
	})
}

func FuzzDecodeKinesisEvent(f *testing.F) {
	seed(f, "kinesis/event-*.json", "malformed/kinesis-*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		changes, _ := pipeline.DecodeKinesisEvent(data, pipeline.Options{})
		checkImages(t, changes)
	})
}

func FuzzKinesisRecordData(f *testing.F) {
	seed(f, "kinesis/*.payloads.json")
	f.Add([]byte(`{"eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"S":"a"}},"NewImage":{"PK":{"S":"a"}}}}`))
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
		f.Add([]byte(`{"eventName":"INSERT","eventName":"MODIFY","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"S":"a"}},"NewImage":` + img + `}}`))
		f.Add([]byte(`{"eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"S":"a"}},"NewImage":` + img + `}}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		seq := "1"
		c, err := pipeline.FromKinesisRecord(ktypes.Record{Data: data, SequenceNumber: &seq}, "s", "shardId-0", pipeline.Options{})
		if err == nil {
			checkImages(t, []pipeline.Change{c})
		}
	})
}

func FuzzExportLine(f *testing.F) {
	for _, g := range []string{"export/*.json", "malformed/export-*.json"} {
		files, _ := filepath.Glob(filepath.Join("testdata", g))
		for _, file := range files {
			b, _ := os.ReadFile(file)
			for _, line := range bytes.Split(b, []byte("\n")) {
				f.Add(line)
			}
		}
	}
	_, big := oversized()
	f.Add(big)
	d := pipeline.NewExportDecoder(pipeline.Options{})
	f.Fuzz(func(t *testing.T, line []byte) {
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
	})
}

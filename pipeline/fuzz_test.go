package pipeline_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
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
// reads the same item back: decoding is exact and encoding is its inverse.
func checkImages(t *testing.T, changes []pipeline.Change) {
	for _, c := range changes {
		for _, img := range []pipeline.Item{c.Keys, c.Old, c.New} {
			if img == nil {
				continue
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

func FuzzDecodeStreamsEvent(f *testing.F) {
	seed(f, "streams/*.json", "streams-api/*.json", "malformed/streams-*.json")
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
	d := pipeline.NewExportDecoder(pipeline.Options{})
	f.Fuzz(func(t *testing.T, line []byte) {
		c, err := d.Decode(line, "f", 1)
		if err == nil {
			checkImages(t, []pipeline.Change{c})
		}
	})
}

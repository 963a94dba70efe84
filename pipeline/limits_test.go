package pipeline_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/pipeline"
)

func readGz(t testing.TB, name string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(read(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pattern is the fixtures' binary: n bytes (7i + salt) mod 256.
func pattern(n int, salt byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(7*i) + salt
	}
	return b
}

func decodeLines(b []byte) ([]pipeline.Change, error) {
	d := pipeline.NewExportDecoder(pipeline.Options{})
	var out []pipeline.Change
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		c, err := d.Decode(line, "data.json", i+1)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Records of DynamoDB's largest items decode in every format: a MODIFY of
// a 400 KB binary item carries it twice, base64 (1.09 MB), once more base64
// on Kinesis (1.46 MB); a 400 KB string of U+0001 is 2.46 MB of JSON.
func TestLargestItems(t *testing.T) {
	tests := []struct {
		file    string
		decode  func([]byte) ([]pipeline.Change, error)
		records int
		blob    int // index of the change with the binary images
	}{
		{"large/streams-modify-400kb-binary.json.gz", func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeStreamsEvent(b, pipeline.Options{}) }, 1, 0},
		{"large/streams-insert-400kb-control.json.gz", func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeStreamsEvent(b, pipeline.Options{}) }, 1, -1},
		{"large/kinesis-modify-400kb.json.gz", func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeKinesisEvent(b, pipeline.Options{}) }, 2, 1},
		{"large/export-incremental-400kb-binary.json.gz", decodeLines, 3, 1},
		{"large/export-full-400kb-control.json.gz", decodeLines, 3, -1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readGz(t, tt.file)
			changes, err := tt.decode(data)
			if err != nil {
				t.Fatalf("%d bytes: %v", len(data), err)
			}
			if len(changes) != tt.records {
				t.Fatalf("%d changes, want %d", len(changes), tt.records)
			}
			for i, c := range changes {
				for _, img := range []pipeline.Item{c.Old, c.New} {
					if n := pipeline.ItemSize(img); n > pipeline.MaxItemBytes {
						t.Errorf("change %d: image of %d bytes, over DynamoDB's limit: the fixture is wrong", i, n)
					}
				}
			}
			if tt.blob >= 0 {
				c := changes[tt.blob]
				if c.Kind != pipeline.Modify {
					t.Fatalf("change %d is %v, want MODIFY", tt.blob, c.Kind)
				}
				for salt, img := range []pipeline.Item{c.Old, c.New} {
					b := img["blob"].(*types.AttributeValueMemberB).Value
					if len(b) < 400000 || !bytes.Equal(b, pattern(len(b), byte(salt))) {
						t.Errorf("image %d: blob of %d bytes is not the fixture's pattern", salt, len(b))
					}
				}
			}
			checkImages(t, changes)
		})
	}
}

// The limits follow from DynamoDB's: a record over the limit is one that
// no table can produce, and a record at a format's limit still decodes.
func TestRecordLimits(t *testing.T) {
	t.Run("LambdaRecordIsTheLambdaPayload", func(t *testing.T) {
		if pipeline.MaxLambdaRecordBytes != pipeline.MaxLambdaPayloadBytes || pipeline.MaxStreamsRecordBytes <= pipeline.MaxLambdaPayloadBytes {
			t.Fatalf("MaxLambdaRecordBytes %d: a change record (up to %d bytes) is capped by the Lambda payload (%d)",
				pipeline.MaxLambdaRecordBytes, pipeline.MaxStreamsRecordBytes, pipeline.MaxLambdaPayloadBytes)
		}
	})
	t.Run("LoweredByOptions", func(t *testing.T) {
		data := readGz(t, "large/streams-modify-400kb-binary.json.gz")
		_, err := pipeline.DecodeStreamsEvent(data, pipeline.Options{MaxRecordBytes: 1 << 20})
		var de *pipeline.DecodeError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "over the limit of 1048576") {
			t.Fatalf("with MaxRecordBytes 1 MiB: %v", err)
		}
		if _, err := pipeline.DecodeStreamsEvent(data, pipeline.Options{MaxRecordBytes: 1 << 40}); err != nil {
			t.Fatalf("a limit above the format's is the format's: %v", err)
		}
	})
	t.Run("KinesisData", func(t *testing.T) {
		seq := "1"
		data := bytes.Repeat([]byte(" "), pipeline.MaxKinesisDataBytes+1)
		_, err := pipeline.FromKinesisRecord(ktypes.Record{Data: data, SequenceNumber: &seq}, "s", "shardId-0", pipeline.Options{})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("over the limit of %d", pipeline.MaxKinesisDataBytes)) {
			t.Fatalf("data of %d bytes: %v", len(data), err)
		}
	})
}

// worstItems are items of at most MaxItemBytes whose DynamoDB JSON is as
// long as each kind of attribute value can make it.
func worstItems() map[string]pipeline.Item {
	keys := func() pipeline.Item {
		return pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "P"}, "SK": &types.AttributeValueMemberS{Value: "S"}}
	}
	// fill appends values to a list attribute until the item is full.
	fill := func(v func(i int) types.AttributeValue) pipeline.Item {
		item := keys()
		l := &types.AttributeValueMemberL{}
		item["l"] = l
		for size := pipeline.ItemSize(item); ; {
			e := v(len(l.Value))
			n := pipeline.ItemSize(pipeline.Item{"x": e}) // the value and one name byte: the element's overhead
			if size+n > pipeline.MaxItemBytes {
				return item
			}
			l.Value = append(l.Value, e)
			size += n
		}
	}
	tiny := "-0." + strings.Repeat("0", 129) + "12" // -1.2E-130 as DynamoDB writes it: 2 bytes
	out := map[string]pipeline.Item{
		"ListOfTinyNumbers":  fill(func(int) types.AttributeValue { return &types.AttributeValueMemberN{Value: tiny} }),
		"ListOfEmptyStrings": fill(func(int) types.AttributeValue { return &types.AttributeValueMemberS{} }),
		"ListOfBooleans":     fill(func(int) types.AttributeValue { return &types.AttributeValueMemberBOOL{} }),
		"ControlCharacters": func() pipeline.Item {
			item := keys()
			item["s"] = &types.AttributeValueMemberS{Value: strings.Repeat("\x01", pipeline.MaxItemBytes-pipeline.ItemSize(item)-1)}
			return item
		}(),
		"Binary": func() pipeline.Item {
			item := keys()
			item["b"] = &types.AttributeValueMemberB{Value: pattern(pipeline.MaxItemBytes-pipeline.ItemSize(item)-1, 0)}
			return item
		}(),
	}
	// A set of distinct tiny numbers (two significant digits, every
	// exponent and sign), then a list of them for the rest.
	ns := &types.AttributeValueMemberNS{}
	for exp := 0; exp < 128; exp++ {
		for m := 11; m < 100; m++ {
			if m%10 != 0 {
				ns.Value = append(ns.Value, "-0."+strings.Repeat("0", 129-exp)+fmt.Sprint(m))
			}
		}
	}
	set := fill(func(int) types.AttributeValue { return &types.AttributeValueMemberN{Value: tiny} })
	l := set["l"].(*types.AttributeValueMemberL)
	set["ns"] = ns
	over := pipeline.ItemSize(set) - pipeline.MaxItemBytes
	l.Value = l.Value[:len(l.Value)-(over+2)/3] // 3 bytes an element
	out["NumberSetThenList"] = set
	return out
}

func TestImageJSONBound(t *testing.T) {
	for name, item := range worstItems() {
		t.Run(name, func(t *testing.T) {
			size := pipeline.ItemSize(item)
			if size > pipeline.MaxItemBytes || size < pipeline.MaxItemBytes-200 {
				t.Fatalf("item of %d bytes: not a full item", size)
			}
			j := pipeline.AppendItem(nil, item)
			if len(j) > pipeline.MaxImageJSONBytes {
				t.Fatalf("%d bytes of JSON for %d bytes of item (%.1f a byte): over MaxImageJSONBytes %d",
					len(j), size, float64(len(j))/float64(size), pipeline.MaxImageJSONBytes)
			}
			t.Logf("%d bytes of item: %d bytes of JSON (%.1f a byte)", size, len(j), float64(len(j))/float64(size))
		})
	}
}

// The worst item's records decode in the formats that have no carrier's
// limit below them: a GetRecords record and an incremental export line
// with both images.
func TestWorstItemRecordsDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 40 MB records")
	}
	item := worstItems()["ListOfTinyNumbers"]
	img := pipeline.AppendItem(nil, item)
	keys := pipeline.AppendItem(nil, pipeline.Item{"PK": item["PK"], "SK": item["SK"]})

	var api bytes.Buffer
	fmt.Fprintf(&api, `{"Records":[{"eventID":"0123456789abcdef0123456789abcdef","eventName":"MODIFY","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":%s,"NewImage":%s,"OldImage":%s,"SequenceNumber":"4421600003100000017450400003","SizeBytes":%d,"StreamViewType":"NEW_AND_OLD_IMAGES"}}]}`,
		keys, img, img, 2*pipeline.ItemSize(item))
	if _, err := pipeline.DecodeStreamsAPIResponse(api.Bytes(), "stream", "shard", pipeline.Options{}); err != nil {
		t.Errorf("GetRecords record of %d bytes: %v", api.Len(), err)
	}
	line := fmt.Appendf(nil, `{"Keys":%s,"Metadata":{"WriteTimestampMicros":{"N":"1796033700000000"}},"NewImage":%s,"OldImage":%s}`, keys, img, img)
	if _, err := pipeline.NewExportDecoder(pipeline.Options{}).Decode(line, "data.json", 1); err != nil {
		t.Errorf("export line of %d bytes: %v", len(line), err)
	}
}

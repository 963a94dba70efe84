package pipeline_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/tributary/tributary/pipeline"
)

var update = flag.Bool("update", false, "rewrite golden files")

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// render prints changes the way `tributary decode` does: one JSON object a line.
func render(changes []pipeline.Change) []byte {
	var buf []byte
	for i := range changes {
		buf = changes[i].AppendJSON(buf)
		buf = append(buf, '\n')
	}
	return buf
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

func TestDecodeGolden(t *testing.T) {
	decodeExport := decodeLines
	tests := []struct {
		file   string
		decode func([]byte) ([]pipeline.Change, error)
		want   int
	}{
		{"streams/event.json", func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeStreamsEvent(b, pipeline.Options{}) }, 4},
		{"streams/all-types.json", func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeStreamsEvent(b, pipeline.Options{}) }, 1},
		{"kinesis/event-ms.json", func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeKinesisEvent(b, pipeline.Options{}) }, 3},
		{"kinesis/event-us.json", func(b []byte) ([]pipeline.Change, error) { return pipeline.DecodeKinesisEvent(b, pipeline.Options{}) }, 2},
		{"streams-api/getrecords.json", func(b []byte) ([]pipeline.Change, error) {
			return pipeline.DecodeStreamsAPIResponse(b, "arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000", "shardId-00000001796000000000-abcdef12", pipeline.Options{})
		}, 2},
		{"export/full.json", decodeExport, 6},
		{"export/incremental.json", decodeExport, 4},
		{"export/incremental-new-image.json", decodeExport, 3},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			changes, err := tt.decode(read(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != tt.want {
				t.Fatalf("decoded %d changes, want %d", len(changes), tt.want)
			}
			golden(t, strings.ReplaceAll(tt.file, "/", "_")+"l", render(changes))
		})
	}
}

func TestStreamsEventFields(t *testing.T) {
	changes, err := pipeline.DecodeStreamsEvent(read(t, "streams/event.json"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantKinds := []pipeline.Kind{pipeline.Insert, pipeline.Modify, pipeline.Remove, pipeline.Remove}
	wantTTL := []bool{false, false, false, true}
	wantVersion := []int64{1, 2, 7, 1}
	for i, c := range changes {
		if c.Kind != wantKinds[i] || c.TTL != wantTTL[i] || !c.HasVersion || c.Version != wantVersion[i] {
			t.Errorf("record %d: kind %v ttl %v version %d/%v, want %v %v %d", i, c.Kind, c.TTL, c.Version, c.HasVersion, wantKinds[i], wantTTL[i], wantVersion[i])
		}
		if c.Position.Source != pipeline.SourceStreams || c.Position.Index != i || c.Precision != pipeline.Second || c.Table != "app" {
			t.Errorf("record %d: position %+v precision %v table %q", i, c.Position, c.Precision, c.Table)
		}
	}
	if changes[1].OldType != "Order" || changes[1].NewType != "Order" {
		t.Errorf("MODIFY types = %q, %q", changes[1].OldType, changes[1].NewType)
	}
	var order struct {
		Status string `dynamodbav:"status"`
		Total  string `dynamodbav:"total"`
	}
	if err := attributevalue.UnmarshalMap(changes[1].New, &order); err != nil {
		t.Fatal(err)
	}
	if order.Status != "PAID" || order.Total != "120.50" {
		t.Errorf("UnmarshalMap on the new image = %+v", order)
	}
}

func TestKinesisPrecision(t *testing.T) {
	ms, err := pipeline.DecodeKinesisEvent(read(t, "kinesis/event-ms.json"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Precision != pipeline.Millisecond || ms[0].Time.Nanosecond()%int(time.Millisecond) != 0 || ms[0].Time.Nanosecond() == 0 {
		t.Errorf("ms record: precision %v time %v", ms[0].Precision, ms[0].Time)
	}
	if ms[0].Position.Shard != "shardId-000000000000" || ms[0].Position.SequenceNumber == "" {
		t.Errorf("ms record position %+v", ms[0].Position)
	}
	if !ms[2].TTL {
		t.Error("TTL removal through Kinesis not flagged")
	}
	us, err := pipeline.DecodeKinesisEvent(read(t, "kinesis/event-us.json"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if us[0].Precision != pipeline.Microsecond || us[0].Time.Nanosecond()%1000 != 0 || us[0].Time.Nanosecond()%int(time.Millisecond) == 0 {
		t.Errorf("us record: precision %v time %v", us[0].Precision, us[0].Time)
	}
	if us[0].EventID != us[1].EventID || us[0].Position.SequenceNumber == us[1].Position.SequenceNumber {
		t.Error("duplicate delivery should keep the DynamoDB event ID and differ in Kinesis sequence number")
	}
}

// TestImagesMatchSDK checks every decoded image against the SDK's own
// DynamoDB JSON parser, an independent implementation.
func TestImagesMatchSDK(t *testing.T) {
	var ev struct {
		Records []struct {
			Dynamodb struct {
				Keys, NewImage, OldImage json.RawMessage
			} `json:"dynamodb"`
		}
	}
	for _, file := range []string{"streams/event.json", "streams/all-types.json"} {
		raw := read(t, file)
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		changes, err := pipeline.DecodeStreamsEvent(raw, pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range ev.Records {
			for _, img := range []struct {
				raw json.RawMessage
				got pipeline.Item
			}{{r.Dynamodb.Keys, changes[i].Keys}, {r.Dynamodb.NewImage, changes[i].New}, {r.Dynamodb.OldImage, changes[i].Old}} {
				if img.raw == nil {
					if img.got != nil {
						t.Errorf("%s record %d: image decoded from nothing", file, i)
					}
					continue
				}
				want, err := attributevalue.UnmarshalMapJSON(img.raw)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(img.got, want) {
					t.Errorf("%s record %d: image differs from the SDK's parse:\n got %s\nwant %s", file, i, pipeline.AppendItem(nil, img.got), pipeline.AppendItem(nil, want))
				}
			}
		}
	}
}

// TestExportRoundTrip re-encodes export lines and expects the same bytes.
func TestExportRoundTrip(t *testing.T) {
	for _, file := range []string{"export/full.json", "export/incremental.json", "export/incremental-new-image.json"} {
		t.Run(file, func(t *testing.T) {
			d := pipeline.NewExportDecoder(pipeline.Options{})
			sc := bufio.NewScanner(bytes.NewReader(read(t, file)))
			for n := 1; sc.Scan(); n++ {
				line := sc.Bytes()
				c, err := d.Decode(line, file, n)
				if err != nil {
					t.Fatal(err)
				}
				var out []byte
				if bytes.HasPrefix(line, []byte(`{"Item":`)) {
					out = append([]byte(`{"Item":`), pipeline.AppendItem(nil, c.New)...)
					out = append(out, '}')
				} else {
					out = appendIncremental(c)
				}
				if !bytes.Equal(out, line) {
					t.Errorf("line %d does not round-trip:\n got %s\nwant %s", n, out, line)
				}
			}
		})
	}
}

func appendIncremental(c pipeline.Change) []byte {
	b := []byte(`{"Keys":`)
	b = pipeline.AppendItem(b, c.Keys)
	b = append(b, `,"Metadata":{"WriteTimestampMicros":{"N":"`...)
	b = append(b, []byte(strings.TrimSpace(jsonInt(c.Time.UnixMicro())))...)
	b = append(b, `"}}`...)
	if c.New != nil {
		b = append(b, `,"NewImage":`...)
		b = pipeline.AppendItem(b, c.New)
	}
	if c.Old != nil {
		b = append(b, `,"OldImage":`...)
		b = pipeline.AppendItem(b, c.Old)
	}
	return append(b, '}')
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

type malformedCase struct {
	File   string `json:"file"`
	Format string `json:"format"`
	Whole  bool   `json:"whole"`
	Record int    `json:"record"`
	Seq    string `json:"seq"`
	Path   string `json:"path"`
	What   string `json:"what"`
}

func decodeFormat(format string, b []byte) ([]pipeline.Change, error) {
	switch format {
	case "streams":
		return pipeline.DecodeStreamsEvent(b, pipeline.Options{})
	case "kinesis":
		return pipeline.DecodeKinesisEvent(b, pipeline.Options{})
	case "streams-api":
		return pipeline.DecodeStreamsAPIResponse(b, "stream", "shard", pipeline.Options{})
	}
	return decodeAllLines(b)
}

// TestMalformed runs every malformed fixture: each gives a clear error naming
// what and where, never a panic, and the good records around a bad one still
// decode.
func TestMalformed(t *testing.T) {
	var cases []malformedCase
	if err := json.Unmarshal(read(t, "malformed/cases.json"), &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 25 {
		t.Fatalf("only %d malformed cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.File, func(t *testing.T) {
			changes, err := decodeFormat(tc.Format, read(t, "malformed/"+tc.File))
			if err == nil {
				t.Fatalf("%s: no error", tc.What)
			}
			var de *pipeline.DecodeError
			if tc.Whole {
				if errors.As(err, &de) || len(changes) != 0 {
					t.Fatalf("want a whole-payload error, got %v with %d changes", err, len(changes))
				}
				if tc.Path != "" && !strings.Contains(err.Error(), tc.Path) {
					t.Errorf("error %q does not name %q", err, tc.Path)
				}
				return
			}
			if !errors.As(err, &de) || len(de.Records) != 1 {
				t.Fatalf("want one record error, got %v", err)
			}
			re := de.Records[0]
			if re.Index != tc.Record || re.SequenceNumber != tc.Seq {
				t.Errorf("record error at index %d seq %q, want %d %q", re.Index, re.SequenceNumber, tc.Record, tc.Seq)
			}
			if !strings.Contains(err.Error(), tc.Path) {
				t.Errorf("error %q does not name %q", err, tc.Path)
			}
			if !errors.Is(err, pipeline.ErrPermanent) {
				t.Error("a record that cannot be decoded should be permanent")
			}
			if len(changes) != 2 {
				t.Errorf("the good records around the bad one: got %d changes, want 2", len(changes))
			}
			for _, c := range changes {
				if c.Position.Index == tc.Record {
					t.Errorf("bad record %d returned as a change", tc.Record)
				}
			}
		})
	}
}

// An image whose names, strings and binaries alone exceed DynamoDB's item
// limit comes from no table.
func TestOversizedRecord(t *testing.T) {
	_, err := pipeline.DecodeStreamsEvent(read(t, "malformed/streams-oversized-record.json"), pipeline.Options{})
	if err == nil || !strings.Contains(err.Error(), "dynamodb.NewImage: 1100102 bytes of attribute names, strings and binaries: more than DynamoDB's item limit of 409600") {
		t.Fatalf("want the item limit named, got %v", err)
	}
}

func TestConfigurableAttributes(t *testing.T) {
	ev := []byte(`{"Records":[{"eventID":"1","eventName":"INSERT","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/t/stream/x",
	"dynamodb":{"ApproximateCreationDateTime":1767225600,"Keys":{"id":{"S":"a"}},"NewImage":{"id":{"S":"a"},"kind":{"S":"Order"},"rev":{"N":"9"}},
	"SequenceNumber":"100","SizeBytes":10,"StreamViewType":"NEW_AND_OLD_IMAGES"}}]}`)
	cs, err := pipeline.DecodeStreamsEvent(ev, pipeline.Options{Schema: pipeline.Schema{TypeAttribute: "kind", VersionAttribute: "rev"}})
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].NewType != "Order" || cs[0].Version != 9 || !cs[0].HasVersion {
		t.Errorf("got type %q version %d", cs[0].NewType, cs[0].Version)
	}
	cs, _ = pipeline.DecodeStreamsEvent(ev, pipeline.Options{})
	if cs[0].NewType != "" || cs[0].HasVersion {
		t.Errorf("default attribute names should find no type or version, got %q %v", cs[0].NewType, cs[0].HasVersion)
	}
}

package pipeline_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// benchEvent builds a Lambda DynamoDB Streams event of n MODIFY records with
// realistic Order images (old and new), about 1.3 KB a record.
func benchEvent(n int) []byte {
	img := func(i, v int, status string) string {
		return fmt.Sprintf(`{"PK":{"S":"USER#u%d"},"SK":{"S":"ORDER#2026-11-30#o%06d"},"EntityType":{"S":"Order"},"version":{"N":"%d"},`+
			`"status":{"S":"%s"},"total":{"N":"%d.%02d"},"currency":{"S":"EUR"},"orderDate":{"S":"2026-11-30"},"itemCount":{"N":"%d"},`+
			`"customer":{"M":{"name":{"S":"Customer %d"},"email":{"S":"c%d@example.com"},"tier":{"S":"gold"},"marketing":{"BOOL":false}}},`+
			`"lines":{"L":[{"M":{"sku":{"S":"SKU-%d-A"},"qty":{"N":"2"},"price":{"N":"19.99"}}},{"M":{"sku":{"S":"SKU-%d-B"},"qty":{"N":"1"},"price":{"N":"%d.50"}}}]},`+
			`"tags":{"SS":["web","promo-%d"]},"coupon":{"NULL":true},"GSI1PK":{"S":"STATUS#%s"},"GSI1SK":{"S":"2026-11-30T10:%02d:%02dZ#o%06d"}}`,
			i%997, i, v, status, 10+i%400, i%100, 1+i%5, i, i, i, i, i%90, i%7, status, i%60, i%60, i)
	}
	var b strings.Builder
	b.WriteString(`{"Records":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"eventID":"%032x","eventName":"MODIFY","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1",`+
			`"eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000",`+
			`"dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":{"PK":{"S":"USER#u%d"},"SK":{"S":"ORDER#2026-11-30#o%06d"}},`+
			`"NewImage":%s,"OldImage":%s,"SequenceNumber":"442158450000%011d","SizeBytes":1100,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`,
			i, i%997, i, img(i, 2, "PAID"), img(i, 1, "PENDING"), i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// recordsWithin returns the largest record count whose event fits in limit bytes.
func recordsWithin(limit int) int {
	per := len(benchEvent(101)) - len(benchEvent(100))
	n := limit / per
	for len(benchEvent(n)) > limit {
		n--
	}
	return n
}

// baselineDecode is how most Go code decodes the event today: encoding/json
// into aws-lambda-go's events types, then each image converted to SDK
// attribute values.
func baselineDecode(data []byte) ([]pipeline.Item, error) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, err
	}
	out := make([]pipeline.Item, 0, 3*len(ev.Records))
	for _, r := range ev.Records {
		out = append(out, convertImage(r.Change.Keys), convertImage(r.Change.NewImage), convertImage(r.Change.OldImage))
	}
	return out, nil
}

func convertImage(m map[string]events.DynamoDBAttributeValue) pipeline.Item {
	if m == nil {
		return nil
	}
	out := make(pipeline.Item, len(m))
	for k, v := range m {
		out[k] = convertValue(v)
	}
	return out
}

func convertValue(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: convertImage(v.Map())}
	case events.DataTypeList:
		l := make([]types.AttributeValue, len(v.List()))
		for i, e := range v.List() {
			l[i] = convertValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	return nil
}

// TestBaselineAgrees checks the benchmark compares like with like: both paths
// produce the same images from the benchmark event.
func TestBaselineAgrees(t *testing.T) {
	data := benchEvent(50)
	base, err := baselineDecode(data)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := pipeline.DecodeStreamsEvent(data, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range changes {
		for j, img := range []pipeline.Item{c.Keys, c.New, c.Old} {
			got, want := string(pipeline.AppendItem(nil, img)), string(pipeline.AppendItem(nil, base[3*i+j]))
			if got != want {
				t.Fatalf("record %d image %d:\n got %s\nwant %s", i, j, got, want)
			}
		}
	}
}

// BenchmarkDecodeStreamsEvent decodes a 1,000-record event and a full 6 MB
// event (Lambda's payload limit) both ways in the same run; records/s is the
// figure to compare.
func BenchmarkDecodeStreamsEvent(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"1000records", 1000}, {"6MB", 0}}
	for _, size := range sizes {
		if size.n == 0 {
			size.n = recordsWithin(6 << 20)
		}
		data := benchEvent(size.n)
		for _, impl := range []struct {
			name   string
			decode func([]byte) error
		}{
			{"baseline", func(d []byte) error { _, err := baselineDecode(d); return err }},
			{"tributary", func(d []byte) error { _, err := pipeline.DecodeStreamsEvent(d, pipeline.Options{}); return err }},
		} {
			b.Run(fmt.Sprintf("%s/%s", size.name, impl.name), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if err := impl.decode(data); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size.n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

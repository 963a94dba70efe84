package pipeline

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/ddbjson"
)

// AppendItem appends item in DynamoDB JSON ({"name":{"S":"..."},...}) to
// buf, with member names in sorted order so that equal items encode to equal
// bytes. It is the inverse of the decoders' image parsing.
func AppendItem(buf []byte, item Item) []byte {
	names := make([]string, 0, len(item))
	for k := range item {
		names = append(names, k)
	}
	sort.Strings(names)
	buf = append(buf, '{')
	for i, k := range names {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = ddbjson.Quote(buf, k)
		buf = append(buf, ':')
		buf = AppendValue(buf, item[k])
	}
	return append(buf, '}')
}

// AppendValue appends one attribute value in DynamoDB JSON.
func AppendValue(buf []byte, av types.AttributeValue) []byte {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		buf = append(buf, `{"S":`...)
		buf = ddbjson.Quote(buf, v.Value)
	case *types.AttributeValueMemberN:
		buf = append(buf, `{"N":`...)
		buf = ddbjson.Quote(buf, v.Value)
	case *types.AttributeValueMemberB:
		buf = append(buf, `{"B":"`...)
		buf = base64.StdEncoding.AppendEncode(buf, v.Value)
		buf = append(buf, '"')
	case *types.AttributeValueMemberBOOL:
		buf = append(buf, `{"BOOL":`...)
		buf = strconv.AppendBool(buf, v.Value)
	case *types.AttributeValueMemberNULL:
		buf = append(buf, `{"NULL":true`...)
	case *types.AttributeValueMemberSS:
		buf = append(buf, `{"SS":[`...)
		for i, s := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = ddbjson.Quote(buf, s)
		}
		buf = append(buf, ']')
	case *types.AttributeValueMemberNS:
		buf = append(buf, `{"NS":[`...)
		for i, s := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = ddbjson.Quote(buf, s)
		}
		buf = append(buf, ']')
	case *types.AttributeValueMemberBS:
		buf = append(buf, `{"BS":[`...)
		for i, b := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '"')
			buf = base64.StdEncoding.AppendEncode(buf, b)
			buf = append(buf, '"')
		}
		buf = append(buf, ']')
	case *types.AttributeValueMemberM:
		buf = append(buf, `{"M":`...)
		buf = AppendItem(buf, v.Value)
	case *types.AttributeValueMemberL:
		buf = append(buf, `{"L":[`...)
		for i, e := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendValue(buf, e)
		}
		buf = append(buf, ']')
	default:
		buf = append(buf, `{"NULL":true`...)
	}
	return append(buf, '}')
}

// KeyValue renders a key attribute's value for people, as DynamoDB JSON
// writes it: an S or an N as it is, a B in base64 (the types a key can
// have); any other value in DynamoDB JSON, nil as "<nil>".
func KeyValue(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value)
	case nil:
		return "<nil>"
	}
	return string(AppendValue(nil, av))
}

// ItemKey is the canonical identity of a source item: its key attributes in
// DynamoDB JSON with sorted names. Equal keys give equal strings, whichever
// source the change came from.
func ItemKey(keys Item) string { return string(AppendItem(nil, keys)) }

// MarshalJSON renders the change as one JSON object, the form
// `tributary decode` prints: images in DynamoDB JSON, the version as a
// string (as the images' numbers are), the time in RFC 3339 at the source's
// precision.
func (c Change) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil), nil }

// AppendJSON appends the MarshalJSON form of c to buf.
func (c *Change) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"kind":`...)
	buf = ddbjson.Quote(buf, c.Kind.String())
	field := func(name string) {
		buf = append(buf, ',', '"')
		buf = append(buf, name...)
		buf = append(buf, '"', ':')
	}
	field("keys")
	buf = AppendItem(buf, c.Keys)
	if c.Old != nil {
		field("old")
		buf = AppendItem(buf, c.Old)
	}
	if c.New != nil {
		field("new")
		buf = AppendItem(buf, c.New)
	}
	if c.OldType != "" {
		field("oldType")
		buf = ddbjson.Quote(buf, c.OldType)
	}
	if c.NewType != "" {
		field("newType")
		buf = ddbjson.Quote(buf, c.NewType)
	}
	if c.HasVersion {
		// A string, as the images' numbers are: a reader that parses JSON
		// numbers as floats would round a version past 2^53.
		field("version")
		buf = append(buf, '"')
		buf = strconv.AppendInt(buf, c.Version, 10)
		buf = append(buf, '"')
	}
	field("source")
	buf = ddbjson.Quote(buf, c.Position.Source.String())
	if c.Position.Stream != "" {
		field("stream")
		buf = ddbjson.Quote(buf, c.Position.Stream)
	}
	if c.Position.Shard != "" {
		field("shard")
		buf = ddbjson.Quote(buf, c.Position.Shard)
	}
	if c.Position.SequenceNumber != "" {
		field("seq")
		buf = ddbjson.Quote(buf, c.Position.SequenceNumber)
	}
	field("index")
	buf = strconv.AppendInt(buf, int64(c.Position.Index), 10)
	if !c.Time.IsZero() {
		field("time")
		buf = ddbjson.Quote(buf, formatTime(c.Time, c.Precision))
		field("precision")
		buf = ddbjson.Quote(buf, c.Precision.String())
	}
	if c.EventID != "" {
		field("eventId")
		buf = ddbjson.Quote(buf, c.EventID)
	}
	if c.TTL {
		field("ttl")
		buf = append(buf, "true"...)
	}
	if c.Table != "" {
		field("table")
		buf = ddbjson.Quote(buf, c.Table)
	}
	if c.Region != "" {
		field("region")
		buf = ddbjson.Quote(buf, c.Region)
	}
	if c.SizeBytes != 0 {
		field("sizeBytes")
		buf = strconv.AppendInt(buf, c.SizeBytes, 10)
	}
	return append(buf, '}')
}

func formatTime(t time.Time, p Precision) string {
	switch p {
	case Second:
		return t.UTC().Format(time.RFC3339)
	case Millisecond:
		return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

var _ fmt.Stringer = Kind(0)

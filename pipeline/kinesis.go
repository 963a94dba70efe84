package pipeline

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/internal/ddbjson"
)

// kinesisRecord reads one record of a Lambda Kinesis event and the DynamoDB
// change record its data carries.
func (d *dec) kinesisRecord(c *Change) (seq, id string) {
	s := &d.s
	if s.peek() != '{' {
		d.semantic("record: want object, got %s", s.kind())
		s.skip()
		return "", ""
	}
	s.pos++
	c.Position.Source = SourceKinesis
	var (
		data    []byte
		hasData bool
		names   ddbjson.Names
	)
	for n := 0; s.next('}', &n); {
		k := s.key()
		if d.dup(&names, k, 0) {
			continue
		}
		switch string(k) {
		case "eventID":
			d.member(k)
			id = d.optString()
			if shard, _, ok := strings.Cut(id, ":"); ok {
				c.Position.Shard = shard
			}
		case "eventSourceARN":
			d.member(k)
			c.Position.Stream = d.optString()
		case "awsRegion":
			d.member(k)
			c.Region = d.optString()
		case "kinesis":
			d.member(k)
			for k2 := range d.members(1) {
				switch string(k2) {
				case "sequenceNumber":
					d.path = append(d.path[:1], pathElem{name: k2})
					seq = d.optString()
				case "data":
					d.path = append(d.path[:1], pathElem{name: k2})
					hasData = true
					if s.peek() != '"' {
						d.semantic("want base64 string, got %s", s.kind())
						s.skip()
						continue
					}
					b := s.strBytes()
					if s.err != nil {
						continue
					}
					data = d.kinesisData(data, b)
				default:
					s.skip()
				}
			}
		default:
			s.skip()
		}
	}
	d.path = d.path[:0]
	if s.err != nil || d.recErr != nil {
		return seq, id
	}
	if seq == "" {
		d.semanticAt("kinesis.sequenceNumber", "missing")
		return seq, id
	}
	c.Position.SequenceNumber = seq
	if !hasData {
		d.semanticAt("kinesis.data", "missing")
		return seq, id
	}
	d.payload(c, data, "kinesis.data")
	return seq, id
}

// kinesisData base64-decodes a record's data into the decoder's buffer.
func (d *dec) kinesisData(dst, b []byte) []byte {
	n := base64.StdEncoding.DecodedLen(len(b))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	m, err := base64.StdEncoding.Decode(dst, b)
	if err != nil {
		d.semantic("invalid base64: %v", err)
		return nil
	}
	return dst[:m]
}

// payload decodes the JSON that DynamoDB's Kinesis streaming destination
// writes into one Kinesis record's data. prefix names it in error paths.
func (d *dec) payload(c *Change, data []byte, prefix string) {
	outer := d.s
	defer func() { tmp := d.s.tmp; d.s = outer; d.s.tmp = tmp }()
	s := &d.s
	s.reset(data, payloadEnvelope)
	d.path = append(d.path[:0], pathElem{name: []byte(prefix)})
	if s.peek() != '{' {
		d.semantic("%s", notObject(data))
		return
	}
	s.pos++
	var name string
	hasDDB := false
	var names ddbjson.Names
	for n := 0; s.next('}', &n); {
		k := s.key()
		if d.dup(&names, k, 1) {
			continue
		}
		d.path = append(d.path[:1], pathElem{name: k})
		switch string(k) {
		case "eventID":
			c.EventID = d.optString()
		case "eventName":
			name = d.optString()
		case "awsRegion":
			if r := d.optString(); r != "" {
				c.Region = r
			}
		case "tableName":
			c.Table = d.optString()
		case "userIdentity":
			c.TTL = d.userIdentity()
		case "dynamodb":
			hasDDB = true
			d.streamRecord(c, Millisecond)
		default:
			s.skip()
		}
	}
	s.end()
	if s.err != nil {
		var se *syntaxError
		if errors.As(s.err, &se) {
			d.semanticAt(prefix, "not a DynamoDB change record: "+se.Error())
		}
		return
	}
	if d.recErr != nil {
		return
	}
	if !hasDDB {
		d.semanticAt(prefix+".dynamodb", "missing")
		return
	}
	if name == "" {
		d.semanticAt(prefix+".eventName", "missing")
		return
	}
	if c.Time.IsZero() {
		d.semanticAt(prefix+".dynamodb.ApproximateCreationDateTime", "missing")
		return
	}
	// The streaming destination always writes the images that apply.
	d.finish(c, name, "NEW_AND_OLD_IMAGES", prefix+".dynamodb")
	if d.recErr != nil && d.recErr.Path == "eventName" {
		d.recErr.Path = prefix + ".eventName"
	}
}

// FromKinesisRecord decodes a record read with the Kinesis API (GetRecords)
// from a stream fed by DynamoDB's Kinesis streaming destination. stream and
// shard fill in the Position. The error is a *RecordError.
func FromKinesisRecord(r ktypes.Record, stream, shard string, opts Options) (Change, error) {
	d := newDec(opts, maxKinesisDataBytes)
	var c Change
	c.Position = Position{Source: SourceKinesis, Stream: stream, Shard: shard}
	if r.SequenceNumber != nil {
		c.Position.SequenceNumber = *r.SequenceNumber
	}
	if len(r.Data) > d.opts.MaxRecordBytes {
		d.semanticAt("data", fmt.Sprintf("%d bytes, over the limit of %d", len(r.Data), d.opts.MaxRecordBytes))
	} else {
		d.payload(&c, r.Data, "data")
	}
	if d.recErr != nil {
		return Change{}, &RecordError{SequenceNumber: c.Position.SequenceNumber, EventID: c.EventID, Err: d.recErr}
	}
	return c, nil
}

package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tributary/tributary/internal/quote"
)

// Format is a form of change records the decoders read.
type Format uint8

// The formats, named as `tributary decode --format` names them.
const (
	FormatUnknown      Format = iota
	FormatStreamsEvent        // "streams": a Lambda DynamoDB Streams event (DecodeStreamsEvent)
	FormatKinesisEvent        // "kinesis": a Lambda Kinesis event (DecodeKinesisEvent)
	FormatStreamsAPI          // "streams-api": a Streams GetRecords response body (DecodeStreamsAPIResponse)
	FormatExport              // "export": export data file lines in DYNAMODB_JSON (ExportDecoder)
)

// String returns the format's name: streams, kinesis, streams-api or export.
func (f Format) String() string {
	switch f {
	case FormatStreamsEvent:
		return "streams"
	case FormatKinesisEvent:
		return "kinesis"
	case FormatStreamsAPI:
		return "streams-api"
	case FormatExport:
		return "export"
	}
	return "unknown"
}

// ErrShortPrefix is returned when the bytes DetectFormat was given end
// before the format shows: more of the payload may tell.
var ErrShortPrefix = errors.New("ends before the format shows")

// ErrION is returned for an export in Amazon ION, which the decoders do not
// read: export the table in DYNAMODB_JSON.
var ErrION = errors.New("ION is not supported: export the table in DYNAMODB_JSON")

// DetectFormat tells the formats apart by their structure, from the start
// of a payload or file (prefix; the whole of it is best): an object with
// NextShardIterator is a GetRecords response; one with Records is an event,
// Kinesis or DynamoDB Streams as its first record says (its eventSource,
// aws:kinesis or aws:dynamodb, or which of the kinesis and dynamodb members
// it has, whichever comes first); an object with Item, Keys, NewImage,
// OldImage or Metadata is an export line. Only the members
// of the event and of its first record count, never what items hold: an
// attribute named kinesis, or a value "aws:kinesis", changes nothing.
//
// A DynamoDB Streams record without eventSourceARN (which Lambda always
// writes) is taken for a GetRecords response if NextShardIterator follows.
// The error says what the payload is instead (not JSON, ION, an array...),
// or that prefix ends before the format shows.
func DetectFormat(prefix []byte) (Format, error) {
	data := bytes.TrimLeft(prefix, " \t\r\n")
	switch {
	case len(data) == 0:
		return FormatUnknown, errors.New("empty")
	case isION(data):
		return FormatUnknown, ErrION
	case data[0] != '{':
		return FormatUnknown, errors.New(notObject(data))
	}
	dt := &detector{dec: json.NewDecoder(bytes.NewReader(data))}
	f, err := dt.top()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if f != FormatUnknown {
				return f, nil // decided, but for what would have followed
			}
			return FormatUnknown, fmt.Errorf("the first %d bytes: %w", len(prefix), ErrShortPrefix)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return FormatUnknown, fmt.Errorf("not JSON: %v at byte %d", se, se.Offset+int64(len(prefix)-len(data)))
		}
		return FormatUnknown, err
	}
	return f, nil
}

// isION reports whether data starts an Amazon ION document: the text
// form's version marker, or the binary form's.
func isION(data []byte) bool {
	return bytes.HasPrefix(data, []byte("$ion_1_0")) || bytes.HasPrefix(data, []byte{0xe0, 0x01, 0x00, 0xea})
}

// notObject says what data, which should be a JSON object, is instead:
// ION, JSON of another kind, or not JSON at all (quoting its start).
func notObject(data []byte) string {
	data = bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(data) == 0:
		return "empty"
	case isION(data):
		return ErrION.Error()
	case !json.Valid(data):
		return "not JSON: starts with " + quote.Bytes(data[:min(len(data), 16)])
	}
	kind := "a JSON number"
	switch data[0] {
	case '{':
		kind = "a JSON object"
	case '[':
		kind = "a JSON array"
	case '"':
		kind = "a JSON string"
	case 't', 'f':
		kind = "a JSON boolean"
	case 'n':
		kind = "JSON null"
	}
	return "want a JSON object, got " + kind
}

type detector struct {
	dec      *json.Decoder
	recorded Format // what the first record says, once read
}

// top reads the event's top-level members until the format shows.
func (dt *detector) top() (Format, error) {
	d := dt.dec
	if _, err := d.Token(); err != nil { // {
		return FormatUnknown, err
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return dt.recorded, err
		}
		switch key, _ := tok.(string); key {
		case "Item", "Keys", "NewImage", "OldImage", "Metadata":
			return FormatExport, nil
		case "NextShardIterator":
			return FormatStreamsAPI, nil
		case "Records":
			if dt.recorded != FormatUnknown {
				if err := skip(d); err != nil {
					return dt.recorded, err
				}
				continue
			}
			f, lambda, err := dt.records()
			if err != nil {
				return f, err // f, if the first record showed it before the prefix ended
			}
			if f == FormatKinesisEvent || lambda {
				return f, nil
			}
			dt.recorded = f // Streams: an event, or a GetRecords body if NextShardIterator follows
		default:
			if err := skip(d); err != nil {
				return dt.recorded, err
			}
		}
	}
	if dt.recorded == FormatUnknown {
		return FormatUnknown, errors.New("neither an event (Records), a GetRecords response (NextShardIterator) nor an export line (Item, or Keys and images)")
	}
	return dt.recorded, nil
}

// records reads Records up to its first record's telling member. lambda
// reports a Streams record with eventSourceARN, which only Lambda writes.
func (dt *detector) records() (f Format, lambda bool, err error) {
	d := dt.dec
	tok, err := d.Token()
	if err != nil {
		return FormatUnknown, false, err
	}
	if tok == nil {
		return FormatStreamsEvent, false, nil // null: no records, either form
	}
	if tok != json.Delim('[') {
		return FormatUnknown, false, fmt.Errorf("want Records to be an array, got %v", tok)
	}
	if !d.More() {
		return FormatStreamsEvent, false, nil // no records: either form decodes to nothing
	}
	if tok, err = d.Token(); err != nil {
		return FormatUnknown, false, err
	}
	if tok != json.Delim('{') {
		return FormatUnknown, false, fmt.Errorf("Records[0]: want an object, got %v", tok)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return f, lambda, err
		}
		switch key, _ := tok.(string); key {
		case "eventSource":
			if f != FormatUnknown {
				if err := skip(d); err != nil {
					return f, lambda, err
				}
				continue
			}
			var src string
			if err := d.Decode(&src); err != nil {
				return FormatUnknown, false, fmt.Errorf("Records[0].eventSource: %w", err)
			}
			switch src {
			case "aws:kinesis":
				return FormatKinesisEvent, false, nil
			case "aws:dynamodb":
				f = FormatStreamsEvent
				if lambda {
					return f, lambda, nil
				}
			default:
				return FormatUnknown, false, fmt.Errorf("Records[0].eventSource %s: neither aws:dynamodb nor aws:kinesis", quote.Value(src))
			}
		case "kinesis":
			if f == FormatUnknown {
				return FormatKinesisEvent, false, nil
			}
			if err := skip(d); err != nil {
				return f, lambda, err
			}
		case "dynamodb":
			if f == FormatUnknown {
				f = FormatStreamsEvent
				if lambda {
					return f, lambda, nil
				}
			}
			if err := skip(d); err != nil {
				return f, lambda, err
			}
		case "eventSourceARN":
			lambda = true
			if f != FormatUnknown {
				return f, lambda, nil
			}
			if err := skip(d); err != nil {
				return f, lambda, err
			}
		default:
			if err := skip(d); err != nil {
				return f, lambda, err
			}
		}
	}
	if f == FormatUnknown {
		return FormatUnknown, false, errors.New("Records[0] has no eventSource, kinesis or dynamodb member: not a stream record")
	}
	// Skip the other records to reach what follows Records.
	if _, err := d.Token(); err != nil { // } of record 0
		return f, lambda, err
	}
	for d.More() {
		if err := skip(d); err != nil {
			return f, lambda, err
		}
	}
	_, err = d.Token() // ]
	return f, lambda, err
}

// skip reads one value and discards it.
func skip(d *json.Decoder) error {
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

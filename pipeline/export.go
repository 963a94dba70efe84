package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/ddbjson"
)

// ExportDecoder decodes the lines of DynamoDB export data files in the
// DYNAMODB_JSON format: full exports ({"Item":{...}}) and incremental exports
// ({"Metadata":{"WriteTimestampMicros":{"N":"..."}},"Keys":{...},"OldImage":{...},"NewImage":{...}}).
// It reuses its buffers from line to line and is not safe for concurrent use.
type ExportDecoder struct {
	d *dec
	// ExportTime is the time given to full-export lines, which carry none.
	ExportTime time.Time
}

// NewExportDecoder returns a decoder for export lines.
func NewExportDecoder(opts Options) *ExportDecoder {
	return &ExportDecoder{d: newDec(opts, MaxExportLineBytes)}
}

// Options returns the options the decoder applies, defaults filled in.
func (e *ExportDecoder) Options() Options { return e.d.opts }

// Decode decodes one line. A full-export line becomes an Insert of the item
// (keys taken from Options.KeyAttributes); an incremental line becomes an
// Insert, Modify or Remove as its images say, timed by Metadata.WriteTimestampMicros.
// A line that mixes the two (Item beside Keys, NewImage, OldImage or
// Metadata) is neither. file and line fill in the Position (line counts
// from 1). The error is a *RecordError naming the line.
func (e *ExportDecoder) Decode(data []byte, file string, line int) (Change, error) {
	return e.decode(data, file, line, false)
}

// DecodeItem decodes a line of a full export, {"Item":{...}}, as Decode
// does; an incremental export's line is an error.
func (e *ExportDecoder) DecodeItem(data []byte, file string, line int) (Change, error) {
	return e.decode(data, file, line, true)
}

func (e *ExportDecoder) decode(data []byte, file string, line int, fullOnly bool) (Change, error) {
	d := e.d
	s := &d.s
	s.reset(data, exportEnvelope)
	d.recErr = nil
	d.path = d.path[:0]
	c := Change{Position: Position{Source: SourceExport, Stream: file, Index: line - 1}}
	fail := func(err error) (Change, error) {
		return Change{}, &RecordError{Index: line - 1, File: file, Line: line, Err: err}
	}
	if len(data) > d.opts.MaxRecordBytes {
		return fail(&FieldError{Msg: fmt.Sprintf("line is %d bytes, over the limit of %d", len(data), d.opts.MaxRecordBytes)})
	}
	if s.peek() != '{' {
		if s.peek() == 0 {
			return fail(errors.New("empty line"))
		}
		return fail(errors.New(notObject(data)))
	}
	s.pos++
	var micros []byte
	full := false
	incremental := "" // the first member of an incremental line's
	var names ddbjson.Names
	for n := 0; s.next('}', &n); {
		k := s.key()
		if d.dup(&names, k, 0) {
			continue
		}
		d.path = append(d.path[:0], pathElem{name: k})
		switch string(k) {
		case "Keys", "NewImage", "OldImage", "Metadata":
			if incremental == "" {
				incremental = string(k)
			}
		}
		switch string(k) {
		case "Item":
			full = true
			c.New = d.image()
		case "Keys":
			c.Keys = d.image()
		case "NewImage":
			if !s.isNull() {
				c.New = d.image()
			}
		case "OldImage":
			if !s.isNull() {
				c.Old = d.image()
			}
		case "Metadata":
			for k2 := range d.members(1) {
				if string(k2) != "WriteTimestampMicros" {
					s.skip()
					continue
				}
				d.path = append(d.path[:1], pathElem{name: k2})
				if av, ok := d.value(0).(*types.AttributeValueMemberN); ok {
					micros = append(micros[:0], av.Value...)
				} else if d.recErr == nil {
					d.semantic("want a number attribute value")
				}
			}
		default:
			s.skip()
		}
	}
	s.end()
	if s.err != nil {
		return fail(s.err)
	}
	if d.recErr != nil {
		return fail(d.recErr)
	}
	switch {
	case full && incremental != "":
		return fail(&FieldError{Path: incremental, Msg: "beside Item: a line is a full export's item or an incremental export's change, not both"})
	case fullOnly && !full && incremental != "":
		return fail(&FieldError{Path: incremental, Msg: "an incremental-export line in a full export"})
	case fullOnly && !full:
		return fail(&FieldError{Path: "Item", Msg: "missing (want {\"Item\":{...}})"})
	case full:
		if c.New == nil {
			return fail(&FieldError{Path: "Item", Msg: "want object of attribute values"})
		}
		c.Kind = Insert
		c.Keys = keysOf(c.New, d.opts.KeyAttributes)
		if len(c.Keys) == 0 {
			return fail(&FieldError{Path: "Item", Msg: fmt.Sprintf("item has none of the key attributes %v", d.opts.KeyAttributes)})
		}
		if !e.ExportTime.IsZero() {
			c.Time, c.Precision = e.ExportTime, Microsecond
		}
	case c.Keys == nil && c.New == nil && c.Old == nil:
		return fail(&FieldError{Msg: "neither Item nor Keys, NewImage or OldImage"})
	default:
		if c.Keys == nil {
			return fail(&FieldError{Path: "Keys", Msg: "missing"})
		}
		switch {
		case c.New == nil:
			c.Kind = Remove
		case c.Old == nil:
			c.Kind = Insert
		default:
			c.Kind = Modify
		}
		if micros != nil {
			v, err := strconv.ParseInt(string(micros), 10, 64)
			if err != nil || v < 0 {
				return fail(&FieldError{Path: "Metadata.WriteTimestampMicros.N", Msg: fmt.Sprintf("%s is not a non-negative integer", micros)})
			}
			c.Time, c.Precision = time.UnixMicro(v).UTC(), Microsecond
		}
	}
	d.derive(&c, "")
	if d.recErr != nil {
		if len(d.recErr.Path) > 0 && d.recErr.Path[0] == '.' {
			d.recErr.Path = d.recErr.Path[1:]
		}
		if full {
			d.recErr.Path = "Item" + d.recErr.Path[len("NewImage"):]
		}
		return fail(d.recErr)
	}
	return c, nil
}

// keysOf returns the key attributes of an item.
func keysOf(item Item, names []string) Item {
	out := make(Item, len(names))
	for _, k := range names {
		if v, ok := item[k]; ok {
			out[k] = v
		}
	}
	return out
}

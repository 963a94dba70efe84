package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/ddbjson"
	"github.com/tributary/tributary/internal/quote"
)

// Options configures decoding. The zero value is ready to use.
type Options struct {
	// Schema names the attributes the decoders read: the entity type, the
	// version, and the key attributes where a source gives whole items but
	// no keys (full export lines).
	Schema
	// MaxRecordBytes rejects a record whose JSON is larger: a record of a
	// Lambda event, the data of a Kinesis record, an export line. The
	// default, and the most it can be, is the format's limit, which no
	// record AWS writes exceeds: maxLambdaRecordBytes for the records of
	// Lambda events, maxStreamsRecordBytes for those of a Streams GetRecords
	// response, maxKinesisDataBytes for a Kinesis record's data,
	// MaxExportLineBytes for export lines.
	MaxRecordBytes int
}

// withDefaults fills in the defaults; limit is the format's record limit.
func (o Options) withDefaults(limit int) Options {
	o.Schema = o.Schema.WithDefaults()
	if o.MaxRecordBytes <= 0 || o.MaxRecordBytes > limit {
		o.MaxRecordBytes = limit
	}
	return o
}

// RecordError is one record that could not be decoded. The rest of its batch
// decodes normally. It is permanent: retrying cannot fix it.
type RecordError struct {
	Index          int    // place in the batch, from 0
	SequenceNumber string // when the record's sequence number could be read
	EventID        string // when it could be read
	Shard          string // when the record says it (a Kinesis event ID does)
	// File and Line name an export line (Index is Line-1).
	File string
	Line int
	Err  error // usually a *FieldError
}

// Error names the record once: "record 1 (seq 4421…, event 9f…): path:
// msg", or for an export line "data.json line 2: path: msg".
func (e *RecordError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s line %d: %v", e.File, e.Line, e.Err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "record %d", e.Index)
	var ids []string
	switch {
	case e.Shard != "" && e.EventID == e.Shard+":"+e.SequenceNumber:
		// A Kinesis event ID is the shard and the sequence number.
		ids = append(ids, "shard "+quote.ID(e.Shard), "seq "+quote.ID(e.SequenceNumber))
	default:
		if e.SequenceNumber != "" {
			ids = append(ids, "seq "+quote.ID(e.SequenceNumber))
		}
		if e.EventID != "" {
			ids = append(ids, "event "+quote.ID(e.EventID))
		}
	}
	if len(ids) > 0 {
		b.WriteString(" (" + strings.Join(ids, ", ") + ")")
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *RecordError) Unwrap() error { return e.Err }

// Is makes every RecordError match ErrPermanent.
func (e *RecordError) Is(target error) bool { return target == ErrPermanent }

// DecodeError lists the records of a batch that could not be decoded. A
// decoder returns it together with every record that did decode.
type DecodeError struct {
	Records []*RecordError
}

func (e *DecodeError) Error() string {
	if len(e.Records) == 1 {
		return "pipeline: " + e.Records[0].Error()
	}
	return fmt.Sprintf("pipeline: %d records could not be decoded; first: %v", len(e.Records), e.Records[0])
}

// Unwrap returns the record errors, for errors.Is and errors.As.
func (e *DecodeError) Unwrap() []error {
	out := make([]error, len(e.Records))
	for i, r := range e.Records {
		out[i] = r
	}
	return out
}

// DecodeStreamsEvent decodes a Lambda DynamoDB Streams event
// ({"Records":[...]}) straight from its bytes into Changes, in record order.
//
// A record that is valid JSON but not a valid change is left out of the result
// and reported in a *DecodeError, with its index and sequence number, while
// every other record is returned: one bad record never hides the good ones.
// A payload that is not valid JSON, or not an event, gives no changes and a
// plain error.
func DecodeStreamsEvent(data []byte, opts Options) ([]Change, error) {
	d := newDec(opts, maxLambdaRecordBytes)
	return d.event(data, d.streamsRecord)
}

// DecodeKinesisEvent decodes a Lambda Kinesis event whose records carry
// DynamoDB change records, as DynamoDB's Kinesis streaming destination writes
// them (base64 JSON, no DynamoDB sequence number, millisecond or microsecond
// times). Position.SequenceNumber is the Kinesis sequence number, which
// Lambda's partial batch response names. Errors are as for DecodeStreamsEvent.
func DecodeKinesisEvent(data []byte, opts Options) ([]Change, error) {
	d := newDec(opts, maxLambdaRecordBytes)
	return d.event(data, d.kinesisRecord)
}

// DecodeStreamsAPIResponse decodes the JSON body of a DynamoDB Streams
// GetRecords response ({"Records":[...],"NextShardIterator":...}) as it is
// captured from the API. stream and shard fill in the Position, which the body
// does not carry. Errors are as for DecodeStreamsEvent.
func DecodeStreamsAPIResponse(data []byte, stream, shard string, opts Options) ([]Change, error) {
	d := newDec(opts, maxStreamsRecordBytes)
	d.api = true
	changes, err := d.event(data, d.streamsRecord)
	for i := range changes {
		if changes[i].Position.Stream == "" {
			changes[i].Position.Stream = stream
		}
		changes[i].Position.Shard = shard
	}
	return changes, err
}

type recordFunc func(c *Change) (seq, id string)

// event reads {"Records":[...]} and decodes each record with rec.
func (d *dec) event(data []byte, rec recordFunc) ([]Change, error) {
	s := &d.s
	s.reset(data, eventEnvelope)
	if c := s.peek(); c != '{' {
		if c == 0 {
			return nil, notEvent(errors.New("pipeline: event is empty"))
		}
		return nil, notEvent(errors.New("pipeline: event: " + notObject(data)))
	}
	var (
		changes []Change
		bad     []*RecordError
		seen    bool
		names   ddbjson.Names
	)
	s.pos++
	for n := 0; s.next('}', &n); {
		k := s.key()
		if s.err == nil && !names.AddCopy(k) {
			return nil, fmt.Errorf("pipeline: event: %s: given twice", k)
		}
		if string(k) != "Records" {
			s.skip()
			continue
		}
		seen = true
		if s.isNull() {
			continue
		}
		if s.peek() != '[' {
			return nil, notEvent(fmt.Errorf("pipeline: event: Records: want array, got %s", s.kind()))
		}
		s.pos++
		changes = make([]Change, 0, estimateRecords(len(data)))
		for i := 0; s.next(']', &i); {
			idx := i - 1
			start := s.pos
			changes = append(changes, Change{})
			c := &changes[len(changes)-1]
			c.Position.Index = idx
			d.recErr = nil
			d.path = d.path[:0]
			seq, id := rec(c)
			if s.err != nil {
				break
			}
			if d.recErr == nil && s.pos-start > d.opts.MaxRecordBytes {
				d.recErr = &FieldError{Msg: fmt.Sprintf("record is %d bytes, over the limit of %d", s.pos-start, d.opts.MaxRecordBytes)}
			}
			if d.recErr != nil {
				bad = append(bad, &RecordError{Index: idx, SequenceNumber: seq, EventID: id, Shard: c.Position.Shard, Err: d.recErr})
				changes = changes[:len(changes)-1]
			}
		}
	}
	s.end()
	if s.err != nil {
		return nil, notEvent(fmt.Errorf("pipeline: event: %w", s.err))
	}
	if !seen {
		return nil, notEvent(errors.New("pipeline: event: no Records member"))
	}
	if bad != nil {
		return changes, &DecodeError{Records: bad}
	}
	return changes, nil
}

// estimateRecords guesses a batch's record count from its size, to size the
// result slice once.
func estimateRecords(n int) int {
	e := n/1200 + 1
	if e > 10000 {
		e = 10000
	}
	return e
}

func (d *dec) member(k []byte) { d.path = append(d.path[:0], pathElem{name: k}) }

// dup reports whether the member name k was given before in the object
// whose names are in names, and whose path is d.path[:depth]. If so it
// records a field error naming the member and skips its value, so that the
// first value given stays in effect for the record's error report.
func (d *dec) dup(names *ddbjson.Names, k []byte, depth int) bool {
	if d.s.err != nil || names.AddCopy(k) {
		return false
	}
	d.path = append(d.path[:depth], pathElem{name: k})
	d.semantic("given twice")
	d.path = d.path[:depth]
	d.s.skip()
	return true
}

// members reads the object that is a member's value, at path depth depth
// (its members' paths are d.path[:depth] and their names), and yields the
// name of each member the caller reads the value of. A value that is not
// an object is a field error and is skipped; a name given twice is one
// too (dup).
func (d *dec) members(depth int) func(yield func(k []byte) bool) {
	return func(yield func(k []byte) bool) {
		s := &d.s
		if s.peek() != '{' {
			d.semantic("want object, got %s", s.kind())
			s.skip()
			return
		}
		s.pos++
		var names ddbjson.Names
		for n := 0; s.next('}', &n); {
			k := s.key()
			if d.dup(&names, k, depth) {
				continue
			}
			if !yield(k) {
				return
			}
		}
	}
}

// streamsRecord reads one DynamoDB Streams record (Lambda event or API form).
func (d *dec) streamsRecord(c *Change) (seq, id string) {
	s := &d.s
	if s.peek() != '{' {
		d.semantic("record: want object, got %s", s.kind())
		s.skip()
		return "", ""
	}
	s.pos++
	c.Position.Source = SourceStreams
	var (
		name     string
		hasDDB   bool
		viewType string
		names    ddbjson.Names
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
			c.EventID = id
		case "eventName":
			d.member(k)
			name = d.optString()
		case "awsRegion":
			d.member(k)
			c.Region = d.optString()
		case "eventSourceARN":
			d.member(k)
			c.Position.Stream = d.optString()
			c.Table = tableFromStreamARN(c.Position.Stream)
		case "userIdentity":
			d.member(k)
			c.TTL = d.userIdentity()
		case "dynamodb":
			d.member(k)
			hasDDB = true
			seq, viewType = d.streamRecord(c, Second)
		default:
			s.skip()
		}
	}
	d.path = d.path[:0]
	if s.err != nil || d.recErr != nil {
		return seq, id
	}
	if !hasDDB {
		d.semantic("dynamodb: missing")
		return seq, id
	}
	if seq == "" {
		d.path = append(d.path, pathElem{name: []byte("dynamodb")}, pathElem{name: []byte("SequenceNumber")})
		d.semantic("missing")
		return seq, id
	}
	c.Position.SequenceNumber = seq
	d.finish(c, name, viewType, "dynamodb")
	return seq, id
}

// streamRecord reads the "dynamodb" object. unit is the time unit of
// ApproximateCreationDateTime when the record does not say.
func (d *dec) streamRecord(c *Change, unit Precision) (seq, viewType string) {
	s := &d.s
	var rawTime []byte
	var precision string
	timeString := false
	for k := range d.members(len(d.path)) {
		d.push(k)
		switch string(k) {
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
		case "SequenceNumber":
			seq = d.optString()
			if seq != "" && !allDigits(seq) {
				d.semantic("%s is not a sequence number", quote.Value(seq))
			}
		case "SizeBytes":
			if s.peek() == '"' || s.peek() == '{' || s.peek() == '[' {
				d.semantic("want number, got %s", s.kind())
				s.skip()
			} else if !s.isNull() {
				v, ok := s.int64()
				if !ok || v < 0 {
					d.semantic("want a non-negative integer")
				}
				c.SizeBytes = v
			}
		case "StreamViewType":
			viewType = d.optString()
		case "ApproximateCreationDateTime":
			switch s.peek() {
			case '"':
				if !d.api {
					// A Lambda event's time is a JSON number; so is one the
					// streaming destination writes.
					d.semantic("want a number of %s, got a string: Lambda writes a JSON number", unitName(unit))
					s.skip()
					break
				}
				// A GetRecords body read back from the AWS CLI or the API
				// reference has it as a string, which boto3 and the AWS SDK
				// for JavaScript read too.
				rawTime, timeString = append(rawTime[:0], s.strBytes()...), true
			case '{', '[', 't', 'f':
				d.semantic("want number, got %s", s.kind())
				s.skip()
			default:
				if !s.isNull() {
					rawTime = append(rawTime[:0], s.number()...)
				}
			}
		case "ApproximateCreationDateTimePrecision":
			precision = d.optString()
		default:
			s.skip()
		}
		d.pop()
	}
	if s.err != nil || d.recErr != nil {
		return seq, viewType
	}
	switch precision {
	case "", "MILLISECOND", "MICROSECOND":
	default:
		d.semanticAt(d.pathString()+".ApproximateCreationDateTimePrecision", "unknown precision "+quote.Value(precision))
		return seq, viewType
	}
	if rawTime != nil {
		d.push([]byte("ApproximateCreationDateTime"))
		if timeString {
			d.setTimeString(c, rawTime)
		} else {
			d.setTime(c, rawTime, unit, precision)
		}
		d.pop()
	}
	return seq, viewType
}

func unitName(p Precision) string {
	switch p {
	case Second:
		return "seconds"
	case Millisecond:
		return "milliseconds"
	}
	return "microseconds"
}

// Epoch times AWS writes have these many digits: 10 in seconds, 13 in
// milliseconds, 16 in microseconds, from 2001-09-09 to 2286-11-20 (DynamoDB
// Streams started in 2014, Kinesis destinations in 2020).
const (
	minEpochSeconds = 1e9
	maxEpochSeconds = 1e10
)

// digitsUnit names the unit an epoch time of n integer digits is in.
func digitsUnit(n int) string {
	switch n {
	case 10:
		return "a time in seconds"
	case 13:
		return "a time in milliseconds"
	case 16:
		return "a time in microseconds"
	case 19:
		return "a time in nanoseconds"
	}
	return "no epoch time of this century"
}

// setTime interprets ApproximateCreationDateTime. Streams gives epoch seconds
// (an integer from Lambda, possibly fractional from the API); Kinesis gives
// milliseconds, or microseconds when the precision says MICROSECOND. A time
// of any other size is in a unit the source does not write (a Kinesis time
// in seconds would otherwise land in 1970) and is refused, saying what it
// looks like.
func (d *dec) setTime(c *Change, raw []byte, unit Precision, precision string) {
	if unit == Second {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f < minEpochSeconds || f >= maxEpochSeconds {
			why := "not a time from 2001 to 2286"
			if err == nil && f >= 1 && f < 1e20 {
				why = fmt.Sprintf("it has %d digits, %s", len(strconv.FormatFloat(math.Floor(f), 'f', 0, 64)), digitsUnit(len(strconv.FormatFloat(math.Floor(f), 'f', 0, 64))))
			}
			d.semantic("%s is not a time in seconds: %s", quote.Short(string(raw)), why)
			return
		}
		d.setSeconds(c, f)
		return
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v < 0 {
		if _, ferr := strconv.ParseFloat(string(raw), 64); ferr == nil && !bytes.HasPrefix(raw, []byte("-")) {
			d.semantic("%s is not an integer: the streaming destination writes whole milliseconds or microseconds", quote.Short(string(raw)))
			return
		}
		d.semantic("%s is not a non-negative integer epoch time", quote.Short(string(raw)))
		return
	}
	digits := len(strconv.FormatInt(v, 10))
	switch {
	case precision == "MICROSECOND" && digits == 16, precision == "" && digits == 16:
		c.Time, c.Precision = time.UnixMicro(v).UTC(), Microsecond
	case precision != "MICROSECOND" && digits == 13:
		c.Time, c.Precision = time.UnixMilli(v).UTC(), Millisecond
	case precision == "MICROSECOND":
		d.semantic("%d has %d digits, not the 16 of a time in microseconds (ApproximateCreationDateTimePrecision MICROSECOND): %s", v, digits, digitsUnit(digits))
	case precision == "MILLISECOND":
		d.semantic("%d has %d digits, not the 13 of a time in milliseconds (ApproximateCreationDateTimePrecision MILLISECOND): %s", v, digits, digitsUnit(digits))
	case digits == 10:
		d.semantic("%d has 10 digits, a time in seconds (%s); the Kinesis streaming destination writes milliseconds (13 digits) or, with ApproximateCreationDateTimePrecision MICROSECOND, microseconds (16)",
			v, time.Unix(v, 0).UTC().Format(time.RFC3339))
	default:
		d.semantic("%d has %d digits, %s: the Kinesis streaming destination writes milliseconds (13 digits) or, with ApproximateCreationDateTimePrecision MICROSECOND, microseconds (16)", v, digits, digitsUnit(digits))
	}
}

// setSeconds sets an epoch time in seconds, to the millisecond.
func (d *dec) setSeconds(c *Change, f float64) {
	sec, frac := math.Modf(f)
	c.Time = time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond)).UTC()
	c.Precision = Second
	if frac != 0 {
		c.Precision = Millisecond
	}
}

// setTimeString interprets a GetRecords time written as a string: epoch
// seconds ("1.46480646E9", as in the API reference's example) or ISO 8601
// ("2026-11-30T10:36:00+00:00", as the AWS CLI prints it).
func (d *dec) setTimeString(c *Change, raw []byte) {
	if _, err := strconv.ParseFloat(string(raw), 64); err == nil {
		d.setTime(c, raw, Second, "")
		return
	}
	t, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		d.semantic("%s is neither a number of seconds nor an ISO 8601 time", quote.Bytes(raw))
		return
	}
	c.Time, c.Precision = t.UTC(), Second
	if t.Nanosecond() != 0 {
		c.Time, c.Precision = t.UTC().Truncate(time.Millisecond), Millisecond
	}
}

// finish checks the record's event name and images and fills in the fields
// derived from the images.
func (d *dec) finish(c *Change, name, viewType, ddb string) {
	switch name {
	case "INSERT":
		c.Kind = Insert
	case "MODIFY":
		c.Kind = Modify
	case "REMOVE":
		c.Kind = Remove
	case "":
		d.semanticAt("eventName", "missing")
		return
	default:
		d.semanticAt("eventName", "unknown event name "+quote.Value(name))
		return
	}
	if len(c.Keys) == 0 {
		d.semanticAt(ddb+".Keys", "missing")
		return
	}
	view, ok := parseView(viewType)
	if !ok {
		d.semanticAt(ddb+".StreamViewType", "unknown StreamViewType "+quote.Value(viewType)+": want KEYS_ONLY, NEW_IMAGE, OLD_IMAGE or NEW_AND_OLD_IMAGES")
		return
	}
	c.View = view
	newView := viewType == "NEW_IMAGE" || viewType == "NEW_AND_OLD_IMAGES"
	switch {
	case c.Kind != Remove && c.New == nil && newView:
		d.semanticAt(ddb+".NewImage", fmt.Sprintf("missing from %s with StreamViewType %s", name, viewType))
		return
	case c.Kind == Remove && c.New != nil:
		d.semanticAt(ddb+".NewImage", "present on REMOVE")
		return
	case c.Kind == Insert && c.Old != nil:
		d.semanticAt(ddb+".OldImage", "present on INSERT")
		return
	}
	d.derive(c, ddb)
}

func (d *dec) semanticAt(path, msg string) {
	if d.recErr == nil {
		d.recErr = &FieldError{Path: path, Msg: msg}
	}
}

// derive reads the entity types and the version from the images.
func (d *dec) derive(c *Change, prefix string) {
	var ok bool
	if c.OldType, ok = d.entityType(c.Old, prefix+".OldImage"); !ok {
		return
	}
	if c.NewType, ok = d.entityType(c.New, prefix+".NewImage"); !ok {
		return
	}
	img, where := c.New, prefix+".NewImage"
	if img == nil {
		img, where = c.Old, prefix+".OldImage"
	}
	v, present, err := ItemVersion(img, d.opts.VersionAttribute)
	if err != nil {
		d.semanticAt(where+"."+err.Path, err.Msg)
		return
	}
	c.Version, c.HasVersion = v, present
}

// ItemVersion reads an item's version attribute (attr): a non-negative
// integer number. present is false when the item has none; a value of
// another kind is an error whose Path is relative to the item ("version"
// or "version.N").
func ItemVersion(img Item, attr string) (v int64, present bool, err *FieldError) {
	av, present := img[attr]
	if !present {
		return 0, false, nil
	}
	n, isN := av.(*types.AttributeValueMemberN)
	if !isN {
		return 0, false, &FieldError{Path: attr, Msg: "version attribute must be a number, got " + ddbjson.TypeName(av)}
	}
	v, perr := strconv.ParseInt(n.Value, 10, 64)
	if perr != nil || v < 0 {
		return 0, false, &FieldError{Path: attr + ".N", Msg: fmt.Sprintf("version %s is not a non-negative integer", quote.Value(n.Value))}
	}
	return v, true, nil
}

func (d *dec) entityType(img Item, where string) (string, bool) {
	if img == nil {
		return "", true
	}
	av, ok := img[d.opts.TypeAttribute]
	if !ok {
		return "", true
	}
	s, isS := av.(*types.AttributeValueMemberS)
	if !isS {
		d.semanticAt(where+"."+d.opts.TypeAttribute, "entity type must be a string, got "+ddbjson.TypeName(av))
		return "", false
	}
	return s.Value, true
}

// optString reads a string, or null as "", recording a field error for any
// other kind of value.
func (d *dec) optString() string {
	s := &d.s
	switch s.peek() {
	case '"':
		return s.str()
	case 'n':
		s.literal()
		return ""
	}
	d.semantic("want string, got %s", s.kind())
	s.skip()
	return ""
}

// userIdentity reads the userIdentity member and reports whether it marks a
// TTL deletion.
func (d *dec) userIdentity() bool {
	s := &d.s
	if s.isNull() {
		return false
	}
	if s.peek() != '{' {
		d.semantic("want object, got %s", s.kind())
		s.skip()
		return false
	}
	s.pos++
	var typ, principal string
	var names ddbjson.Names
	for n := 0; s.next('}', &n); {
		k := s.key()
		if d.dup(&names, k, len(d.path)) {
			continue
		}
		switch string(k) {
		case "type", "Type": // Lambda spells it type, the Streams API Type
			typ = d.optString()
		case "principalId", "PrincipalId":
			principal = d.optString()
		default:
			s.skip()
		}
	}
	return typ == "Service" && principal == "dynamodb.amazonaws.com"
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// tableFromStreamARN returns the table name in a stream ARN
// (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL), or "".
func tableFromStreamARN(arn string) string {
	_, rest, ok := strings.Cut(arn, ":table/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// Package pipeline turns DynamoDB change records from every source Tributary reads
// (the Lambda DynamoDB Streams event, the Lambda Kinesis event carrying DynamoDB
// records, the DynamoDB Streams and Kinesis APIs, and DynamoDB export lines) into
// one normalised Change, routes changes by the item's entity type, and gives
// Lambda's partial-batch semantics to whatever handles them.
//
// All conversion between the three attribute-value types in the AWS Go libraries
// (aws-lambda-go events, SDK dynamodb, SDK dynamodbstreams) happens in this
// package, once: images are always SDK dynamodb attribute values, so
// attributevalue.UnmarshalMap works on them directly.
package pipeline

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is one DynamoDB item image, in the SDK's dynamodb attribute-value form.
type Item = map[string]types.AttributeValue

// Kind says what a change did to the item.
type Kind uint8

// The kinds of change. The zero Kind is invalid.
const (
	Insert Kind = iota + 1
	Modify
	Remove
)

// String returns the DynamoDB event name: INSERT, MODIFY or REMOVE.
func (k Kind) String() string {
	switch k {
	case Insert:
		return "INSERT"
	case Modify:
		return "MODIFY"
	case Remove:
		return "REMOVE"
	}
	return "UNKNOWN"
}

// Source names where a change was read from. It decides what the change's
// position and time mean.
type Source uint8

// The sources a Change can come from.
const (
	// SourceStreams is DynamoDB Streams, through Lambda or the Streams API:
	// records carry a sequence number, unique in the stream and increasing per item.
	SourceStreams Source = iota + 1
	// SourceKinesis is a Kinesis data stream fed by DynamoDB's streaming
	// destination: no DynamoDB sequence number, duplicates and reordering possible.
	SourceKinesis
	// SourceExport is a line of a DynamoDB export to S3 (full or incremental).
	SourceExport
)

// String returns the source's short name: streams, kinesis or export.
func (s Source) String() string {
	switch s {
	case SourceStreams:
		return "streams"
	case SourceKinesis:
		return "kinesis"
	case SourceExport:
		return "export"
	}
	return "unknown"
}

// Precision is the resolution of a change's approximate creation time.
type Precision uint8

// Time precisions, as the sources give them.
const (
	Second Precision = iota + 1
	Millisecond
	Microsecond
)

// String returns s, ms or us.
func (p Precision) String() string {
	switch p {
	case Second:
		return "s"
	case Millisecond:
		return "ms"
	case Microsecond:
		return "us"
	}
	return ""
}

// Truncate cuts t down to the precision p.
func (p Precision) Truncate(t time.Time) time.Time {
	switch p {
	case Second:
		return t.Truncate(time.Second)
	case Millisecond:
		return t.Truncate(time.Millisecond)
	}
	return t.Truncate(time.Microsecond)
}

// Position is where a change sits in its source.
type Position struct {
	Source Source
	// Stream is the DynamoDB stream ARN, the Kinesis stream ARN or name, or the
	// export's data file.
	Stream string
	// Shard is the shard ID when the source says it (the Lambda DynamoDB Streams
	// event does not).
	Shard string
	// SequenceNumber is the record's sequence number in its stream: the DynamoDB
	// Streams sequence number, or Kinesis's own for records read from Kinesis.
	// Lambda's partial batch response names records by it.
	SequenceNumber string
	// Index is the record's place in the batch or file it was decoded from,
	// counting from 0 (for an export file, its line number minus one).
	Index int
	// Origin, when set (a backfill sets it on an export's items), names
	// the source that holds the item and its place there, wherever the
	// source is stored, as "SOURCE/PLACE": one export and a line of it.
	// A source holds an item once, so the engine refuses an item that one
	// source gives at two places (the engine's DuplicateItemError).
	Origin string
}

// Change is one normalised change to one item of the source table.
type Change struct {
	Kind Kind
	// Keys holds the item's key attributes.
	Keys Item
	// Old and New are the images before and after the change; either may be nil
	// (INSERT has no Old, REMOVE no New, and the stream view type may omit them).
	Old, New Item
	// OldType and NewType are the entity types of the images, read from the type
	// attribute; empty when the image or the attribute is missing.
	OldType, NewType string
	// Version is the item's version attribute: of New, or of Old for a removal.
	// HasVersion is false when the item carries none.
	Version    int64
	HasVersion bool
	Position   Position
	// Time is the approximate creation time of the change, exact to Precision.
	Time      time.Time
	Precision Precision
	// View is the view type of the stream the change was read from, which
	// says which images it can carry (viewUnknown when the source does not
	// say).
	View View
	// EventID is the source's event ID (a UUID for Kinesis, a hex ID for Streams).
	EventID string
	// TTL is true for a removal made by DynamoDB's time to live.
	TTL bool
	// Table is the source table's name, when the source says it.
	Table string
	// Region is the AWS Region the record was served from.
	Region string
	// SizeBytes is the stream record's size as the source reports it.
	SizeBytes int64
}

// Image returns the newest image the change carries: New, or Old for a removal.
func (c *Change) Image() Item {
	if c.New != nil {
		return c.New
	}
	return c.Old
}

// EntityType returns the entity type of the newest image: NewType, or OldType
// when the change has no new image.
func (c *Change) EntityType() string {
	if c.New != nil {
		return c.NewType
	}
	return c.OldType
}

// CompareSequenceNumbers compares two decimal sequence numbers of any length
// (DynamoDB Streams' have 21 to 40 digits, Kinesis's 56): -1, 0 or +1. They
// must be compared as numbers: as strings, "99" sorts after "100".
func CompareSequenceNumbers(a, b string) int {
	for len(a) > 1 && a[0] == '0' {
		a = a[1:]
	}
	for len(b) > 1 && b[0] == '0' {
		b = b[1:]
	}
	switch {
	case len(a) != len(b):
		if len(a) < len(b) {
			return -1
		}
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

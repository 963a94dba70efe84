package pipeline

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	dstypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tributary/tributary/internal/quote"
)

// FromStreamsRecord converts a record read with the DynamoDB Streams API
// (GetRecords) into a Change. stream and shard fill in the Position, which
// the record does not carry. The error is a *RecordError.
func FromStreamsRecord(r dstypes.Record, stream, shard string, opts Options) (Change, error) {
	d := newDec(opts, maxStreamsRecordBytes)
	c := Change{Position: Position{Source: SourceStreams, Stream: stream, Shard: shard}}
	c.EventID = deref(r.EventID)
	c.Region = deref(r.AwsRegion)
	c.Table = tableFromStreamARN(stream)
	if u := r.UserIdentity; u != nil {
		c.TTL = deref(u.Type) == "Service" && deref(u.PrincipalId) == "dynamodb.amazonaws.com"
	}
	fail := func(err error) (Change, error) {
		return Change{}, &RecordError{SequenceNumber: c.Position.SequenceNumber, EventID: c.EventID, Err: err}
	}
	sr := r.Dynamodb
	if sr == nil {
		return fail(&FieldError{Path: "dynamodb", Msg: "missing"})
	}
	c.Position.SequenceNumber = deref(sr.SequenceNumber)
	if !allDigits(c.Position.SequenceNumber) {
		return fail(&FieldError{Path: "dynamodb.SequenceNumber", Msg: quote.Value(c.Position.SequenceNumber) + " is not a sequence number"})
	}
	if sr.ApproximateCreationDateTime != nil {
		c.Time, c.Precision = sr.ApproximateCreationDateTime.UTC(), Second
	}
	if sr.SizeBytes != nil {
		c.SizeBytes = *sr.SizeBytes
	}
	var err error
	if c.Keys, err = fromStreams(sr.Keys); err != nil {
		return fail(&FieldError{Path: "dynamodb.Keys", Msg: err.Error()})
	}
	if c.New, err = fromStreams(sr.NewImage); err != nil {
		return fail(&FieldError{Path: "dynamodb.NewImage", Msg: err.Error()})
	}
	if c.Old, err = fromStreams(sr.OldImage); err != nil {
		return fail(&FieldError{Path: "dynamodb.OldImage", Msg: err.Error()})
	}
	d.finish(&c, string(r.EventName), string(sr.StreamViewType), "dynamodb")
	if d.recErr != nil {
		return fail(d.recErr)
	}
	return c, nil
}

func fromStreams(m map[string]dstypes.AttributeValue) (Item, error) {
	if m == nil {
		return nil, nil
	}
	return attributevalue.FromDynamoDBStreamsMap(m)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

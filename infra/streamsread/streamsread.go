// Package streamsread reads a table's DynamoDB stream through the DynamoDB
// Streams API (DescribeStream, GetShardIterator, GetRecords): a
// shardread.Source, for replays of the last 24 hours.
//
// DynamoDB Streams differs from Kinesis where the Reader cares: shards roll
// over (about every four hours) and split, each child naming its parent
// (ParentShardId), so a stream of a day has dozens of shards in lineage; a
// closed shard read to its end gives no next iterator; reads do not say how
// far behind the tip they are (the Reader counts empty reads instead); and
// there is no AT_TIMESTAMP iterator, so a window that starts at a time is read
// from the trim horizon and the Reader drops the records before it (on their
// ApproximateCreationDateTime). At most two readers should read a shard at
// once: a replay beside the projector's event source mapping is one more.
//
// Records are decoded with pipeline.FromStreamsRecord: changes carry the
// stream's sequence numbers, which order one item's changes exactly.
//
// Service errors are mapped for the Reader: ExpiredIteratorException to
// shardread.ErrExpiredIterator, LimitExceededException (and throttling) to
// shardread.ErrThrottled, TrimmedDataAccessException to shardread.ErrTrimmed,
// ResourceNotFoundException on a shard to shardread.ErrShardNotFound. A
// Source paces its reads (Pacing): after a read that returned nothing, the
// next read of the shard waits EmptyReadDelay.
package streamsread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tributary/tributary/infra/internal/streamerr"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
)

// streamsAPI is the part of *dynamodbstreams.Client that source uses.
type streamsAPI interface {
	DescribeStream(ctx context.Context, params *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, params *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// listAPI is the part of *dynamodbstreams.Client that StreamARN uses.
type listAPI interface {
	ListStreams(ctx context.Context, params *dynamodbstreams.ListStreamsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error)
}

var (
	_ streamsAPI            = (*dynamodbstreams.Client)(nil)
	_ listAPI               = (*dynamodbstreams.Client)(nil)
	_ shardread.PacedSource = (*source)(nil)
)

// emptyReadDelay is the wait after a read of a shard that returned nothing:
// DynamoDB Streams can return empty pages before a shard's tip, and reads
// do not say how far behind it they are, so the Reader takes a few empty
// reads in a row for the tip (Config.EmptyReads, 3 by default: three empty
// reads in about 3/4 s).
const emptyReadDelay = 250 * time.Millisecond

// maxBatch is the most records one GetRecords returns.
const maxBatch = 1000

// Retention is how long a DynamoDB stream keeps its records.
const Retention = 24 * time.Hour

// errNoStream is the error of StreamARN when the table has no stream.
var errNoStream = errors.New("streamsread: the table has no stream")

// StreamARN returns the ARN of a table's current stream, the one with the
// latest label. A table ARN or name may be given; a stream ARN is returned
// as it is.
func StreamARN(ctx context.Context, client listAPI, table string) (string, error) {
	if strings.HasPrefix(table, "arn:") && strings.Contains(table, "/stream/") {
		return table, nil
	}
	name := table
	if i := strings.LastIndex(table, ":table/"); strings.HasPrefix(table, "arn:") && i >= 0 {
		name = table[i+len(":table/"):]
	}
	var best, label string
	in := &dynamodbstreams.ListStreamsInput{TableName: aws.String(name)}
	for {
		res, err := client.ListStreams(ctx, in)
		if err != nil {
			return "", fmt.Errorf("streamsread: listing the streams of table %s: %w", name, err)
		}
		for _, s := range res.Streams {
			// Labels are ISO 8601 times: the latest sorts last.
			if l := aws.ToString(s.StreamLabel); aws.ToString(s.TableName) == name && l >= label {
				best, label = aws.ToString(s.StreamArn), l
			}
		}
		if res.LastEvaluatedStreamArn == nil {
			break
		}
		in.ExclusiveStartStreamArn = res.LastEvaluatedStreamArn
	}
	if best == "" {
		return "", fmt.Errorf("%w: %s", errNoStream, name)
	}
	return best, nil
}

// source reads one DynamoDB stream. It is safe for concurrent use.
type source struct {
	client streamsAPI
	arn    string
	opts   pipeline.Options
}

// New returns a Source for the stream with ARN streamARN (see StreamARN).
// Changes are decoded with opts.
func New(client streamsAPI, streamARN string, opts pipeline.Options) shardread.Source {
	return newSource(client, streamARN, opts)
}

// newSource is New, giving the concrete source.
func newSource(client streamsAPI, streamARN string, opts pipeline.Options) *source {
	return &source{client: client, arn: streamARN, opts: opts}
}

// String returns the stream's ARN.
func (s *source) String() string { return s.arn }

// Shards lists the stream's shards, closed ones included.
func (s *source) Shards(ctx context.Context) ([]shardread.Shard, error) {
	var out []shardread.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(s.arn)}
	for {
		res, err := s.client.DescribeStream(ctx, in)
		if err != nil {
			return nil, s.wrap(err, "DescribeStream", "")
		}
		d := res.StreamDescription
		if d == nil {
			return nil, fmt.Errorf("streamsread: DescribeStream on %s: no description", s.arn)
		}
		if d.StreamStatus == types.StreamStatusDisabled && len(d.Shards) == 0 {
			return nil, fmt.Errorf("streamsread: stream %s is disabled and has no shards left", s.arn)
		}
		for _, sh := range d.Shards {
			x := shardread.Shard{ID: aws.ToString(sh.ShardId)}
			if p := aws.ToString(sh.ParentShardId); p != "" {
				x.Parents = []string{p}
			}
			if r := sh.SequenceNumberRange; r != nil {
				x.StartingSeq = aws.ToString(r.StartingSequenceNumber)
				x.EndingSeq = aws.ToString(r.EndingSequenceNumber)
			}
			out = append(out, x)
		}
		if aws.ToString(d.LastEvaluatedShardId) == "" {
			return out, nil
		}
		in.ExclusiveStartShardId = d.LastEvaluatedShardId
	}
}

// Iterator gets a shard iterator. AtTimestamp starts at the trim horizon:
// the Reader drops the records before the time.
func (s *source) Iterator(ctx context.Context, shard string, start shardread.Start) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(s.arn), ShardId: aws.String(shard)}
	switch start.Type {
	case shardread.TrimHorizon, shardread.AtTimestamp:
		in.ShardIteratorType = types.ShardIteratorTypeTrimHorizon
	case shardread.Latest:
		in.ShardIteratorType = types.ShardIteratorTypeLatest
	case shardread.AtSequence:
		in.ShardIteratorType = types.ShardIteratorTypeAtSequenceNumber
		in.SequenceNumber = aws.String(start.Seq)
	case shardread.AfterSequence:
		in.ShardIteratorType = types.ShardIteratorTypeAfterSequenceNumber
		in.SequenceNumber = aws.String(start.Seq)
	default:
		return "", fmt.Errorf("streamsread: start type %d", start.Type)
	}
	res, err := s.client.GetShardIterator(ctx, in)
	if err != nil {
		return "", s.wrap(err, "GetShardIterator", shard)
	}
	return aws.ToString(res.ShardIterator), nil
}

// Read reads one page of a shard and decodes its records.
func (s *source) Read(ctx context.Context, shard, iterator string, limit int) (shardread.Page, error) {
	res, err := s.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(iterator), Limit: aws.Int32(int32(min(max(limit, 1), maxBatch)))})
	if err != nil {
		return shardread.Page{}, s.wrap(err, "GetRecords", shard)
	}
	page := shardread.Page{Next: aws.ToString(res.NextShardIterator), Records: make([]shardread.Record, len(res.Records))}
	for i, r := range res.Records {
		c, err := pipeline.FromStreamsRecord(r, s.arn, shard, s.opts)
		rec := shardread.Record{Change: c, Err: err}
		if d := r.Dynamodb; d != nil {
			rec.Seq = aws.ToString(d.SequenceNumber)
			rec.Time = aws.ToTime(d.ApproximateCreationDateTime)
			rec.Size = int(aws.ToInt64(d.SizeBytes))
		}
		page.Records[i] = rec
	}
	return page, nil
}

// Pacing implements shardread.PacedSource: EmptyReadDelay after an empty
// read.
func (s *source) Pacing() shardread.Pacing {
	return shardread.Pacing{EmptyReadDelay: emptyReadDelay}
}

// readerErrors are the DynamoDB Streams API's error codes
// (dynamodbstreams/types, and ThrottlingException, which every AWS API may
// return) that the Reader handles, and how.
var readerErrors = map[string]error{
	"ExpiredIteratorException":   shardread.ErrExpiredIterator,
	"LimitExceededException":     shardread.ErrThrottled,
	"ThrottlingException":        shardread.ErrThrottled,
	"TrimmedDataAccessException": shardread.ErrTrimmed,
}

// wrap names the call and the stream, and marks the errors the Reader
// handles: readerErrors, and ResourceNotFoundException on a shard's call.
func (s *source) wrap(err error, op, shard string) error {
	return streamerr.Wrap("streamsread", readerErrors, err, op, s.arn, shard)
}

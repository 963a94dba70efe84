// Package kinesisread reads a Kinesis data stream fed by DynamoDB's Kinesis
// streaming destination, through the Kinesis API (ListShards,
// GetShardIterator, GetRecords): a shardread.Source, for replays.
//
// Records are decoded with pipeline.FromKinesisRecord into changes whose
// position is the Kinesis stream, shard and sequence number, and whose time
// is DynamoDB's ApproximateCreationDateTime (milliseconds or microseconds).
// The Reader's windows are cut on the Kinesis arrival time, which is what
// AT_TIMESTAMP iterators use.
//
// Service errors are mapped for the Reader: ExpiredIteratorException to
// shardread.ErrExpiredIterator; ProvisionedThroughputExceededException,
// LimitExceededException, KMSThrottlingException and ThrottlingException to
// shardread.ErrThrottled; ResourceNotFoundException on a shard's iterator to
// shardread.ErrShardNotFound. The SDK's own retries come first. A Source
// paces its reads as Kinesis serves them (Pacing): at most 5 reads a second
// per shard.
package kinesisread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/infra/internal/streamerr"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
)

// kinesisAPI is the part of *kinesis.Client that source uses.
type kinesisAPI interface {
	ListShards(ctx context.Context, params *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	GetShardIterator(ctx context.Context, params *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

var (
	_ kinesisAPI            = (*kinesis.Client)(nil)
	_ shardread.PacedSource = (*source)(nil)
)

// summaryAPI is the part of *kinesis.Client that Retention uses.
type summaryAPI interface {
	DescribeStreamSummary(ctx context.Context, params *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
}

var _ summaryAPI = (*kinesis.Client)(nil)

// Retention returns how long stream (a name or ARN) keeps its records:
// its retention period (DescribeStreamSummary).
func Retention(ctx context.Context, client summaryAPI, stream string) (time.Duration, error) {
	in := &kinesis.DescribeStreamSummaryInput{}
	if strings.HasPrefix(stream, "arn:") {
		in.StreamARN = aws.String(stream)
	} else {
		in.StreamName = aws.String(stream)
	}
	out, err := client.DescribeStreamSummary(ctx, in)
	if err != nil {
		return 0, fmt.Errorf("reading the retention period of %s: %w", stream, err)
	}
	if out.StreamDescriptionSummary == nil || out.StreamDescriptionSummary.RetentionPeriodHours == nil {
		return 0, fmt.Errorf("reading the retention period of %s: the service did not say it", stream)
	}
	return time.Duration(*out.StreamDescriptionSummary.RetentionPeriodHours) * time.Hour, nil
}

// minReadInterval is the least time between two reads of one shard: Kinesis
// serves 5 GetRecords calls per second per shard, shared by every reader.
const minReadInterval = 200 * time.Millisecond

// MaxBatch is the most records one GetRecords returns.
const MaxBatch = 10000

// source reads one Kinesis data stream. It is safe for concurrent use.
type source struct {
	client kinesisAPI
	stream string // name or ARN, as given
	opts   pipeline.Options
}

// New returns a Source for stream, a stream name or ARN. Changes are decoded
// with opts.
func New(client kinesisAPI, stream string, opts pipeline.Options) shardread.Source {
	return newSource(client, stream, opts)
}

// newSource is New, giving the concrete source.
func newSource(client kinesisAPI, stream string, opts pipeline.Options) *source {
	return &source{client: client, stream: stream, opts: opts}
}

// String returns the stream's URL, kinesis://<stream>.
func (s *source) String() string { return "kinesis://" + s.stream }

// isARN: the stream was given by ARN. Calls name the stream as it was
// given: some servers (kinesalite) take only names.
func (s *source) isARN() bool { return strings.HasPrefix(s.stream, "arn:") }

// Shards lists every shard the stream keeps, open and closed.
func (s *source) Shards(ctx context.Context) ([]shardread.Shard, error) {
	var out []shardread.Shard
	in := &kinesis.ListShardsInput{}
	s.setStream(&in.StreamName, &in.StreamARN)
	for {
		res, err := s.client.ListShards(ctx, in)
		if err != nil {
			var expired *types.ExpiredNextTokenException
			if errors.As(err, &expired) && in.NextToken != nil {
				// Tokens live 5 minutes: list again from the start.
				out = out[:0]
				in = &kinesis.ListShardsInput{}
				s.setStream(&in.StreamName, &in.StreamARN)
				continue
			}
			return nil, s.wrap(err, "ListShards", "")
		}
		for _, sh := range res.Shards {
			x := shardread.Shard{ID: aws.ToString(sh.ShardId)}
			for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
				if aws.ToString(p) != "" {
					x.Parents = append(x.Parents, *p)
				}
			}
			if r := sh.SequenceNumberRange; r != nil {
				x.StartingSeq = aws.ToString(r.StartingSequenceNumber)
				x.EndingSeq = aws.ToString(r.EndingSequenceNumber)
			}
			out = append(out, x)
		}
		if aws.ToString(res.NextToken) == "" {
			return out, nil
		}
		in = &kinesis.ListShardsInput{NextToken: res.NextToken}
	}
}

func (s *source) setStream(name, arn **string) {
	if s.isARN() {
		*arn = aws.String(s.stream)
	} else {
		*name = aws.String(s.stream)
	}
}

// Iterator gets a shard iterator.
func (s *source) Iterator(ctx context.Context, shard string, start shardread.Start) (string, error) {
	in := &kinesis.GetShardIteratorInput{ShardId: aws.String(shard)}
	s.setStream(&in.StreamName, &in.StreamARN)
	switch start.Type {
	case shardread.TrimHorizon:
		in.ShardIteratorType = types.ShardIteratorTypeTrimHorizon
	case shardread.Latest:
		in.ShardIteratorType = types.ShardIteratorTypeLatest
	case shardread.AtTimestamp:
		in.ShardIteratorType = types.ShardIteratorTypeAtTimestamp
		in.Timestamp = aws.Time(start.Time)
	case shardread.AtSequence:
		in.ShardIteratorType = types.ShardIteratorTypeAtSequenceNumber
		in.StartingSequenceNumber = aws.String(start.Seq)
	case shardread.AfterSequence:
		in.ShardIteratorType = types.ShardIteratorTypeAfterSequenceNumber
		in.StartingSequenceNumber = aws.String(start.Seq)
	default:
		return "", fmt.Errorf("kinesisread: start type %d", start.Type)
	}
	res, err := s.client.GetShardIterator(ctx, in)
	if err != nil {
		return "", s.wrap(err, "GetShardIterator", shard)
	}
	return aws.ToString(res.ShardIterator), nil
}

// Read reads one page of a shard and decodes its records.
func (s *source) Read(ctx context.Context, shard, iterator string, limit int) (shardread.Page, error) {
	in := &kinesis.GetRecordsInput{ShardIterator: aws.String(iterator), Limit: aws.Int32(int32(min(max(limit, 1), MaxBatch)))}
	if s.isARN() {
		in.StreamARN = aws.String(s.stream)
	}
	res, err := s.client.GetRecords(ctx, in)
	if err != nil {
		return shardread.Page{}, s.wrap(err, "GetRecords", shard)
	}
	page := shardread.Page{Next: aws.ToString(res.NextShardIterator), Records: make([]shardread.Record, len(res.Records))}
	if res.MillisBehindLatest != nil {
		page.BehindKnown = true
		page.Behind = msDuration(*res.MillisBehindLatest)
	}
	for i, r := range res.Records {
		c, err := pipeline.FromKinesisRecord(r, s.stream, shard, s.opts)
		page.Records[i] = shardread.Record{
			Seq:    aws.ToString(r.SequenceNumber),
			Time:   aws.ToTime(r.ApproximateArrivalTimestamp),
			Change: c,
			Err:    err,
			Size:   len(r.Data) + len(aws.ToString(r.PartitionKey)),
		}
	}
	return page, nil
}

// Pacing implements shardread.PacedSource: reads of a shard at least
// MinReadInterval apart.
func (s *source) Pacing() shardread.Pacing {
	return shardread.Pacing{MinReadInterval: minReadInterval}
}

// readerErrors are the Kinesis API's error codes (kinesis/types, and
// ThrottlingException, which every AWS API may return) that the Reader
// handles, and how.
var readerErrors = map[string]error{
	"ExpiredIteratorException":               shardread.ErrExpiredIterator,
	"ProvisionedThroughputExceededException": shardread.ErrThrottled,
	"LimitExceededException":                 shardread.ErrThrottled,
	"KMSThrottlingException":                 shardread.ErrThrottled,
	"ThrottlingException":                    shardread.ErrThrottled,
}

// wrap names the call and the stream, and marks the errors the Reader
// handles: readerErrors, and ResourceNotFoundException on a shard's call.
func (s *source) wrap(err error, op, shard string) error {
	return streamerr.Wrap("kinesisread", readerErrors, err, op, s.stream, shard)
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

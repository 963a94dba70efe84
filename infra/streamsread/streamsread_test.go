package streamsread

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
	"github.com/tributary/tributary/pipeline/shardread/shardreadtest"
)

func TestErrorsForTheReader(t *testing.T) {
	s := newSource(nil, "arn:aws:dynamodb:us-east-1:1:table/t/stream/x", pipeline.Options{})
	for _, tt := range []struct {
		code, shard string
		want        error
	}{
		{"ExpiredIteratorException", "shardId-1", shardread.ErrExpiredIterator},
		{"LimitExceededException", "shardId-1", shardread.ErrThrottled},
		{"ThrottlingException", "", shardread.ErrThrottled},
		{"TrimmedDataAccessException", "shardId-1", shardread.ErrTrimmed},
		{"ResourceNotFoundException", "shardId-1", shardread.ErrShardNotFound},
		{"ResourceNotFoundException", "", nil},
		{"InternalServerError", "shardId-1", nil},
	} {
		err := s.wrap(&smithy.GenericAPIError{Code: tt.code}, "GetRecords", tt.shard)
		for _, k := range []error{shardread.ErrExpiredIterator, shardread.ErrThrottled, shardread.ErrTrimmed, shardread.ErrShardNotFound} {
			if errors.Is(err, k) != (k == tt.want) {
				t.Errorf("%s (shard %q): errors.Is(%v) = %v", tt.code, tt.shard, k, !(k == tt.want))
			}
		}
	}
}

// tableStream is a table with a stream on the test server.
type tableStream struct {
	ddb   *dynamodb.Client
	table string
	src   *source
}

func (s *tableStream) Source() shardread.Source { return s.src }

func (s *tableStream) Write(ctx context.Context, pk string, v int) error {
	_, err := s.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "ITEM"},
		"EntityType": &types.AttributeValueMemberS{Value: "Thing"}, "version": &types.AttributeValueMemberN{Value: strconv.Itoa(v)},
	}})
	return err
}

func (s *tableStream) Split(context.Context, string) error { return shardreadtest.ErrNoSplit }

func newTableStream(ctx context.Context, t *testing.T, streams streamsAPI) *tableStream {
	t.Helper()
	ddb := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "src")
	awstest.CreateTable(ctx, t, ddb, table, true)
	arn, err := StreamARN(ctx, awstest.Streams(t), table)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(arn, table) {
		t.Fatalf("stream ARN %s is not of table %s", arn, table)
	}
	return &tableStream{ddb: ddb, table: table, src: newSource(streams, arn, pipeline.Options{})}
}

// TestIntegrationStreamsConformance runs the shardread conformance suite
// against DynamoDB Streams on the test server: real PutItems on a table
// with a NEW_AND_OLD_IMAGES stream. (moto keeps one shard per stream, so
// lineage is tested below with a parent shard added on the wire.)
func TestIntegrationStreamsConformance(t *testing.T) {
	streams := awstest.Streams(t)
	shardreadtest.Run(t, shardreadtest.Harness{
		New: func(t *testing.T, _ int) shardreadtest.Stream {
			return newTableStream(context.Background(), t, streams)
		},
		TimeResolution: 50 * time.Millisecond,
	})
}

// TestIntegrationStreamsLineage reads a stream whose description, on the
// wire, gains a closed parent shard of the server's real one (DynamoDB
// rolls shards over about every four hours; moto never does). The parent
// is read to its end — no next iterator — before the child starts.
func TestIntegrationStreamsLineage(t *testing.T) {
	ctx := context.Background()
	const parent = "shardId-00000001500000000000-aaaaaaaa"
	var (
		mu          sync.Mutex
		parentReads int
	)
	wire := &shardreadtest.Wire{Answer: func(op string, n int, req []byte, forward func() ([]byte, error)) ([]byte, bool, error) {
		switch op {
		case "DescribeStream":
			body, err := forward()
			if err != nil {
				return nil, false, err
			}
			var d map[string]map[string]any
			if err := json.Unmarshal(body, &d); err != nil {
				return nil, false, err
			}
			shards, _ := d["StreamDescription"]["Shards"].([]any)
			for _, sh := range shards {
				sh.(map[string]any)["ParentShardId"] = parent
			}
			closed := map[string]any{"ShardId": parent, "SequenceNumberRange": map[string]any{"StartingSequenceNumber": "100", "EndingSequenceNumber": "200"}}
			d["StreamDescription"]["Shards"] = append([]any{closed}, shards...)
			out, err := json.Marshal(d)
			return out, true, err
		case "GetShardIterator":
			if strings.Contains(string(req), parent) {
				return []byte(`{"ShardIterator":"parent-iterator"}`), true, nil
			}
		case "GetRecords":
			if strings.Contains(string(req), "parent-iterator") {
				mu.Lock()
				parentReads++
				mu.Unlock()
				// Read to its end: no records left, no next iterator.
				return []byte(`{"Records":[]}`), true, nil
			}
		}
		return nil, false, nil
	}}
	streams := dynamodbstreams.NewFromConfig(awstest.Config(t), func(o *dynamodbstreams.Options) { o.HTTPClient = wire })
	ts := newTableStream(ctx, t, streams)
	for v := 1; v <= 3; v++ {
		if err := ts.Write(ctx, "P#1", v); err != nil {
			t.Fatal(err)
		}
	}
	var (
		events []shardread.Event
		got    []int64
	)
	cfg := shardread.Config{EmptyReads: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Trace: func(ev shardread.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }}
	h := shardread.HandlerFunc(func(_ context.Context, shard string, recs []shardread.Record) error {
		for _, r := range recs {
			got = append(got, r.Change.Version)
		}
		return nil
	})
	stats, err := shardread.NewReader(ts.src, cfg).Run(ctx, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || stats.Shards != 2 || stats.ShardsDone != 1 || parentReads != 1 {
		t.Fatalf("read %v; stats %+v; parent read %d times", got, stats, parentReads)
	}
	if len(events) < 3 || events[0] != (shardread.Event{Shard: parent, Kind: "start"}) || events[1] != (shardread.Event{Shard: parent, Kind: "done"}) {
		t.Errorf("events %v: want the parent started and done first", events)
	}
}

// TestIntegrationStreamsThrottlingExpiryTrim: throttled reads are waited
// out, an expired iterator renewed, and trimmed data reported as such.
func TestIntegrationStreamsThrottlingExpiryTrim(t *testing.T) {
	ctx := context.Background()
	trim := false
	wire := &shardreadtest.Wire{Inject: func(op string, n int) string {
		switch {
		case op == "GetRecords" && trim:
			return "TrimmedDataAccessException"
		case op == "DescribeStream" && n == 1, op == "GetRecords" && n <= 2:
			return "LimitExceededException"
		case op == "GetRecords" && n == 4:
			return "ExpiredIteratorException"
		}
		return ""
	}}
	streams := dynamodbstreams.NewFromConfig(awstest.Config(t), func(o *dynamodbstreams.Options) { o.HTTPClient = wire; o.RetryMaxAttempts = 1 })
	ts := newTableStream(ctx, t, streams)
	for v := 1; v <= 4; v++ {
		for _, pk := range []string{"A", "B", "C"} {
			if err := ts.Write(ctx, pk, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := map[string]int{}
	h := shardread.HandlerFunc(func(_ context.Context, _ string, recs []shardread.Record) error {
		for _, r := range recs {
			seen[r.Seq]++
		}
		return nil
	})
	var saved map[string]shardread.Position
	cfg := shardread.Config{BatchSize: 4, EmptyReads: 2, Backoff: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Checkpoint: func(_ context.Context, p map[string]shardread.Position) error { saved = p; return nil }}
	stats, err := shardread.NewReader(ts.src, cfg).Run(ctx, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 12 || stats.Throttles != 3 || stats.ExpiredIterators != 1 {
		t.Errorf("%d records, stats %+v: want 12, 3 throttles, 1 expired iterator", len(seen), stats)
	}
	for seq, n := range seen {
		if n != 1 {
			t.Errorf("record %s read %d times", seq, n)
		}
	}
	trim = true
	_, err = shardread.NewReader(ts.src, cfg).Run(ctx, saved, h)
	if !errors.Is(err, shardread.ErrTrimmed) {
		t.Errorf("reading trimmed records: %v, want ErrTrimmed", err)
	}
}

package kinesisread

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
	"github.com/tributary/tributary/pipeline/shardread/shardreadtest"
)

func TestErrorsForTheReader(t *testing.T) {
	s := newSource(nil, "orders", pipeline.Options{})
	for _, tt := range []struct {
		code, shard string
		want        error
	}{
		{"ExpiredIteratorException", "shardId-1", shardread.ErrExpiredIterator},
		{"ProvisionedThroughputExceededException", "shardId-1", shardread.ErrThrottled},
		{"LimitExceededException", "", shardread.ErrThrottled},
		{"KMSThrottlingException", "shardId-1", shardread.ErrThrottled},
		{"ResourceNotFoundException", "shardId-1", shardread.ErrShardNotFound},
		{"ResourceNotFoundException", "", nil},
		{"AccessDeniedException", "shardId-1", nil},
	} {
		api := &smithy.GenericAPIError{Code: tt.code, Message: "m"}
		err := s.wrap(errors.Join(api, errors.New("retry quota exceeded")), "GetRecords", tt.shard)
		for _, k := range []error{shardread.ErrExpiredIterator, shardread.ErrThrottled, shardread.ErrShardNotFound} {
			if errors.Is(err, k) != (k == tt.want) {
				t.Errorf("%s (shard %q): errors.Is(%v) = %v", tt.code, tt.shard, k, !(k == tt.want))
			}
		}
		var got smithy.APIError
		if !errors.As(err, &got) || got.ErrorCode() != tt.code {
			t.Errorf("%s: the service error is not kept: %v", tt.code, err)
		}
	}
}

// kinesisStream is a stream on the test server, for the conformance suite.
type kinesisStream struct {
	c    *kinesis.Client
	name string
	src  *source
}

func (k *kinesisStream) Source() shardread.Source { return k.src }

func (k *kinesisStream) Write(ctx context.Context, pk string, v int) error {
	_, err := k.c.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(k.name), PartitionKey: aws.String(pk), Data: shardreadtest.Payload(pk, v, time.Now())})
	return err
}

// Split splits a shard at the middle of its hash-key range.
func (k *kinesisStream) Split(ctx context.Context, shard string) error {
	res, err := k.c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(k.name)})
	if err != nil {
		return err
	}
	for _, sh := range res.Shards {
		if aws.ToString(sh.ShardId) != shard {
			continue
		}
		lo, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.StartingHashKey), 10)
		hi, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.EndingHashKey), 10)
		mid := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
		_, err := k.c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(k.name), ShardToSplit: aws.String(shard), NewStartingHashKey: aws.String(mid.String())})
		return err
	}
	return errors.New("no shard " + shard)
}

// TestIntegrationKinesisConformance runs the shardread conformance suite
// against Kinesis on the test server (moto), resharding included: moto
// implements SplitShard (it moves the parent's records into the children,
// where Kinesis leaves them in the parent; the suite allows for that).
func TestIntegrationKinesisConformance(t *testing.T) {
	c := awstest.Kinesis(t)
	shardreadtest.Run(t, shardreadtest.Harness{
		New: func(t *testing.T, n int) shardreadtest.Stream {
			name := awstest.CreateStream(context.Background(), t, c, "kin", n)
			return &kinesisStream{c: c, name: name, src: newSource(c, name, pipeline.Options{})}
		},
		Split: true,
	})
}

// TestIntegrationKinesisThrottlingAndExpiry reads a stream through a real
// client whose calls are answered, some of them, with the errors Kinesis
// gives under load and over time: throttled listings and reads, an expired
// iterator. Every record still arrives exactly once.
func TestIntegrationKinesisThrottlingAndExpiry(t *testing.T) {
	ctx := context.Background()
	c := awstest.Kinesis(t)
	name := awstest.CreateStream(ctx, t, c, "kin", 2)
	ks := &kinesisStream{c: c, name: name}
	for v := 1; v <= 5; v++ {
		for _, pk := range []string{"A", "B", "C", "D"} {
			if err := ks.Write(ctx, pk, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	wire := &shardreadtest.Wire{Inject: func(op string, n int) string {
		switch {
		case op == "ListShards" && n == 1:
			return "LimitExceededException"
		case op == "GetRecords" && n <= 3:
			return "ProvisionedThroughputExceededException"
		case op == "GetRecords" && n == 5:
			return "ExpiredIteratorException"
		}
		return ""
	}}
	// One attempt per call: the Reader's backoff, not the SDK's, waits here.
	faulty := kinesis.NewFromConfig(awstest.Config(t), func(o *kinesis.Options) { o.HTTPClient = wire; o.RetryMaxAttempts = 1 })
	src := newSource(faulty, name, pipeline.Options{})
	seen := map[string]int{}
	h := shardread.HandlerFunc(func(_ context.Context, _ string, recs []shardread.Record) error {
		for _, r := range recs {
			if r.Err != nil {
				return r.Err
			}
			seen[r.Change.EventID]++
		}
		return nil
	})
	cfg := shardread.Config{BatchSize: 3, Concurrency: 1, Backoff: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stats, err := shardread.NewReader(src, cfg).Run(ctx, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 20 {
		t.Errorf("read %d distinct records, want 20", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("record %s read %d times", id, n)
		}
	}
	if stats.Throttles != 4 || stats.ExpiredIterators != 1 || wire.Injected("GetRecords") != 4 {
		t.Errorf("stats %+v, injected %d: want 4 throttles, 1 expired iterator", stats, wire.Injected("GetRecords"))
	}
}

package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/kinesisread"
	"github.com/tributary/tributary/infra/streamsread"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/replay"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// serial applies one batch at a time. moto's TransactWriteItems copies the
// table for its rollback without a lock, so two transactions on one table at
// once fail there ("dictionary changed size during iteration", HTTP 500);
// DynamoDB has no such limit, and shards are still read concurrently.
func serial(h pipeline.BatchHandler) pipeline.BatchHandler {
	var mu sync.Mutex
	return pipeline.BatchHandlerFunc(func(ctx context.Context, changes []pipeline.Change) error {
		mu.Lock()
		defer mu.Unlock()
		return h.HandleBatch(ctx, changes)
	})
}

// putRecords writes records to a stream as DynamoDB's streaming
// destination does (its payload, its partition key), 500 a call, in order.
func putRecords(ctx context.Context, t testing.TB, c *kinesis.Client, stream string, recs []sim.KinesisRecord) {
	t.Helper()
	for i := 0; i < len(recs); i += 500 {
		in := &kinesis.PutRecordsInput{StreamName: aws.String(stream)}
		for j := i; j < min(i+500, len(recs)); j++ {
			in.Records = append(in.Records, ktypes.PutRecordsRequestEntry{
				PartitionKey: aws.String(recs[j].PartitionKey),
				Data:         sim.AppendKinesisPayload(nil, &recs[j].Record),
			})
		}
		res, err := c.PutRecords(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToInt32(res.FailedRecordCount) != 0 {
			t.Fatalf("PutRecords: %d failed", aws.ToInt32(res.FailedRecordCount))
		}
	}
}

// TestIntegrationReplayKinesis replays a Kinesis stream fed with DynamoDB
// streaming-destination payloads (PutRecords on the test server) into the
// projections, twice over: from the clean stream into the embedded store,
// and from a stream with duplicated and reordered records into the DynamoDB
// store, with its checkpoint in the aggregate table. Each replay is
// interrupted by a record limit and resumed from its checkpoint; then the
// same window is replayed again, and an overlapping one. After every step
// the aggregates equal projections.Recompute of the final items.
func TestIntegrationReplayKinesis(t *testing.T) {
	ctx := context.Background()
	kc := awstest.Kinesis(t)
	ddb := awstest.DynamoDB(t)
	h := history(t, 21, 800)
	want, err := projections.Recompute(h.Table.Items(), "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		recs   []sim.KinesisRecord
		dynamo bool
	}{
		{"clean-to-embedded", sim.ToKinesis(h.Records, 0, 1, sim.NewKinesisRand(21)), false},
		{"duplicated-reordered-to-dynamodb", sim.ToKinesis(h.Records, 0.08, 10, sim.NewKinesisRand(21)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := awstest.CreateStream(ctx, t, kc, "changes", 2)
			putRecords(ctx, t, kc, stream, tc.recs)

			var (
				st interface {
					driver.Store
					driver.Reader
				}
				cps checkpoint.Store
			)
			if tc.dynamo {
				table := awstest.UniqueName(t, "aggs")
				awstest.CreateTable(ctx, t, ddb, table, false)
				st, cps = dynamostore.New(ddb, table), checkpoint.NewTable(ddb, table)
			} else {
				st, cps = boltstoretest.Open(t), checkpoint.NewDir(t.TempDir())
			}
			cs := &counting{Table: st}
			e := newEngine(cs)
			src := kinesisread.New(kc, stream, pipeline.Options{})
			mid := midStamp(ctx, t, src)
			cfg := replay.Config{Source: src, Handler: serial(e), Checkpoints: cps, Job: checkpoint.JobID(stream, "TRIM_HORIZON"),
				Reader: shardread.Config{BatchSize: 200, MaxRecords: 300}}

			first := run(t, cfg)
			if !first.Read.Limited || first.Read.Records != 300 {
				t.Fatalf("interrupted replay: %+v", first.Read)
			}
			cfg.Reader.MaxRecords = 0
			rest := run(t, cfg)
			if !rest.Resumed || !rest.CaughtUp || first.Read.Records+rest.Read.Records != int64(len(tc.recs)) || rest.Failed != 0 {
				t.Fatalf("resumed replay: %+v (read %d + %d of %d)", rest, first.Read.Records, rest.Read.Records, len(tc.recs))
			}
			checkExact(t, "replay", st, want)
			stale, writes := e.Stats().Stale, cs.writes.Load()

			cfg.Restart = true
			again := run(t, cfg)
			checkExact(t, "the same window again", st, want)
			cfg.Restart = false
			cfg.Job = checkpoint.JobID(stream, mid.String())
			cfg.Reader.Start = shardread.Start{Type: shardread.AtTimestamp, Time: mid}
			overlap := run(t, cfg)
			checkExact(t, "an overlapping window", st, want)
			if w := cs.writes.Load() - writes; w != 0 || e.Stats().Stale == stale {
				t.Errorf("replays of windows already applied wrote %d aggregates or rows (want 0) and skipped %d items as applied", w, e.Stats().Stale-stale)
			}
			if again.Read.Records != int64(len(tc.recs)) || overlap.Read.Records == 0 || overlap.Read.Records >= again.Read.Records {
				t.Errorf("the same window read %d records, the overlapping one %d; want %d and fewer", again.Read.Records, overlap.Read.Records, len(tc.recs))
			}
		})
	}
}

// TestIntegrationReplayStreams makes real changes — PutItem, UpdateItem and
// DeleteItem with optimistic locking — to a table with a stream on the test
// server, then replays its DynamoDB stream into the projections: the first
// replay is cancelled half way and resumed from its checkpoint; then the
// same window again, and an overlapping one. The aggregates equal
// projections.Recompute of the table's items as a Scan returns them.
func TestIntegrationReplayStreams(t *testing.T) {
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "app")
	awstest.CreateTable(ctx, t, ddb, table, true)

	n := applyWorkload(ctx, t, ddb, table, sim.Workload{Seed: 22, Changes: 800, Skew: 1.0})
	items := scan(ctx, t, ddb, table)
	want, err := projections.Recompute(items, "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Aggregates) < 20 {
		t.Fatalf("workload too thin: %d aggregates", len(want.Aggregates))
	}

	arn, err := streamsread.StreamARN(ctx, awstest.Streams(t), table)
	if err != nil {
		t.Fatal(err)
	}
	src := streamsread.New(awstest.Streams(t), arn, pipeline.Options{})
	mid := midStamp(ctx, t, src)
	st := boltstoretest.Open(t)
	cs := &counting{Table: st}
	e := newEngine(cs)
	ctxA, cancel := context.WithCancel(ctx)
	var handled atomic.Int64
	stopping := pipeline.BatchHandlerFunc(func(ctx context.Context, changes []pipeline.Change) error {
		if err := e.HandleBatch(ctx, changes); err != nil {
			return err
		}
		if handled.Add(int64(len(changes))) >= 300 {
			cancel()
		}
		return nil
	})
	cps := checkpoint.NewDir(t.TempDir())
	cfg := replay.Config{Source: src, Handler: stopping, Checkpoints: cps, Job: checkpoint.JobID(arn, "TRIM_HORIZON"), Logger: quiet(),
		Reader: shardread.Config{BatchSize: 100, EmptyReads: 2, Logger: quiet()}}
	first, err := replay.New(cfg).Run(ctxA)
	if !errors.Is(err, context.Canceled) || first.Read.Records == 0 || first.Read.Records >= int64(n) {
		t.Fatalf("cancelled replay: %+v, %v", first.Read, err)
	}
	cfg.Handler = e
	rest := run(t, cfg)
	if !rest.Resumed || first.Read.Records+rest.Read.Records != int64(n) {
		t.Fatalf("resumed: read %d + %d of %d records", first.Read.Records, rest.Read.Records, n)
	}
	checkExact(t, "replay", st, want)

	writes := cs.writes.Load()
	cfg.Restart = true
	run(t, cfg)
	checkExact(t, "the same window again", st, want)
	cfg.Restart = false
	cfg.Job = checkpoint.JobID(arn, mid.String())
	cfg.Reader.Start = shardread.Start{Type: shardread.AtTimestamp, Time: mid}
	overlap := run(t, cfg)
	checkExact(t, "an overlapping window", st, want)
	if w := cs.writes.Load() - writes; w != 0 {
		t.Errorf("replays of windows already applied wrote %d aggregates or rows", w)
	}
	if overlap.Read.BeforeStart == 0 || overlap.Read.Records == 0 {
		t.Errorf("overlapping window: %+v; want records before its start dropped (no AT_TIMESTAMP in DynamoDB Streams)", overlap.Read)
	}
}

// applyWorkload makes a workload's changes to a real table, as an
// application with optimistic locking does: PutItem to create (only if
// absent), UpdateItem or PutItem to change (only at the version read),
// DeleteItem. It returns how many changes it made.
func applyWorkload(ctx context.Context, t testing.TB, c *dynamodb.Client, table string, w sim.Workload) int {
	t.Helper()
	model := sim.NewTable()
	n := 0
	err := w.Generate(func(op sim.Op) error {
		rec, ok, err := model.Apply(op)
		if err != nil || !ok {
			return err
		}
		n++
		ver := func(item pipeline.Item) *types.AttributeValueMemberN {
			return item["version"].(*types.AttributeValueMemberN)
		}
		switch {
		case rec.Kind == pipeline.Insert:
			_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: rec.New,
				ConditionExpression: aws.String("attribute_not_exists(PK)"), ReturnValuesOnConditionCheckFailure: allOld})
		case rec.Kind == pipeline.Modify && n%2 == 0:
			_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: rec.New,
				ConditionExpression: aws.String("version = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": ver(rec.Old)},
				ReturnValuesOnConditionCheckFailure: allOld})
		case rec.Kind == pipeline.Modify:
			_, err = c.UpdateItem(ctx, updateInput(table, rec))
		default:
			_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: rec.Keys,
				ConditionExpression: aws.String("version = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": ver(rec.Old)},
				ReturnValuesOnConditionCheckFailure: allOld})
		}
		if err != nil && applied(err, rec) {
			// The SDK retried a call whose first attempt had already
			// written (a 5xx or a lost response), and the retry found its
			// own write: the change is made once, as the stream shows.
			t.Logf("change %d (%s %s): a retried call found its first attempt applied", n, rec.Kind, pipeline.KeyString(rec.Keys))
			err = nil
		}
		if err != nil {
			var ccf *types.ConditionalCheckFailedException
			if errors.As(err, &ccf) {
				return fmt.Errorf("change %d (%s %s): %w; the item there: %s", n, rec.Kind, pipeline.KeyString(rec.Keys), err, pipeline.AppendItem(nil, ccf.Item))
			}
			return fmt.Errorf("change %d (%s %s): %w", n, rec.Kind, pipeline.KeyString(rec.Keys), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// midStamp reads every record of src and returns a time on the stream (the
// server's stamp, which windows are cut on) with records before it and at
// or after it: the middle record's, or the first later one when the first
// half of the records share one stamp. The stamps come from the server's
// clock, read back, so nothing waits for this host's clock to move past
// them. The test server returns no empty page before a shard's tip.
func midStamp(ctx context.Context, t testing.TB, src shardread.Source) time.Time {
	t.Helper()
	shards, err := src.Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stamps []time.Time
	for _, sh := range shards {
		it, err := src.Iterator(ctx, sh.ID, shardread.Start{Type: shardread.TrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		for it != "" {
			page, err := src.Read(ctx, sh.ID, it, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Records) == 0 {
				break
			}
			for _, r := range page.Records {
				stamps = append(stamps, r.Time)
			}
			it = page.Next
		}
	}
	slices.SortFunc(stamps, time.Time.Compare)
	for i := len(stamps) / 2; i < len(stamps); i++ {
		if stamps[0].Before(stamps[i]) {
			return stamps[i]
		}
	}
	t.Fatalf("the %d records of the stream have no two stamps apart: no window starts among them", len(stamps))
	return time.Time{}
}

// applied reports whether err is a failed condition that leaves the item as
// rec would: its new version there, or, for a removal, no item at all. The
// calls ask for the item as it was on a failed condition
// (ReturnValuesOnConditionCheckFailure ALL_OLD).
func applied(err error, rec sim.Record) bool {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return false
	}
	if rec.Kind == pipeline.Remove {
		return len(ccf.Item) == 0
	}
	got, ok := ccf.Item["version"].(*types.AttributeValueMemberN)
	want, _ := rec.New["version"].(*types.AttributeValueMemberN)
	return ok && want != nil && got.Value == want.Value
}

// updateInput turns a record's old and new images into an UpdateItem: SET
// what is new or changed, REMOVE what is gone, on condition of the old
// version.
func updateInput(table string, rec sim.Record) *dynamodb.UpdateItemInput {
	names := map[string]string{}
	values := map[string]types.AttributeValue{":old": rec.Old["version"]}
	var set, remove []string
	i := 0
	for k, v := range rec.New {
		if k == "PK" || k == "SK" {
			continue
		}
		i++
		names["#a"+strconv.Itoa(i)] = k
		values[":a"+strconv.Itoa(i)] = v
		set = append(set, "#a"+strconv.Itoa(i)+" = :a"+strconv.Itoa(i))
	}
	for k := range rec.Old {
		if _, ok := rec.New[k]; !ok {
			i++
			names["#a"+strconv.Itoa(i)] = k
			remove = append(remove, "#a"+strconv.Itoa(i))
		}
	}
	names["#v"] = "version"
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: rec.Keys, UpdateExpression: aws.String(expr),
		ConditionExpression: aws.String("#v = :old"), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: allOld}
}

const allOld = types.ReturnValuesOnConditionCheckFailureAllOld

func scan(ctx context.Context, t testing.TB, c *dynamodb.Client, table string) []pipeline.Item {
	t.Helper()
	var items []pipeline.Item
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, page.Items...)
	}
	return items
}

// TestIntegrationReplayThroughput measures replay throughput against the
// test server, reading and applying apart: a read-only pass (GetRecords and
// decoding), then a replay into the embedded store (no fsync), each with its
// summed read and apply times; then a smaller replay into the DynamoDB
// store on the server (moto copies the whole table for every transaction,
// so that pass measures moto more than the replay). In make
// test-integration it is a smoke test of 2,000 and 200 records; for the
// figures in docs/replay.md set TRIBUTARY_REPLAY_RECORDS=20000 and
// TRIBUTARY_REPLAY_DDB_RECORDS=2000:
//
//	TRIBUTARY_REPLAY_RECORDS=20000 TRIBUTARY_REPLAY_DDB_RECORDS=2000 \
//	  bash .ci/servers.sh run -- go test -count=1 -run IntegrationReplayThroughput -v ./internal/capabilities/replay/
func TestIntegrationReplayThroughput(t *testing.T) {
	ctx := context.Background()
	kc := awstest.Kinesis(t)
	size := func(env string, n int) int {
		if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
			return v
		}
		return n
	}
	report := func(what string, sum replay.Summary, wall time.Duration) {
		r := sum.Read
		t.Logf("%-32s %6d records in %6.2fs = %7.0f records/s; read (GetRecords+decode, summed over shards) %6.2fs = %7.0f records/s; apply %6.2fs = %7.0f records/s",
			what, r.Records, wall.Seconds(), float64(r.Records)/wall.Seconds(),
			r.ReadTime.Seconds(), float64(r.Records)/r.ReadTime.Seconds(),
			r.HandleTime.Seconds(), float64(r.Records)/max(r.HandleTime.Seconds(), 1e-9))
	}
	rc := shardread.Config{BatchSize: 1000}
	load := func(seedN uint64, n int) (shardread.Source, *projections.View, int) {
		h := history(t, seedN, n)
		recs := sim.ToKinesis(h.Records, 0.02, 8, sim.NewKinesisRand(seedN))
		stream := awstest.CreateStream(ctx, t, kc, "changes", 4)
		t0 := time.Now()
		putRecords(ctx, t, kc, stream, recs)
		t.Logf("wrote %d records to a 4-shard stream in %.1fs", len(recs), time.Since(t0).Seconds())
		want, _ := projections.Recompute(h.Table.Items(), "", seed.All()...)
		return kinesisread.New(kc, stream, pipeline.Options{}), want, len(recs)
	}

	src, want, _ := load(31, size("TRIBUTARY_REPLAY_RECORDS", 2000))
	noop := pipeline.BatchHandlerFunc(func(context.Context, []pipeline.Change) error { return nil })
	// One shard at a time, the read and the apply times add up (less the
	// overlap of reading a page while the last is applied); four at once
	// give the wall-clock rate.
	for _, c := range []int{1, 4} {
		rc.Concurrency = c
		t0 := time.Now()
		sum := run(t, replay.Config{Source: src, Handler: noop, Reader: rc})
		report(fmt.Sprintf("read only, %d shard(s) at once", c), sum, time.Since(t0))
	}
	for _, c := range []int{1, 4} {
		rc.Concurrency = c
		st := boltstoretest.Open(t)
		t0 := time.Now()
		sum := run(t, replay.Config{Source: src, Handler: newEngine(st), Reader: rc})
		report(fmt.Sprintf("embedded store, %d at once", c), sum, time.Since(t0))
		checkExact(t, "embedded", st, want)
	}

	src, want, _ = load(32, size("TRIBUTARY_REPLAY_DDB_RECORDS", 200))
	ddb := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "aggs")
	awstest.CreateTable(ctx, t, ddb, table, false)
	ds := dynamostore.New(ddb, table)
	rc.Concurrency = 1
	t0 := time.Now()
	sum := run(t, replay.Config{Source: src, Handler: newEngine(ds), Reader: rc})
	report("DynamoDB store (moto), 1", sum, time.Since(t0))
	checkExact(t, "dynamodb", ds, want)
}

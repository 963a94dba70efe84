package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

const redriveFixtures = "../../internal/capabilities/redrive/testdata/destination"

func TestReplayUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--store", "x"}, "--from must be kinesis://STREAM or streams://TABLE"},
		{[]string{"replay", "--from", "kafka://x", "--store", "x"}, "--from must be"},
		{[]string{"replay", "--from", "kinesis://s"}, "give --store DIR, --table NAME or --rebuild-into NEW_TABLE"},
		{[]string{"replay", "--from", "kinesis://s", "--store", "x", "--rebuild-into", "t"}, "exclusive"},
		{[]string{"replay", "--from", "kinesis://s", "--store", "x", "--start", "yesterday"}, "start \"yesterday\""},
		{[]string{"replay", "--from", "kinesis://s", "--store", "x", "--until", "soon"}, "--until \"soon\""},
		{[]string{"replay", "--from", "kinesis://s", "--store", "x", "--start", "2026-11-30T10:00:00Z", "--until", "2026-11-30T09:00:00Z"}, "--until must be after --start"},
		{[]string{"replay", "--from", "kinesis://s", "--rebuild-into", "t", "--dry-run"}, "--dry-run with --rebuild-into"},
		{[]string{"replay", "--from", "kinesis://s", "--store", "x", "--batch-size", "0"}, "--batch-size"},
		{[]string{"replay", "--from", "kinesis://s", "--store", "x", "extra"}, "unexpected argument"},
		{[]string{"redrive", "--store", "x"}, "--from is required"},
		{[]string{"redrive", "--from", "s3://", "--store", "x"}, "has no bucket"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
	if code, _, stderr := runCLI(t, "replay", "-h"); code != 0 || !strings.Contains(stderr, "-rebuild-into") {
		t.Errorf("replay -h: exit %d, %s", code, stderr)
	}
}

func storeView(t *testing.T, dir string) *projections.View {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	v, err := projections.ReadView(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRedriveCommand redrives the fixture destination (a Kinesis batch with
// a poison record, a DynamoDB Streams batch) from a directory: the poison
// record is reported and the command fails; everything else is applied, and
// a second redrive writes nothing. A dry run writes nothing either.
func TestRedriveCommand(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "redrive", "--from", redriveFixtures, "--store", filepath.Join(dir, "dry"), "--dry-run")
	if code != 1 || !strings.Contains(out, "would apply: ") || len(storeView(t, filepath.Join(dir, "dry")).Aggregates) != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, stderr)
	}
	store := filepath.Join(dir, "store")
	code, out, stderr = runCLI(t, "redrive", "--from", redriveFixtures, "--store", store)
	for _, want := range []string{"objects:  2 read, 1 fully applied", "records:  11; 10 applied, 0 skipped (no projection reads their entity type), 1 failed again", "kinesis RetryAttemptsExhausted shard shardId-000000000001, 7 records", "streams RetryAttemptsExhausted shard shardId-00000001764489600000-1a2b3c4d, 4 records"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(stderr, `"LOST"`) {
		t.Errorf("exit %d, stderr %q: want 1 and the poison record", code, stderr)
	}
	first := storeView(t, store)
	if len(first.Aggregates) == 0 {
		t.Fatal("nothing applied")
	}
	_, out, _ = runCLI(t, "redrive", "--from", redriveFixtures, "--store", store)
	if !strings.Contains(out, "applied:  0 item states written") {
		t.Errorf("second redrive:\n%s", out)
	}
	if d := projections.Diff(storeView(t, store), first); len(d) > 0 {
		t.Errorf("second redrive changed the aggregates: %v", d)
	}
	// A record without a payload says how to read its batch again.
	meta := t.TempDir()
	if err := os.WriteFile(filepath.Join(meta, "r"), []byte(`{"requestContext":{"condition":"RecordAgeExceeded"},"version":"1.0","timestamp":"2026-11-30T10:13:49.717Z",
	  "KinesisBatchInfo":{"shardId":"shardId-000000000003","startSequenceNumber":"4965","endSequenceNumber":"4970","approximateArrivalOfFirstRecord":"2026-11-30T10:13:19.100Z",
	  "approximateArrivalOfLastRecord":"2026-11-30T10:13:20.500Z","batchSize":6,"streamArn":"arn:aws:kinesis:eu-west-1:111122223333:stream/app-changes"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "redrive", "--from", meta, "--store", store)
	if code != 1 || !strings.Contains(out, "tributary replay --from kinesis://arn:aws:kinesis:eu-west-1:111122223333:stream/app-changes --start shardId-000000000003:4965 --until 2026-11-30T10:13:21Z") {
		t.Errorf("metadata-only record: exit %d\n%s", code, out)
	}
}

// awsEnv points the command's default AWS configuration at the test server.
func replayAWSEnv(t *testing.T) string {
	url := awstest.MotoURL(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", awstest.Region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	return url
}

// TestIntegrationReplayCommand runs `tributary replay` against a Kinesis
// stream on the test server, fed with duplicated and reordered streaming-
// redriveFixtures records: a replay limited to some records, resumed; the same
// command again (nothing new), with --restart (nothing written); a filtered
// replay refused on the shared store and accepted on a store of its own; a
// rebuild into a new DynamoDB table.
func TestIntegrationReplayCommand(t *testing.T) {
	url := replayAWSEnv(t)
	ctx := context.Background()
	kc := awstest.Kinesis(t)
	stream := awstest.CreateStream(ctx, t, kc, "changes", 2)
	h, err := sim.Workload{Seed: 51, Changes: 500, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	recs := sim.ToKinesis(h.Records, 0.05, 8, sim.NewKinesisRand(51))
	for i := 0; i < len(recs); i += 250 {
		in := &kinesis.PutRecordsInput{StreamName: aws.String(stream)}
		for _, r := range recs[i:min(i+250, len(recs))] {
			in.Records = append(in.Records, ktypes.PutRecordsRequestEntry{PartitionKey: aws.String(r.PartitionKey), Data: sim.AppendKinesisPayload(nil, &r.Record)})
		}
		if _, err := kc.PutRecords(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := projections.Recompute(h.Table.Items(), "", seed.All()...)
	store := filepath.Join(t.TempDir(), "aggs")
	from := "kinesis://" + stream
	args := []string{"replay", "--from", from, "--store", store, "--endpoint", url, "--batch-size", "100"}

	code, out, stderr := runCLI(t, append(args, "--limit", "200")...)
	if code != 0 || !strings.Contains(out, "read:     200 records") || !strings.Contains(out, "stopped at --limit 200") {
		t.Fatalf("limited: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, args...)
	if code != 0 || !strings.Contains(out, "resumed from the checkpoint") || !strings.Contains(out, "caught up with the stream") {
		t.Fatalf("resumed: exit %d\n%s\n%s", code, out, stderr)
	}
	if d := projections.Diff(storeView(t, store), want); len(d) > 0 {
		t.Fatalf("aggregates differ from the recomputation: %v", d[:min(len(d), 10)])
	}
	if _, out, _ = runCLI(t, args...); !strings.Contains(out, "read:     0 records") {
		t.Errorf("run again:\n%s", out)
	}
	code, out, _ = runCLI(t, append(args, "--restart")...)
	if code != 0 || !strings.Contains(out, "applied:  0 item states written") || strings.Contains(out, "skipped:  0 already") {
		t.Errorf("--restart:\n%s", out)
	}

	// A filtered replay: refused on the shared store, fine on its own.
	code, _, stderr = runCLI(t, append(args, "--projection", "season-leaderboard")...)
	if code != 1 || !strings.Contains(stderr, "projection set mismatch") {
		t.Errorf("filtered replay into the shared store: exit %d, %s", code, stderr)
	}
	own := filepath.Join(t.TempDir(), "leaderboard")
	code, out, stderr = runCLI(t, "replay", "--from", from, "--store", own, "--endpoint", url, "--projection", "season-leaderboard")
	if code != 0 {
		t.Fatalf("filtered replay into its own store: exit %d\n%s\n%s", code, out, stderr)
	}
	v := storeView(t, own)
	for r := range want.Rows {
		if _, ok := v.Rows[r]; !ok && r.Projection == "season-leaderboard" {
			t.Errorf("leaderboard row %v missing", r)
		}
	}
	if len(v.Aggregates) != 0 {
		t.Errorf("a leaderboard-only store holds aggregates of other projections: %v", v.Aggregates)
	}

	// A rebuild into a new table.
	table := awstest.UniqueName(t, "rebuild")
	ddb := awstest.DynamoDB(t)
	awstest.DeleteTableAtEnd(t, ddb, table)
	code, out, stderr = runCLI(t, "replay", "--from", from, "--rebuild-into", table, "--endpoint", url, "--concurrency", "1", "--checkpoint-dir", t.TempDir())
	if code != 0 || !strings.Contains(out, "rebuild:  "+table+" has caught up") {
		t.Fatalf("rebuild: exit %d\n%s\n%s", code, out, stderr)
	}
	rv, err := projections.ReadView(ctx, dynamostore.New(ddb, table))
	if err != nil {
		t.Fatal(err)
	}
	if d := projections.Diff(rv, want); len(d) > 0 {
		t.Errorf("rebuilt table differs: %v", d[:min(len(d), 10)])
	}
	// Not twice into a table that holds aggregates, without its checkpoint.
	if code, _, stderr = runCLI(t, "replay", "--from", from, "--rebuild-into", table, "--endpoint", url, "--checkpoint-dir", t.TempDir()); code != 2 || !strings.Contains(stderr, "already holds aggregates") {
		t.Errorf("rebuild into a full table: exit %d, %s", code, stderr)
	}
}

// TestIntegrationReplayCommandStreams replays a table's DynamoDB stream on
// the test server after real writes to the table.
func TestIntegrationReplayCommandStreams(t *testing.T) {
	url := replayAWSEnv(t)
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "app")
	awstest.CreateTable(ctx, t, ddb, table, true)
	model := sim.NewTable()
	err := sim.Workload{Seed: 52, Changes: 300, Skew: 1.0}.Generate(func(op sim.Op) error {
		rec, ok, err := model.Apply(op)
		if err != nil || !ok {
			return err
		}
		if rec.Kind == pipeline.Remove {
			_, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: rec.Keys})
		} else {
			_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: rec.New})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := projections.Recompute(model.Items(), "", seed.All()...)
	store := filepath.Join(t.TempDir(), "aggs")
	code, out, stderr := runCLI(t, "replay", "--from", "streams://"+table, "--store", store, "--endpoint", url)
	if code != 0 || !strings.Contains(out, "read:     300 records") || !strings.Contains(out, "caught up") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if d := projections.Diff(storeView(t, store), want); len(d) > 0 {
		t.Fatalf("aggregates differ: %v", d[:min(len(d), 10)])
	}
}

// TestIntegrationRedriveCommandS3 redrives the fixtures from a bucket on
// the test server.
func TestIntegrationRedriveCommandS3(t *testing.T) {
	url := replayAWSEnv(t)
	ctx := context.Background()
	client := awstest.S3(t)
	bucket := awstest.CreateBucket(ctx, t, client, "failures")
	err := objstore.NewDir(redriveFixtures).List(ctx, "", func(o objstore.Object) error {
		data, err := os.ReadFile(filepath.Join(redriveFixtures, o.Key))
		if err != nil {
			return err
		}
		_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("projector/" + o.Key), Body: bytes.NewReader(data)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "aggs")
	code, out, stderr := runCLI(t, "redrive", "--from", "s3://"+bucket+"/projector/", "--store", store, "--endpoint", url)
	if code != 1 || !strings.Contains(out, "objects:  2 read, 1 fully applied") || !strings.Contains(stderr, `"LOST"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

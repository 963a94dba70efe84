package redrive_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

var update = flag.Bool("update", false, "rewrite the fixtures under testdata/destination")

// The fixtures are invocation records as Lambda writes them to an S3
// on-failure destination, one object per discarded batch, at
// aws/lambda/<ESM-UUID>/<shardID>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<UUID>, with
// the whole invocation event as a JSON string in "payload". Their batches
// come from the simulator (seed 41), in the wire formats of
// pipeline/testdata; the Kinesis batch ends with a poison record (an Order
// whose status no projection knows).
const (
	kinesisKey  = "aws/lambda/3f1c5b4e-8a2d-4c7e-9b1a-6d2e8f0a7c31/shardId-000000000001/2026/11/30/2026-11-30T10.15.42-9c4f7a2e-51b8-4d3a-8e6f-0b2c7d9e1a54"
	streamsKey  = "aws/lambda/a7e2c9d1-3b4f-4e8a-9c5d-2f1e0b6a8d47/shardId-00000001764489600000-1a2b3c4d/2026/11/30/2026-11-30T10.21.07-4b8e2f1a-7c3d-4a9e-b5f0-6d1c8e2a3f97"
	destination = "testdata/destination"
)

// fixtures returns the fixture objects, keyed by key.
func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	h, err := sim.Workload{Seed: 41, Changes: 200, Skew: 1.0, Shards: 2}.Run()
	if err != nil {
		t.Fatal(err)
	}
	krecs := sim.ToKinesis(h.Records, 0.1, 6, sim.NewKinesisRand(41))
	var kbatch []sim.KinesisRecord
	for _, r := range krecs {
		if r.KinesisShard == 1 && len(kbatch) < 6 {
			kbatch = append(kbatch, r)
		}
	}
	last := kbatch[len(kbatch)-1]
	poison := last
	poison.Record = sim.Record{Kind: pipeline.Insert, Time: poison.Time, EventID: "5d0c4e7f1a2b4c8d9e0f1a2b3c4d5e6f", Shard: poison.Shard,
		Keys: pipeline.Item{"PK": s("USER#u999"), "SK": s("ORDER#2026-11-30#o9999")},
		New: pipeline.Item{"PK": s("USER#u999"), "SK": s("ORDER#2026-11-30#o9999"), "EntityType": s("Order"), "status": s("LOST"),
			"total": &types.AttributeValueMemberN{Value: "12.00"}, "orderDate": s("2026-11-30"), "version": &types.AttributeValueMemberN{Value: "1"}}}
	seq, _ := new(big.Int).SetString(last.KinesisSeq, 10)
	poison.KinesisSeq = seq.Add(seq, big.NewInt(1)).String()
	poison.Arrival = last.Arrival.Add(3 * time.Millisecond)
	kbatch = append(kbatch, poison)
	kinfo := map[string]any{
		"shardId":                         "shardId-000000000001",
		"startSequenceNumber":             kbatch[0].KinesisSeq,
		"endSequenceNumber":               kbatch[len(kbatch)-1].KinesisSeq,
		"approximateArrivalOfFirstRecord": kbatch[0].Arrival.Format("2006-01-02T15:04:05.000Z"),
		"approximateArrivalOfLastRecord":  kbatch[len(kbatch)-1].Arrival.Format("2006-01-02T15:04:05.000Z"),
		"batchSize":                       len(kbatch),
		"streamArn":                       sim.KinesisStreamARN,
	}
	var sbatch []sim.Record
	for _, r := range h.Records[100:] {
		if r.Shard == 0 && len(sbatch) < 4 {
			sbatch = append(sbatch, r)
		}
	}
	sinfo := map[string]any{
		"shardId":                         "shardId-00000001764489600000-1a2b3c4d",
		"startSequenceNumber":             sbatch[0].Seq,
		"endSequenceNumber":               sbatch[len(sbatch)-1].Seq,
		"approximateArrivalOfFirstRecord": sbatch[0].Time.Truncate(time.Second).Format(time.RFC3339),
		"approximateArrivalOfLastRecord":  sbatch[len(sbatch)-1].Time.Truncate(time.Second).Format(time.RFC3339),
		"batchSize":                       len(sbatch),
		"streamArn":                       sim.StreamARN,
	}
	return map[string][]byte{
		kinesisKey: record(t, "KinesisBatchInfo", kinfo, sim.KinesisEvent(kbatch), "9e2b7c4d-1f3a-4b6e-8d5c-7a0f2e9b3c61", 3, "2026-11-30T10:15:42.481Z"),
		streamsKey: record(t, "DDBStreamBatchInfo", sinfo, sim.StreamsEvent(sbatch), "c3d8a1f6-2e4b-4c7d-9a0e-5b1f8c2d6e73", 6, "2026-11-30T10:21:07.093Z"),
	}
}

func s(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }

// record writes an invocation record in the field order of the Lambda
// developer guide's example.
func record(t testing.TB, infoName string, info map[string]any, event []byte, requestID string, invokes int, ts string) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("{\n")
	b.WriteString(`    "requestContext": {"requestId": "` + requestID + `", "functionArn": "arn:aws:lambda:eu-west-1:111122223333:function:tributary-projector", "condition": "RetryAttemptsExhausted", "approximateInvokeCount": ` + strconv.Itoa(invokes) + "},\n")
	b.WriteString(`    "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},` + "\n")
	b.WriteString(`    "version": "1.0",` + "\n")
	b.WriteString(`    "timestamp": "` + ts + `",` + "\n")
	infoJSON, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(`    "` + infoName + `": ` + string(infoJSON) + ",\n")
	payload, err := json.Marshal(string(event))
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(`    "payload": ` + string(payload) + "\n}\n")
	return b.Bytes()
}

// TestFixtures checks the fixtures against their generator (go test -update
// rewrites them).
func TestFixtures(t *testing.T) {
	for key, want := range fixtures(t) {
		path := filepath.Join(destination, filepath.FromSlash(key))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its generator (go test -update)", path)
		}
	}
}

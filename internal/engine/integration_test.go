package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// TestIntegrationExactlyOnceDynamoDB runs the exactly-once simulation, with
// faults, redeliveries and a full replay, against the DynamoDB store on a
// real AWS-protocol server (moto_server, started by make test).
func TestIntegrationExactlyOnceDynamoDB(t *testing.T) {
	client := awstest.DynamoDB(t)
	ctx := context.Background()
	table := awstest.UniqueName(t, "aggs")
	if err := dynamostore.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	st := dynamostore.New(client, table)

	h, err := sim.Workload{Seed: 21, Changes: 1500, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	want, err := projections.Recompute(h.Table.Items(), "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	faulty := &sim.FaultyStore{Store: st, Seed: 5, CommitFailBefore: 0.03, CommitFailAfter: 0.03, ReadFail: 0.02}
	e := engine.New(faulty, engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}}, seed.All()...)
	p := pipeline.NewStreamsProcessor(e, pipeline.Config{Logger: quiet()})
	esm := &sim.ESM{BatchSize: 250, Bisect: true, RedeliverRate: 0.05, MaxAttempts: 1000, Seed: 9}
	shards := sim.StreamsShards(h.Records)
	for _, stage := range []string{"delivery", "replay"} {
		if _, err := esm.Run(ctx, shards, p.Invoke); err != nil {
			t.Fatal(err)
		}
		if d := projections.Diff(mustView(t, st), want); len(d) > 0 {
			t.Fatalf("after %s: %d differences:\n%s", stage, len(d), strings.Join(d[:min(20, len(d))], "\n"))
		}
	}
	if faulty.Faults().Total() == 0 {
		t.Fatal("no faults injected")
	}
	// The leaderboard's top entry is one Query on the table.
	for ref := range want.Rows {
		rows, err := st.QueryRows(ctx, ref.Projection, ref.Partition, 1)
		if err != nil || len(rows) != 1 {
			t.Fatalf("QueryRows %s: %v %v", ref.Partition, rows, err)
		}
		break
	}
}

package checkpoint_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/checkpoint/checkpointtest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline/shardread"
)

func TestDir(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { return checkpoint.NewDir(t.TempDir()) })
}

// TestObjectsS3 runs the suite on checkpoints kept in S3 (gofakes3, in
// process), as a load keeps its own in its output.
func TestObjectsS3(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store {
		c := awstest.GoFakeS3(t)
		bucket := awstest.CreateBucket(context.Background(), t, c, "ckpt")
		return checkpoint.NewObjects(objstore.NewS3(c, bucket, "out", objstore.S3Options{}), "_reimport/")
	})
}

// TestIntegrationObjectsS3 runs the suite on checkpoints kept in S3 on the
// test server.
func TestIntegrationObjectsS3(t *testing.T) {
	c := awstest.S3(t)
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store {
		bucket := awstest.CreateBucket(context.Background(), t, c, "ckpt")
		return checkpoint.NewObjects(objstore.NewS3(c, bucket, "out", objstore.S3Options{}), "_reimport/")
	})
}

// TestIntegrationTable runs the suite on a DynamoDB table on the test
// server: the aggregate table's own layout, which checkpoints can share.
func TestIntegrationTable(t *testing.T) {
	client := awstest.DynamoDB(t)
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store {
		table := awstest.UniqueName(t, "ckpt")
		awstest.CreateTable(context.Background(), t, client, table, false)
		return checkpoint.NewTable(client, table)
	})
}

func TestJobID(t *testing.T) {
	a, b := checkpoint.JobID("kinesis://s", "TRIM_HORIZON", ""), checkpoint.JobID("kinesis://s", "TRIM_HORIZON", "x")
	if a == b || !strings.HasPrefix(a, "replay-") || len(a) != len("replay-")+16 || a != checkpoint.JobID("kinesis://s", "TRIM_HORIZON", "") {
		t.Errorf("JobID: %s, %s", a, b)
	}
	if r := checkpoint.JobIDFor("reimport", "kinesis://s", "TRIM_HORIZON", ""); !strings.HasPrefix(r, "reimport-") || r[len("reimport-"):] != a[len("replay-"):] {
		t.Errorf("JobIDFor: %s beside %s", r, a)
	}
}

// loseFirstResponse makes w pass the first PutItem on to the server and
// answer the SDK with a 500, as if the response were lost: the SDK retries
// a write that has already happened. It reports whether it has.
func loseFirstResponse(w *awstest.Wire) *atomic.Bool {
	var lost atomic.Bool
	w.On("PutItem", func(req *http.Request, body []byte, forward awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
		resp, rb, err := forward(body)
		if err != nil || !lost.CompareAndSwap(false, true) {
			return resp, rb, false, err
		}
		eb := []byte(awstest.DynamoDBErrorBody("InternalServerError", "Internal server error", ""))
		return awstest.DynamoDBResponse(req, http.StatusInternalServerError, eb), eb, false, nil
	})
	return &lost
}

// TestIntegrationTableRetriedSave: a save whose first attempt wrote but
// whose response was lost succeeds on the SDK's retry (which finds its own
// write behind the failed condition), rather than reporting a conflict with
// another run; a save at a stale revision still conflicts.
func TestIntegrationTableRetriedSave(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t)
	wire := &awstest.Wire{}
	cfg.HTTPClient = wire
	client := dynamodb.NewFromConfig(cfg)
	table := awstest.UniqueName(t, "ckpt")
	awstest.CreateTable(ctx, t, client, table, false)
	st := checkpoint.NewTable(client, table)

	for rev := range int64(2) {
		lost := loseFirstResponse(wire)
		cp := &checkpoint.Checkpoint{Job: "replay-0123456789abcdef", Rev: rev, Shards: map[string]shardread.Position{}}
		if err := st.Save(ctx, cp); err != nil {
			t.Fatalf("save at revision %d with its response lost: %v", rev, err)
		}
		if !lost.Load() || cp.Rev != rev+1 {
			t.Fatalf("save at revision %d: response lost %t, revision now %d", rev, lost.Load(), cp.Rev)
		}
		got, err := st.Load(ctx, cp.Job)
		if err != nil || got.Rev != rev+1 {
			t.Fatalf("load after save at revision %d: %+v, %v", rev, got, err)
		}
	}
	wire.On("PutItem", nil) // no more lost responses
	stale := &checkpoint.Checkpoint{Job: "replay-0123456789abcdef", Rev: 1, Shards: map[string]shardread.Position{}}
	if err := st.Save(ctx, stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("save at a stale revision: %v, want ErrConflict", err)
	}
}

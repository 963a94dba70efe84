package checkpoint_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/checkpoint/checkpointtest"
	"github.com/tributary/tributary/infra/shardread"
	"github.com/tributary/tributary/internal/awstest"
)

func TestDir(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { return checkpoint.NewDir(t.TempDir()) })
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
}

// lostResponse is an HTTP client that passes requests on to the test
// server, but answers the first PutItem after the server has handled it
// with a 500, as if the response were lost: the SDK retries a write that
// has already happened.
type lostResponse struct {
	lost atomic.Bool
}

func (l *lostResponse) Do(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil || !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".PutItem") || !l.lost.CompareAndSwap(false, true) {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`
	return &http.Response{
		StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}, nil
}

// TestIntegrationTableRetriedSave: a save whose first attempt wrote but
// whose response was lost succeeds on the SDK's retry (which finds its own
// write behind the failed condition), rather than reporting a conflict with
// another run; a save at a stale revision still conflicts.
func TestIntegrationTableRetriedSave(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t)
	wire := &lostResponse{}
	cfg.HTTPClient = wire
	client := dynamodb.NewFromConfig(cfg)
	table := awstest.UniqueName(t, "ckpt")
	awstest.CreateTable(ctx, t, client, table, false)
	st := checkpoint.NewTable(client, table)

	for rev := range int64(2) {
		wire.lost.Store(false)
		cp := &checkpoint.Checkpoint{Job: "replay-0123456789abcdef", Rev: rev, Shards: map[string]shardread.Position{}}
		if err := st.Save(ctx, cp); err != nil {
			t.Fatalf("save at revision %d with its response lost: %v", rev, err)
		}
		if !wire.lost.Load() || cp.Rev != rev+1 {
			t.Fatalf("save at revision %d: response lost %t, revision now %d", rev, wire.lost.Load(), cp.Rev)
		}
		got, err := st.Load(ctx, cp.Job)
		if err != nil || got.Rev != rev+1 {
			t.Fatalf("load after save at revision %d: %+v, %v", rev, got, err)
		}
	}
	wire.lost.Store(true) // no more lost responses
	stale := &checkpoint.Checkpoint{Job: "replay-0123456789abcdef", Rev: 1, Shards: map[string]shardread.Position{}}
	if err := st.Save(ctx, stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("save at a stale revision: %v, want ErrConflict", err)
	}
}

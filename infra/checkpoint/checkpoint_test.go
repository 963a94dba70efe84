package checkpoint_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/checkpoint/checkpointtest"
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

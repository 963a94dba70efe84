package dynamostore_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/projections/driver/drivertest"
	"github.com/tributary/tributary/projections/driver/target"
)

// newTarget creates a target table keyed by key and its ledger table on
// the test server, deleted when the test ends.
func newTarget(t *testing.T, key target.Key) (*dynamodb.Client, string) {
	t.Helper()
	client := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "target")
	if err := dynamostore.CreateTargetTables(t.Context(), client, table, dynamostore.LedgerTable(table), key); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{table, dynamostore.LedgerTable(table)} {
		awstest.DeleteTableAtEnd(t, client, name) // gone already is no error (a retried DeleteTable)
	}
	return client, table
}

func TestIntegrationTargetConformance(t *testing.T) {
	drivertest.RunTarget(t, func(t *testing.T, key target.Key) drivertest.Store {
		client, table := newTarget(t, key)
		got, err := dynamostore.TargetKeyOf(t.Context(), client, table)
		if err != nil || got != key {
			t.Fatalf("TargetKeyOf = %v %v, want %v", got, err, key)
		}
		return dynamostore.NewTarget(&serialAPI{api: client}, table, dynamostore.LedgerTable(table), drivertest.TargetName, key)
	})
}

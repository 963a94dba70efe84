package dynamostore

import (
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/projections/driver"
)

func TestKeysEscapeProjection(t *testing.T) {
	tests := []struct {
		got  map[string]types.AttributeValue
		want string
	}{
		{rowKey(driver.RowRef{Projection: "board", Partition: "S#1", Sort: "x"}), "R#board#S#1"},
		{rowKey(driver.RowRef{Projection: "p#P", Partition: "x", Sort: "0"}), "R#p%23P#x"},
		{rowKey(driver.RowRef{Projection: "p", Partition: "P#x", Sort: "0"}), "R#p#P#x"},
		{rowKey(driver.RowRef{Projection: "100%#", Partition: "x", Sort: "0"}), "R#100%25%23#x"},
		{aggregateKey(driver.AggregateRef{Projection: "a#b", Key: "c#d", Shard: 12}), "A#a%23b#c#d#12"},
		{ledgerKey("ORDER#1"), "L#ORDER#1"},
	}
	for _, tt := range tests {
		checkS(t, tt.got, "PK", tt.want)
	}
	checkS(t, rowKey(driver.RowRef{Projection: "board", Partition: "S#1", Sort: "R#9"}), "SK", "R#9")
	checkS(t, aggregateKey(driver.AggregateRef{Projection: "p", Key: "k"}), "SK", "A")
	checkS(t, ledgerKey("ORDER#1"), "SK", "L")
}

func checkS(t *testing.T, m map[string]types.AttributeValue, name, want string) {
	t.Helper()
	if v, ok := m[name].(*types.AttributeValueMemberS); !ok || v.Value != want {
		t.Errorf("%s = %#v, want S %q", name, m[name], want)
	}
}

func checkN(t *testing.T, m map[string]types.AttributeValue, name, want string) {
	t.Helper()
	if v, ok := m[name].(*types.AttributeValueMemberN); !ok || v.Value != want {
		t.Errorf("%s = %#v, want N %q", name, m[name], want)
	}
}

// TestLayoutNamesAreReserved: every attribute the store writes for its own
// bookkeeping — keys, a ledger entry's revision, body and expiry, an
// aggregate's and a row's reference — is one of projections.ReservedNames,
// so that no value or row attribute can collide with it.
func TestLayoutNamesAreReserved(t *testing.T) {
	s := New(nil, "t")
	var names []string
	ledger, err := s.ledgerPut(driver.LedgerPut{Key: "k", ExpectRev: 1, Body: []byte("b"), ExpiresAt: 1796033700})
	if err != nil {
		t.Fatal(err)
	}
	names = slices.AppendSeq(names, maps.Keys(ledger.Item))
	names = slices.AppendSeq(names, maps.Values(ledger.ExpressionAttributeNames))
	agg, err := s.aggregateUpdate(driver.Add{Ref: driver.AggregateRef{Projection: "p", Key: "k", Shard: 1}})
	if err != nil {
		t.Fatal(err)
	}
	names = slices.AppendSeq(names, maps.Keys(agg.Key))
	names = slices.AppendSeq(names, maps.Values(agg.ExpressionAttributeNames))
	row, err := s.rowPut(driver.RowPut{Ref: driver.RowRef{Projection: "p", Partition: "P", Sort: "S"}})
	if err != nil {
		t.Fatal(err)
	}
	names = slices.AppendSeq(names, maps.Keys(row.Item))
	if len(names) < 10 {
		t.Fatalf("the layout's names %v: the test sees too few", names)
	}
	for _, name := range names {
		if !driver.ReservedName(name) {
			t.Errorf("the layout writes attribute %q, which projections.ReservedNames does not reserve", name)
		}
	}
}

package layout_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
)

// TestClaimRef: a claim is kept under the target key's text while it fits
// DynamoDB's keys and holds no 0x00 byte, else under a hash of it; two
// target keys never share a claim.
func TestClaimRef(t *testing.T) {
	plain := layout.ClaimRef(driver.RowRef{Projection: "r", Partition: "DOC#1", Sort: "CMT#2"})
	if plain != (driver.RowRef{Projection: "r", Partition: "DOC#1", Sort: "KCMT#2"}) {
		t.Errorf("plain: %+v", plain)
	}
	noSort := layout.ClaimRef(driver.RowRef{Projection: "r", Partition: "u1"})
	if noSort.Sort != "K" || layout.CheckRow(noSort) != nil {
		t.Errorf("a key without a sort key: %+v", noSort)
	}
	seen := map[driver.RowRef]bool{}
	for _, ref := range []driver.RowRef{
		{Projection: "r", Partition: strings.Repeat("p", 2048), Sort: strings.Repeat("s", 1024)},
		{Projection: "r", Partition: strings.Repeat("p", 2048), Sort: strings.Repeat("s", 1023)},
		{Projection: "r", Partition: "a\x00b", Sort: "c"},
		{Projection: "r", Partition: "a", Sort: "\x00bc"},
	} {
		c := layout.ClaimRef(ref)
		if c.Sort != "H" || !strings.HasPrefix(c.Partition, "sha256:") || layout.CheckRow(c) != nil || seen[c] {
			t.Errorf("ClaimRef(%.20q…) = %+v", ref.Partition, c)
		}
		seen[c] = true
	}
}

// TestTargetWriteUnits: a put costs its item's kilobytes and its claim's,
// one whose owner holds the claim only the item's; a delete one unit for
// each; a transaction doubles it, but a single ledger entry.
func TestTargetWriteUnits(t *testing.T) {
	big := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "P"}, "body": &types.AttributeValueMemberS{Value: strings.Repeat("x", 1500)}}
	ref := driver.RowRef{Projection: "r", Partition: "P"}
	ledger := driver.LedgerPut{Key: `{"PK":{"S":"src"}}`, Body: []byte("{}")}
	for _, tt := range []struct {
		name string
		tx   *driver.Tx
		want float64
	}{
		{"a ledger entry alone", &driver.Tx{Ledgers: []driver.LedgerPut{ledger}}, 1},
		{"a new item", &driver.Tx{Ledgers: []driver.LedgerPut{ledger}, Puts: []driver.RowPut{{Ref: ref, Attrs: big, Owner: "o"}}}, 2 * (1 + 2 + 1)},
		{"an item its owner holds", &driver.Tx{Ledgers: []driver.LedgerPut{ledger}, Puts: []driver.RowPut{{Ref: ref, Attrs: big, Owner: "o", Held: true}}}, 2 * (1 + 2)},
		{"a removal", &driver.Tx{Ledgers: []driver.LedgerPut{ledger}, Deletes: []driver.RowDelete{{Ref: ref, Owner: "o"}}}, 2 * (1 + 2)},
	} {
		if got := layout.TargetWriteUnits(tt.tx); got != tt.want {
			t.Errorf("%s: %v write units, want %v", tt.name, got, tt.want)
		}
	}
}

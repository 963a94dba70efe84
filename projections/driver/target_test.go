package driver_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
)

func TestNewTargetKey(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string // String(), or the error's text
		ok    bool
	}{
		{[]string{"PK", "SK"}, "PK:S,SK:S", true},
		{[]string{"id:N"}, "id:N", true},
		{[]string{" pk : B ", "sk:N"}, "pk:B,sk:N", true},
		{nil, "a partition key and at most one sort key, got 0", false},
		{[]string{"a", "b", "c"}, "got 3", false},
		{[]string{"PK", "PK"}, `both "PK"`, false},
		{[]string{"PK:X"}, `type "X": want S, N or B`, false},
		{[]string{":S"}, "has no name", false},
	} {
		k, err := driver.NewTargetKey(tt.names...)
		switch {
		case tt.ok && (err != nil || k.String() != tt.want):
			t.Errorf("NewTargetKey(%q) = %s, %v; want %s", tt.names, k, err, tt.want)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("NewTargetKey(%q): %v, want an error saying %q", tt.names, err, tt.want)
		}
	}
}

// TestTargetKeyRoundTrip: a target item's RowRef gives back its key
// attributes, whatever their types; an N is keyed in DynamoDB's normal
// form, so that the numbers DynamoDB takes for one key are one.
func TestTargetKeyRoundTrip(t *testing.T) {
	k, _ := driver.NewTargetKey("b:B", "n:N")
	item := pipeline.Item{"b": &types.AttributeValueMemberB{Value: []byte{0, 0xff}}, "n": &types.AttributeValueMemberN{Value: "12.50"}, "x": &types.AttributeValueMemberS{Value: "y"}}
	ref, err := k.Ref("r", item)
	if err != nil {
		t.Fatal(err)
	}
	if ref != (driver.RowRef{Projection: "r", Partition: "AP8=", Sort: "12.5"}) {
		t.Fatalf("Ref = %+v", ref)
	}
	key, err := k.Key(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pipeline.ItemKey(key), `{"b":{"B":"AP8="},"n":{"N":"12.5"}}`; got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
	other, err := k.Ref("r", pipeline.Item{"b": item["b"], "n": &types.AttributeValueMemberN{Value: "1.25E1"}})
	if err != nil || other != ref {
		t.Errorf("1.25E1 keys %+v (%v), want %+v", other, err, ref)
	}
}

func TestTargetKeyRefusals(t *testing.T) {
	k, _ := driver.NewTargetKey("PK", "SK:N")
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for _, tt := range []struct {
		name string
		item pipeline.Item
		want string
	}{
		{"missing sort key", pipeline.Item{"PK": s("a")}, `key attribute "SK" is missing`},
		{"wrong type", pipeline.Item{"PK": s("a"), "SK": s("1")}, `key attribute "SK" is an S, but the target table's is N`},
		{"empty partition key", pipeline.Item{"PK": s(""), "SK": &types.AttributeValueMemberN{Value: "1"}}, "empty"},
		{"too long", pipeline.Item{"PK": s(strings.Repeat("x", 2049)), "SK": &types.AttributeValueMemberN{Value: "1"}}, "2049 bytes, more than the 2048"},
		{"not UTF-8", pipeline.Item{"PK": s("\xff"), "SK": &types.AttributeValueMemberN{Value: "1"}}, "not valid UTF-8"},
	} {
		_, err := k.Ref("r", tt.item)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
		if strings.Contains(tt.name, "long") || strings.Contains(tt.name, "empty") {
			if _, ok := errors.AsType[*driver.KeyError](err); !ok {
				t.Errorf("%s: %T, want a *KeyError", tt.name, err)
			}
		}
	}
}

// TestClaimRef: a claim is kept under the target key's text while it fits
// DynamoDB's keys and holds no 0x00 byte, else under a hash of it; two
// target keys never share a claim.
func TestClaimRef(t *testing.T) {
	plain := driver.ClaimRef(driver.RowRef{Projection: "r", Partition: "DOC#1", Sort: "CMT#2"})
	if plain != (driver.RowRef{Projection: "r", Partition: "DOC#1", Sort: "KCMT#2"}) {
		t.Errorf("plain: %+v", plain)
	}
	noSort := driver.ClaimRef(driver.RowRef{Projection: "r", Partition: "u1"})
	if noSort.Sort != "K" || driver.CheckRow(noSort) != nil {
		t.Errorf("a key without a sort key: %+v", noSort)
	}
	seen := map[driver.RowRef]bool{}
	for _, ref := range []driver.RowRef{
		{Projection: "r", Partition: strings.Repeat("p", 2048), Sort: strings.Repeat("s", 1024)},
		{Projection: "r", Partition: strings.Repeat("p", 2048), Sort: strings.Repeat("s", 1023)},
		{Projection: "r", Partition: "a\x00b", Sort: "c"},
		{Projection: "r", Partition: "a", Sort: "\x00bc"},
	} {
		c := driver.ClaimRef(ref)
		if c.Sort != "H" || !strings.HasPrefix(c.Partition, "sha256:") || driver.CheckRow(c) != nil || seen[c] {
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
		if got := driver.TargetWriteUnits(tt.tx); got != tt.want {
			t.Errorf("%s: %v write units, want %v", tt.name, got, tt.want)
		}
	}
}

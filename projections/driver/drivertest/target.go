package drivertest

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
	"github.com/tributary/tributary/projections/driver/target"
)

// TargetName is the remodel a target store of RunTarget's is made for:
// its target items' RowRef.Projection.
const TargetName = "remodel"

// RunTarget runs the conformance suite of a target store (driver's target
// store: a remodel's target items, exactly as given, with the ledger
// entries and the claims kept apart). open must return a fresh, empty
// target store of the remodel TargetName keyed by key each time it is
// called, and arrange with t.Cleanup to close it. The stores' ledger
// cases of Run apply to it too and run first.
func RunTarget(t *testing.T, open func(t *testing.T, key target.Key) Store) {
	t.Helper()
	pkSK := target.Key{Partition: target.KeyAttr{Name: "PK", Type: target.KeyS}, Sort: target.KeyAttr{Name: "SK", Type: target.KeyS}}
	cases := []struct {
		name string
		key  target.Key
		test func(t *testing.T, s Store, key target.Key)
	}{
		{"Ledger/ReadMissing", pkSK, ledgerCase(testReadMissing)},
		{"Ledger/250Keys", pkSK, ledgerCase(testReadManyKeys)},
		{"Ledger/Update", pkSK, ledgerCase(testLedgerUpdate)},
		{"Items/ExactlyWhatIsPut", pkSK, testTargetExact},
		{"Items/ReplaceAndDelete", pkSK, testTargetReplaceDelete},
		{"Items/HashKeyOnly", target.Key{Partition: target.KeyAttr{Name: "id", Type: target.KeyS}}, testTargetReplaceDelete},
		{"Items/NumberAndBinaryKeys", target.Key{Partition: target.KeyAttr{Name: "b", Type: target.KeyB}, Sort: target.KeyAttr{Name: "n", Type: target.KeyN}}, testTargetTypedKeys},
		{"Items/KeysAtTheirLimits", pkSK, testTargetLongKeys},
		{"Claims/AnotherOwnerRefused", pkSK, testTargetClaims},
		{"Claims/HeldPutWritesNoClaim", pkSK, testTargetHeld},
		{"Claims/TakeoverChecksTheOwner", pkSK, testTargetTakeoverCheck},
		{"Commit/LedgerConflictWritesNothing", pkSK, testTargetConflict},
		{"Commit/ActionsCountTheClaims", pkSK, testTargetActions},
		{"Commit/AggregatesRefused", pkSK, testTargetNoAggregates},
		{"Commit/NoReservedNames", pkSK, testTargetNames},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t, c.key), c.key) })
	}
}

func ledgerCase(f func(t *testing.T, s Store)) func(t *testing.T, s Store, _ target.Key) {
	return func(t *testing.T, s Store, _ target.Key) { f(t, s) }
}

// targetPut is the put of a target item by owner.
func targetPut(t *testing.T, key target.Key, item pipeline.Item, owner string) driver.RowPut {
	t.Helper()
	ref, err := key.Ref(TargetName, item)
	if err != nil {
		t.Fatal(err)
	}
	return driver.RowPut{Ref: ref, Attrs: item, Owner: owner}
}

func ledgerPut(key string, rev int64) driver.LedgerPut {
	return driver.LedgerPut{Key: key, ExpectRev: rev, Body: []byte(key + strconv.FormatInt(rev+1, 10))}
}

// wantItems checks that the store holds exactly items, attribute for
// attribute, under the RowRefs their keys give.
func wantItems(t *testing.T, s Store, key target.Key, items ...pipeline.Item) {
	t.Helper()
	var want []driver.StoredRow
	for _, it := range items {
		ref, err := key.Ref(TargetName, it)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, driver.StoredRow{Ref: ref, Attrs: it})
	}
	got := scanRows(t, s)
	order := func(a, b driver.StoredRow) int {
		return strings.Compare(a.Ref.Partition+"\x00"+a.Ref.Sort, b.Ref.Partition+"\x00"+b.Ref.Sort)
	}
	slices.SortFunc(got, order)
	slices.SortFunc(want, order)
	wantRows(t, got, want)
}

// testTargetExact: a target item is stored with exactly its attributes,
// the names a Store reserves among them, every type DynamoDB has.
func testTargetExact(t *testing.T, s Store, key target.Key) {
	item := pipeline.Item{
		"PK": avS("DOC#1"), "SK": avS("CMT#1"), "ttl": avN("1767225600"), "rev": avN("3"), "rowOwner": avS("not mine"),
		"projection": avS("x"), "ledger": &types.AttributeValueMemberB{Value: []byte{0, 1}}, "ok": &types.AttributeValueMemberBOOL{Value: true},
		"tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, "n": &types.AttributeValueMemberNULL{Value: true},
		"m": &types.AttributeValueMemberM{Value: pipeline.Item{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{avN("1.50")}}}},
	}
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0)}, Puts: []driver.RowPut{targetPut(t, key, item, "A")}})
	wantItems(t, s, key, item)
	if rows := queryRows(t, s, TargetName, "DOC#1", 0); len(rows) != 1 || rows[0].Ref.Sort != "CMT#1" {
		t.Errorf("QueryRows of the item's partition: %+v", rows)
	}
	if aggs := scanAggregates(t, s); len(aggs) != 0 {
		t.Errorf("a target holds aggregates: %v", aggs)
	}
}

// testTargetReplaceDelete: a put replaces the item whole; a delete by its
// owner removes it; deleting an item that is not there is no error.
func testTargetReplaceDelete(t *testing.T, s Store, key target.Key) {
	mk := func(pk, sk string, attrs ...string) pipeline.Item {
		it := pipeline.Item{key.Partition.Name: avS(pk)}
		if key.HasSort() {
			it[key.Sort.Name] = avS(sk)
		}
		for i := 0; i+1 < len(attrs); i += 2 {
			it[attrs[i]] = avS(attrs[i+1])
		}
		return it
	}
	a, b := mk("P1", "S1", "x", "1", "y", "2"), mk("P2", "S2", "x", "3")
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0), ledgerPut("B", 0)}, Puts: []driver.RowPut{targetPut(t, key, a, "A"), targetPut(t, key, b, "B")}})
	wantItems(t, s, key, a, b)
	a2 := mk("P1", "S1", "z", "9")
	p := targetPut(t, key, a2, "A")
	p.Held = true
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 1)}, Puts: []driver.RowPut{p}})
	wantItems(t, s, key, a2, b)
	del := driver.RowDelete{Ref: targetPut(t, key, b, "B").Ref, Owner: "B"}
	gone := driver.RowDelete{Ref: targetPut(t, key, mk("P9", "S9"), "B").Ref, Owner: "B"}
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("B", 1)}, Deletes: []driver.RowDelete{del, gone}})
	wantItems(t, s, key, a2)
	// B's key is free again: another item may claim it.
	b3 := mk("P2", "S2", "x", "new")
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("C", 0)}, Puts: []driver.RowPut{targetPut(t, key, b3, "C")}})
	wantItems(t, s, key, a2, b3)
}

// testTargetTypedKeys: N and B keys round-trip, an N in DynamoDB's normal
// form (1.50 and 1.5 are one key); a partition reads in numeric sort
// order.
func testTargetTypedKeys(t *testing.T, s Store, key target.Key) {
	bin := &types.AttributeValueMemberB{Value: []byte{0xff, 0x00, 'a'}}
	var puts []driver.RowPut
	var items []pipeline.Item
	for i, n := range []string{"-10", "9", "1.5", "100"} {
		it := pipeline.Item{"b": bin, "n": avN(n), "i": avN(strconv.Itoa(i))}
		items = append(items, it)
		puts = append(puts, targetPut(t, key, it, "O"+strconv.Itoa(i)))
	}
	commit(t, s, &driver.Tx{Puts: puts})
	wantItems(t, s, key, items...)
	ref, err := key.Ref(TargetName, pipeline.Item{"b": bin, "n": avN("1.50")})
	if err != nil || ref != puts[2].Ref {
		t.Fatalf("1.50 keys %+v (%v), want 1.5's %+v", ref, err, puts[2].Ref)
	}
	rows := queryRows(t, s, TargetName, puts[0].Ref.Partition, 0)
	var order []string
	for _, r := range rows {
		order = append(order, r.Ref.Sort)
	}
	if want := []string{"100", "9", "1.5", "-10"}; !slices.Equal(order, want) {
		t.Errorf("QueryRows sort keys %v, want %v (descending, as numbers)", order, want)
	}
	// Deleted by its key alone.
	commit(t, s, &driver.Tx{Deletes: []driver.RowDelete{{Ref: puts[1].Ref, Owner: "O1"}}})
	wantItems(t, s, key, items[0], items[2], items[3])
}

// testTargetLongKeys: keys at DynamoDB's limits are stored, and claimed
// (the claim is kept under a hash); one byte more is refused before
// anything is written.
func testTargetLongKeys(t *testing.T, s Store, key target.Key) {
	long := pipeline.Item{"PK": avS(strings.Repeat("p", layout.MaxPartitionKeyBytes)), "SK": avS(strings.Repeat("s", layout.MaxSortKeyBytes))}
	p := targetPut(t, key, long, "A")
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{p}})
	wantItems(t, s, key, long)
	other := targetPut(t, key, long, "B")
	var ce *driver.ClaimError
	if err := s.Commit(t.Context(), &driver.Tx{Puts: []driver.RowPut{other}}); !errors.As(err, &ce) || ce.Ref != p.Ref || ce.Owner != "A" {
		t.Fatalf("a second owner of the long key: %v, want a *ClaimError owned by A", err)
	}
	tooLong := driver.RowRef{Projection: TargetName, Partition: long["PK"].(*types.AttributeValueMemberS).Value + "p", Sort: "s"}
	if err := s.(driver.KeyLimiter).CheckRow(tooLong); err == nil {
		t.Errorf("CheckRow of a %d-byte partition key: no error", len(tooLong.Partition))
	}
}

// testTargetClaims: a target item another source item owns is refused,
// for a put and for a delete, as a *ClaimError naming the item, and the
// whole transaction with it; From takes it over.
func testTargetClaims(t *testing.T, s Store, key target.Key) {
	item := pipeline.Item{"PK": avS("K"), "SK": avS("1"), "v": avS("a")}
	pa := targetPut(t, key, item, "A")
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0)}, Puts: []driver.RowPut{pa}})
	refused := func(what string, tx *driver.Tx, owner, claimant string) {
		t.Helper()
		err := s.Commit(t.Context(), tx)
		var ce *driver.ClaimError
		if !errors.As(err, &ce) || ce.Ref != pa.Ref || ce.Owner != owner || ce.Claimant != claimant {
			t.Fatalf("%s: %v, want a *ClaimError of %+v owned by %s, claimed by %s", what, err, pa.Ref, owner, claimant)
		}
	}
	byB := pipeline.Item{"PK": avS("K"), "SK": avS("1"), "v": avS("b")}
	refused("another source item's put", &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("B", 0)}, Puts: []driver.RowPut{targetPut(t, key, byB, "B")}}, "A", "B")
	refused("another source item's delete", &driver.Tx{Deletes: []driver.RowDelete{{Ref: pa.Ref, Owner: "B"}}}, "A", "B")
	if got := readLedgers(t, s, "B"); len(got) != 0 {
		t.Fatalf("a refused transaction wrote its ledger entry: %v", got)
	}
	wantItems(t, s, key, item)
	take := targetPut(t, key, byB, "B")
	take.From = "A"
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{take}})
	wantItems(t, s, key, byB)
	refused = func(what string, tx *driver.Tx, owner, claimant string) {
		t.Helper()
		var ce *driver.ClaimError
		if err := s.Commit(t.Context(), tx); !errors.As(err, &ce) || ce.Owner != owner || ce.Claimant != claimant {
			t.Fatalf("%s: %v, want a *ClaimError owned by %s", what, err, owner)
		}
	}
	refused("the former owner's delete", &driver.Tx{Deletes: []driver.RowDelete{{Ref: pa.Ref, Owner: "A"}}}, "B", "A")
	wantItems(t, s, key, byB)
}

// testTargetHeld: a put whose owner holds the item already writes the
// item alone (one action), and the claim still stands.
func testTargetHeld(t *testing.T, s Store, key target.Key) {
	item := pipeline.Item{"PK": avS("K"), "SK": avS("1"), "v": avS("1")}
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{targetPut(t, key, item, "A")}})
	held := targetPut(t, key, pipeline.Item{"PK": avS("K"), "SK": avS("1"), "v": avS("2")}, "A")
	held.Held = true
	if ac, ok := s.(driver.ActionCounter); !ok || ac.PutActions(held) != 1 || ac.PutActions(driver.RowPut{}) != 2 || ac.DeleteActions(driver.RowDelete{}) != 2 {
		t.Fatalf("a target store counts a held put as one action and a claimed put or a delete as two (ActionCounter)")
	}
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{held}})
	wantItems(t, s, key, held.Attrs)
	var ce *driver.ClaimError
	if err := s.Commit(t.Context(), &driver.Tx{Puts: []driver.RowPut{targetPut(t, key, item, "B")}}); !errors.As(err, &ce) || ce.Owner != "A" {
		t.Fatalf("after a held put, another owner's put: %v, want a *ClaimError owned by A", err)
	}
}

// testTargetConflict: a failed ledger condition writes no target item and
// no claim.
func testTargetConflict(t *testing.T, s Store, key target.Key) {
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0)}})
	item := pipeline.Item{"PK": avS("K"), "SK": avS("1")}
	err := s.Commit(t.Context(), &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0)}, Puts: []driver.RowPut{targetPut(t, key, item, "A")}})
	var ce *driver.ConflictError
	if !errors.As(err, &ce) || ce.Current["A"].Rev != 1 {
		t.Fatalf("Commit on a stale revision: %v, want a *ConflictError with A at rev 1", err)
	}
	wantItems(t, s, key)
	// Nothing claimed: another owner may put it.
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{targetPut(t, key, item, "B")}})
	wantItems(t, s, key, item)
}

// testTargetActions: a row write takes the target item's action and its
// claim's, and a transaction over MaxTxActions so counted is refused.
func testTargetActions(t *testing.T, s Store, key target.Key) {
	tx := &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0)}}
	var items []pipeline.Item
	for i := range (driver.MaxTxActions - 1) / 2 {
		it := pipeline.Item{"PK": avS("P"), "SK": avS(strconv.Itoa(i))}
		items = append(items, it)
		tx.Puts = append(tx.Puts, targetPut(t, key, it, "A"))
	}
	if n := driver.Actions(s, tx); n != driver.MaxTxActions-1 {
		t.Fatalf("driver.Actions = %d, want %d", n, driver.MaxTxActions-1)
	}
	over := &driver.Tx{Ledgers: tx.Ledgers, Puts: append(slices.Clone(tx.Puts), targetPut(t, key, pipeline.Item{"PK": avS("P"), "SK": avS("x")}, "A"))}
	if err := s.Commit(t.Context(), over); err == nil {
		t.Fatalf("a transaction of %d actions was committed", driver.Actions(s, over))
	}
	wantItems(t, s, key)
	commit(t, s, tx)
	wantItems(t, s, key, items...)
}

func testTargetNoAggregates(t *testing.T, s Store, _ target.Key) {
	err := s.Commit(t.Context(), &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0)}, Adds: []driver.Add{{Ref: aggRef("p", "k", 0), Values: map[string]decimal.Decimal{"n": decimal.FromInt(1)}}}})
	if err == nil {
		t.Fatal("a target took an aggregate addition")
	}
	if got := readLedgers(t, s, "A"); len(got) != 0 {
		t.Fatalf("the refused transaction wrote its ledger entry: %v", got)
	}
}

// testTargetNames: a target store reserves no attribute name but the
// empty one (driver.NameReserver).
func testTargetNames(t *testing.T, s Store, _ target.Key) {
	for _, name := range append(driver.ReservedNames(), "anything") {
		if driver.Reserved(s, name) {
			t.Errorf("a target store reserves %q", name)
		}
	}
	if !driver.Reserved(s, "") {
		t.Error("a target store takes an empty attribute name")
	}
}

// testTargetTakeoverCheck: a takeover (CheckFrom) is refused when the
// owner's ledger entry is not at the revision read, and takes the item
// when it is.
func testTargetTakeoverCheck(t *testing.T, s Store, key target.Key) {
	item := pipeline.Item{"PK": avS("K"), "SK": avS("1"), "v": avS("a")}
	pa := targetPut(t, key, item, "A")
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("A", 0)}, Puts: []driver.RowPut{pa}})
	byB := pipeline.Item{"PK": avS("K"), "SK": avS("1"), "v": avS("b")}
	take := targetPut(t, key, byB, "B")
	take.From, take.CheckFrom = "A", true
	if ac, ok := s.(driver.ActionCounter); !ok || ac.PutActions(take) != 3 {
		t.Fatal("a takeover's put takes three actions: the item, its claim, the check")
	}
	var ce *driver.ClaimError
	if err := s.Commit(t.Context(), &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("B", 0)}, Puts: []driver.RowPut{take}}); !errors.As(err, &ce) || ce.Owner != "A" || ce.Claimant != "B" || ce.Ref != pa.Ref {
		t.Fatalf("a takeover read at no entry of A (at 1): %v, want a *ClaimError owned by A", err)
	}
	if got := readLedgers(t, s, "B"); len(got) != 0 {
		t.Fatalf("a refused takeover wrote its ledger entry: %v", got)
	}
	wantItems(t, s, key, item)
	take.FromRev = 1
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{ledgerPut("B", 0)}, Puts: []driver.RowPut{take}})
	wantItems(t, s, key, byB)
}

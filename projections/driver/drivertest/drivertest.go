// Package drivertest is the conformance suite for driver.Store and
// driver.Reader implementations.
//
// Every store (the embedded infra/boltstore, the DynamoDB infra/dynamostore)
// runs the same suite from its own tests:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) drivertest.Store {
//			s, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite checks the contract written in the interfaces' documentation, with
// DynamoDB's semantics: conditional, all-or-nothing transactions, exact decimal
// additions, rows read back in descending sort-key order, and cancelled
// contexts honoured. It is deterministic in its outcome and takes well under a
// second against an embedded store that skips fsync.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// Store is what the suite tests: a store that writes and reads.
type Store interface {
	driver.Store
	driver.Reader
}

// Run runs the conformance suite. open must return a fresh, empty store each
// time it is called, and arrange with t.Cleanup to close it.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	cases := []suiteCase{
		{"ReadLedgers/MissingKeys", testReadMissing},
		{"ReadLedgers/NoKeys", testReadNoKeys},
		{"ReadLedgers/DuplicateKeys", testReadDuplicateKeys},
		{"ReadLedgers/250Keys", testReadManyKeys},
		{"Ledger/CreateGivesRev1", testLedgerCreate},
		{"Ledger/UpdateIncrementsRev", testLedgerUpdate},
		{"Ledger/ExpiresAtInFutureKeepsEntry", testLedgerExpiresAt},
		{"Conflict/RetryWithCurrentRevSucceeds", testConflictRetry},
		{"Commit/EmptyTxIsNoOp", testEmptyTx},
		{"Commit/100Actions", testHundredActions},
		{"Commit/101ActionsRefused", testHundredOneActions},
		{"Commit/SameItemTwiceIsRejected", testDuplicateItem},
		{"Commit/ReservedNamesRefused", testReservedNames},
		{"Add/CreatesMissingAggregate", testAddCreates},
		{"Add/ExactDecimals", testAddExact},
		{"Add/NormalFormAfterRetraction", testAddNormalForm},
		{"Add/ManyValuesAndAbsentValuesKept", testAddManyValues},
		{"Add/ShardsAreDistinctItems", testAddShards},
		{"Row/Put", testRowPut},
		{"Row/ReplaceDropsOldAttributes", testRowReplace},
		{"Row/Delete", testRowDelete},
		{"Row/AttributeTypes", testRowAttributeTypes},
		{"Row/Owners", testRowOwners},
		{"Row/TakeoverChecksTheOwner", testTakeoverCheck},
		{"QueryRows/DescendingSortOrder", testQueryOrder},
		{"QueryRows/Limit", testQueryLimit},
		{"QueryRows/OnlyOneProjectionAndPartition", testQueryIsolation},
		{"QueryRows/EmptyPartition", testQueryEmpty},
		{"Scan/SeesEverythingWritten", testScanAll},
		{"Scan/CallbackErrorStopsScan", testScanCallbackError},
		{"Scan/LedgersByKey", testScanLedgers},
		{"Concurrency/IncrementsAreExact", testConcurrentIncrements},
		{"Context/Cancelled", testCancelled},
	}
	for _, c := range conflictCases {
		cases = append(cases, suiteCase{"Conflict/" + c.name, func(t *testing.T, s Store) {
			runConflictCase(t, s, c.failing, c.want)
		}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.test(t, open(t))
		})
	}
}

type suiteCase struct {
	name string
	test func(t *testing.T, s Store)
}

// --- ReadLedgers and ledger puts ---

func testReadMissing(t *testing.T, s Store) {
	ctx := t.Context()
	got := readLedgers(t, s, "missing#1", "missing#2")
	if len(got) != 0 {
		t.Fatalf("ReadLedgers on an empty store = %v, want an empty map", got)
	}
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "present", Body: []byte("b")}}})
	got, err := s.ReadLedgers(ctx, []string{"present", "missing#1"})
	if err != nil {
		t.Fatalf("ReadLedgers: %v", err)
	}
	if _, ok := got["missing#1"]; ok || len(got) != 1 {
		t.Fatalf("ReadLedgers(present, missing#1) = %v, want only present", got)
	}
	wantLedger(t, got, "present", 1, "b")
}

func testReadNoKeys(t *testing.T, s Store) {
	for _, keys := range [][]string{nil, {}} {
		got, err := s.ReadLedgers(t.Context(), keys)
		if err != nil {
			t.Fatalf("ReadLedgers(%#v): %v", keys, err)
		}
		if len(got) != 0 {
			t.Fatalf("ReadLedgers(%#v) = %v, want empty", keys, got)
		}
	}
}

func testReadDuplicateKeys(t *testing.T, s Store) {
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "a", Body: []byte("A")}}})
	got := readLedgers(t, s, "a", "b", "a", "b", "a")
	if len(got) != 1 {
		t.Fatalf("ReadLedgers(a, b, a, b, a) = %v, want only a", got)
	}
	wantLedger(t, got, "a", 1, "A")
}

func testReadManyKeys(t *testing.T, s Store) {
	// 250 keys need three BatchGetItem calls on DynamoDB (100 keys each), and
	// three transactions to write (100 actions each).
	const n = 250
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("item#%04d", i))
	}
	for chunk := range slices.Chunk(keys, 100) {
		tx := &driver.Tx{}
		for _, k := range chunk {
			tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: k, Body: []byte("body of " + k)})
		}
		commit(t, s, tx)
	}
	read := append(slices.Clone(keys), "item#missing#1", "item#missing#2")
	got := readLedgers(t, s, read...)
	if len(got) != n {
		t.Fatalf("ReadLedgers of %d keys (%d stored) returned %d entries", len(read), n, len(got))
	}
	for _, k := range keys {
		wantLedger(t, got, k, 1, "body of "+k)
	}
}

func testLedgerCreate(t *testing.T, s Store) {
	body := []byte{0x00, 0x01, 0xfe, 0xff, 'x'} // binary, not text
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "ORDER#1", ExpectRev: 0, Body: body}}})
	wantLedger(t, readLedgers(t, s, "ORDER#1"), "ORDER#1", 1, string(body))
}

func testLedgerUpdate(t *testing.T, s Store) {
	for rev := int64(0); rev < 3; rev++ {
		body := fmt.Sprintf("version %d", rev+1)
		commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "k", ExpectRev: rev, Body: []byte(body)}}})
		wantLedger(t, readLedgers(t, s, "k"), "k", rev+1, body)
	}
}

func testLedgerExpiresAt(t *testing.T, s Store) {
	future := time.Now().Add(365 * 24 * time.Hour).Unix()
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "tomb", Body: []byte("t"), ExpiresAt: future}}})
	wantLedger(t, readLedgers(t, s, "tomb"), "tomb", 1, "t")
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "tomb", ExpectRev: 1, Body: []byte("u")}}})
	wantLedger(t, readLedgers(t, s, "tomb"), "tomb", 2, "u")
}

// --- conflicts and atomicity ---

// conflictSetup writes the state every conflict case starts from: ledger
// "stored" at rev 2, an aggregate and two rows.
func conflictSetup(t *testing.T, s Store) {
	commit(t, s, &driver.Tx{
		Ledgers: []driver.LedgerPut{{Key: "stored", Body: []byte("v1")}},
		Adds:    []driver.Add{{Ref: aggRef("p", "TOTAL", 0), Values: values("count", "1", "sum", "10.50")}},
		Puts: []driver.RowPut{
			{Ref: rowRef("p", "P", "keep"), Attrs: pipeline.Item{"v": avS("keep")}},
			{Ref: rowRef("p", "P", "doomed"), Attrs: pipeline.Item{"v": avS("doomed")}},
		},
	})
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "stored", ExpectRev: 1, Body: []byte("v2")}}})
}

// conflictTx is a transaction whose ledger puts are the given failing ones
// plus one that would succeed, with adds, puts and deletes that must not be
// applied when it fails.
func conflictTx(failing ...driver.LedgerPut) *driver.Tx {
	return &driver.Tx{
		Ledgers: append([]driver.LedgerPut{{Key: "fresh", ExpectRev: 0, Body: []byte("fresh")}}, failing...),
		Adds: []driver.Add{
			{Ref: aggRef("p", "TOTAL", 0), Values: values("count", "1", "sum", "0.25")},
			{Ref: aggRef("p", "NEW", 0), Values: values("count", "1")},
		},
		Puts: []driver.RowPut{
			{Ref: rowRef("p", "P", "keep"), Attrs: pipeline.Item{"v": avS("replaced")}},
			{Ref: rowRef("p", "P", "new"), Attrs: pipeline.Item{"v": avS("new")}},
		},
		Deletes: []driver.RowDelete{{Ref: rowRef("p", "P", "doomed")}},
	}
}

var conflictCases = []struct {
	name    string
	failing []driver.LedgerPut
	want    map[string]driver.LedgerEntry
}{
	{
		name:    "CreateExisting",
		failing: []driver.LedgerPut{{Key: "stored", ExpectRev: 0, Body: []byte("x")}},
		want:    map[string]driver.LedgerEntry{"stored": {Rev: 2, Body: []byte("v2")}},
	},
	{
		name:    "StaleRev",
		failing: []driver.LedgerPut{{Key: "stored", ExpectRev: 1, Body: []byte("x")}},
		want:    map[string]driver.LedgerEntry{"stored": {Rev: 2, Body: []byte("v2")}},
	},
	{
		name:    "RevAhead",
		failing: []driver.LedgerPut{{Key: "stored", ExpectRev: 3, Body: []byte("x")}},
		want:    map[string]driver.LedgerEntry{"stored": {Rev: 2, Body: []byte("v2")}},
	},
	{
		name:    "UpdateMissing",
		failing: []driver.LedgerPut{{Key: "absent", ExpectRev: 4, Body: []byte("x")}},
		want:    map[string]driver.LedgerEntry{"absent": {Rev: 0}},
	},
	{
		name: "TwoFailures",
		failing: []driver.LedgerPut{
			{Key: "stored", ExpectRev: 1, Body: []byte("x")},
			{Key: "absent", ExpectRev: 1, Body: []byte("y")},
		},
		want: map[string]driver.LedgerEntry{"stored": {Rev: 2, Body: []byte("v2")}, "absent": {Rev: 0}},
	},
}

func runConflictCase(t *testing.T, s Store, failing []driver.LedgerPut, want map[string]driver.LedgerEntry) {
	conflictSetup(t, s)
	keys := []string{"stored", "fresh", "absent"}
	before := snapshot(t, s, keys...)

	err := s.Commit(t.Context(), conflictTx(failing...))
	var ce *driver.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Commit = %v, want a *projections.ConflictError", err)
	}
	if errors.Is(err, driver.ErrContention) {
		t.Errorf("a failed ledger condition also matches ErrContention: %v", err)
	}
	if len(ce.Current) != len(want) {
		t.Errorf("ConflictError.Current = %v, want exactly the failed keys %v", ce.Current, want)
	}
	for k, w := range want {
		wantLedger(t, ce.Current, k, w.Rev, string(w.Body))
	}
	if after := snapshot(t, s, keys...); !after.equal(before) {
		t.Fatalf("a Tx that failed its conditions changed the store:\nbefore: %v\nafter:  %v", before, after)
	}
}

func testConflictRetry(t *testing.T, s Store) {
	conflictSetup(t, s)
	tx := conflictTx(driver.LedgerPut{Key: "stored", ExpectRev: 0, Body: []byte("v3")})
	err := s.Commit(t.Context(), tx)
	var ce *driver.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Commit = %v, want a *projections.ConflictError", err)
	}
	for i, l := range tx.Ledgers {
		if cur, ok := ce.Current[l.Key]; ok {
			tx.Ledgers[i].ExpectRev = cur.Rev
		}
	}
	commit(t, s, tx)
	got := readLedgers(t, s, "stored", "fresh")
	wantLedger(t, got, "stored", 3, "v3")
	wantLedger(t, got, "fresh", 1, "fresh")
	wantAggregates(t, s, map[driver.AggregateRef]map[string]string{
		aggRef("p", "TOTAL", 0): {"count": "2", "sum": "10.75"},
		aggRef("p", "NEW", 0):   {"count": "1"},
	})
	wantRows(t, queryRows(t, s, "p", "P", 0), []driver.StoredRow{
		{Ref: rowRef("p", "P", "new"), Attrs: pipeline.Item{"v": avS("new")}},
		{Ref: rowRef("p", "P", "keep"), Attrs: pipeline.Item{"v": avS("replaced")}},
	})
}

// --- transactions ---

func testEmptyTx(t *testing.T, s Store) {
	conflictSetup(t, s)
	before := snapshot(t, s, "stored")
	for _, tx := range []*driver.Tx{{}, {Ledgers: []driver.LedgerPut{}, Adds: []driver.Add{}, Puts: []driver.RowPut{}, Deletes: []driver.RowDelete{}}} {
		if err := s.Commit(t.Context(), tx); err != nil {
			t.Fatalf("Commit of an empty Tx: %v", err)
		}
	}
	if after := snapshot(t, s, "stored"); !after.equal(before) {
		t.Fatalf("an empty Tx changed the store:\nbefore: %v\nafter:  %v", before, after)
	}
}

// testHundredOneActions: a transaction over DynamoDB's limit is refused,
// and nothing of it is written.
func testHundredOneActions(t *testing.T, s Store) {
	tx := &driver.Tx{}
	for i := range 101 {
		tx.Adds = append(tx.Adds, driver.Add{Ref: aggRef("over", fmt.Sprintf("A#%03d", i), 0), Values: values("n", "1")})
	}
	if err := s.Commit(context.Background(), tx); err == nil {
		t.Fatal("a 101-action transaction was accepted")
	}
	wantAggregates(t, s, map[driver.AggregateRef]map[string]string{})
}

// testReservedNames: a value or row attribute with a name of
// projections.ReservedNames (or the empty name) is refused, with nothing of
// the Tx written, ledger entry included.
func testReservedNames(t *testing.T, s Store) {
	for _, name := range append(driver.ReservedNames(), "") {
		for _, tx := range []*driver.Tx{
			{Ledgers: []driver.LedgerPut{{Key: "L#value " + name}}, Adds: []driver.Add{{Ref: aggRef("p", "K", 0), Values: values("n", "1", name, "1")}}},
			{Ledgers: []driver.LedgerPut{{Key: "L#row " + name}}, Puts: []driver.RowPut{{Ref: rowRef("p", "P", "S"), Attrs: pipeline.Item{"a": avS("x"), name: avS("y")}}}},
		} {
			if err := s.Commit(t.Context(), tx); err == nil {
				t.Errorf("a Tx naming %q was accepted: %+v", name, tx)
			}
			if got := readLedgers(t, s, tx.Ledgers[0].Key); len(got) != 0 {
				t.Errorf("a refused Tx naming %q wrote its ledger entry", name)
			}
		}
	}
	wantAggregates(t, s, map[driver.AggregateRef]map[string]string{})
	if rows := scanRows(t, s); len(rows) != 0 {
		t.Errorf("refused Txs wrote rows: %v", rows)
	}
}

func testHundredActions(t *testing.T, s Store) {
	// 25 rows to delete later, written first.
	setup := &driver.Tx{}
	for i := range 25 {
		setup.Puts = append(setup.Puts, driver.RowPut{Ref: rowRef("big", "OLD", fmt.Sprintf("%02d", i)), Attrs: pipeline.Item{"i": avN(strconv.Itoa(i))}})
	}
	commit(t, s, setup)

	tx := &driver.Tx{}
	for i := range 25 {
		tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: fmt.Sprintf("L#%02d", i), Body: []byte{byte(i)}})
		tx.Adds = append(tx.Adds, driver.Add{Ref: aggRef("big", fmt.Sprintf("A#%02d", i), 0), Values: values("n", strconv.Itoa(i))})
		tx.Puts = append(tx.Puts, driver.RowPut{Ref: rowRef("big", "NEW", fmt.Sprintf("%02d", i)), Attrs: pipeline.Item{"i": avN(strconv.Itoa(i))}})
		tx.Deletes = append(tx.Deletes, driver.RowDelete{Ref: rowRef("big", "OLD", fmt.Sprintf("%02d", i))})
	}
	if tx.Len() != 100 {
		t.Fatalf("test bug: Tx has %d actions", tx.Len())
	}
	commit(t, s, tx)

	var keys []string
	for _, l := range tx.Ledgers {
		keys = append(keys, l.Key)
	}
	got := readLedgers(t, s, keys...)
	for i, k := range keys {
		wantLedger(t, got, k, 1, string([]byte{byte(i)}))
	}
	want := map[driver.AggregateRef]map[string]string{}
	for i, a := range tx.Adds {
		want[a.Ref] = map[string]string{"n": strconv.Itoa(i)}
	}
	wantAggregates(t, s, want)
	if rows := queryRows(t, s, "big", "OLD", 0); len(rows) != 0 {
		t.Errorf("%d deleted rows are still there", len(rows))
	}
	if rows := queryRows(t, s, "big", "NEW", 0); len(rows) != 25 {
		t.Errorf("QueryRows(big, NEW) returned %d rows, want 25", len(rows))
	}
}

func testDuplicateItem(t *testing.T, s Store) {
	// DynamoDB rejects a transaction with two operations on one item
	// (ValidationException); the Tx doc forbids it. It must fail, and
	// not as a condition failure, and write nothing.
	cases := []struct {
		name string
		tx   *driver.Tx
	}{
		{"LedgerTwice", &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "k", Body: []byte("a")}, {Key: "k", Body: []byte("b")}}}},
		{"AggregateTwice", &driver.Tx{
			Ledgers: []driver.LedgerPut{{Key: "k"}},
			Adds:    []driver.Add{{Ref: aggRef("p", "A", 0), Values: values("n", "1")}, {Ref: aggRef("p", "A", 0), Values: values("n", "2")}},
		}},
		{"RowPutAndDelete", &driver.Tx{
			Ledgers: []driver.LedgerPut{{Key: "k"}},
			Puts:    []driver.RowPut{{Ref: rowRef("p", "P", "s"), Attrs: pipeline.Item{"v": avS("x")}}},
			Deletes: []driver.RowDelete{{Ref: rowRef("p", "P", "s")}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, s, "k")
			err := s.Commit(t.Context(), c.tx)
			if err == nil {
				t.Fatal("Commit of a Tx touching one item twice succeeded")
			}
			var ce *driver.ConflictError
			if errors.As(err, &ce) {
				t.Errorf("Commit = %v, a *ConflictError; want a validation error", err)
			}
			if after := snapshot(t, s, "k"); !after.equal(before) {
				t.Fatalf("a rejected Tx changed the store:\nbefore: %v\nafter:  %v", before, after)
			}
		})
	}
}

// --- aggregates ---

func testAddCreates(t *testing.T, s Store) {
	ref := aggRef("orders", "ORDERS#PAID#DAY#2026-11-30", 0)
	commit(t, s, &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: values("count", "1", "amount", "9.99")}}})
	wantAggregates(t, s, map[driver.AggregateRef]map[string]string{ref: {"count": "1", "amount": "9.99"}})
}

func testAddExact(t *testing.T, s Store) {
	cases := []struct {
		name string
		adds []string
		want string
	}{
		{"TenthsAndFifths", []string{"0.10", "0.20"}, "0.30"},
		{"TenTimesOneTenth", slices.Repeat([]string{"0.1"}, 10), "1"},
		{"Negative", []string{"5", "-7.5"}, "-2.5"},
		{"BackToZero", []string{"12.34", "-12.34"}, "0"},
		{"NegativeOnly", []string{"-0.01", "-0.01", "-0.01"}, "-0.03"},
		{"LargeAndTiny", []string{"12345678901234567890.1234567890123456", "0.0000000000000001"}, "12345678901234567890.1234567890123457"},
		{"Integers", []string{"1", "2", "3", "4", "5"}, "15"},
	}
	ref := func(name string) driver.AggregateRef { return aggRef("exact", name, 0) }
	for _, c := range cases {
		for _, v := range c.adds { // one transaction per addition
			commit(t, s, &driver.Tx{Adds: []driver.Add{{Ref: ref(c.name), Values: values("v", v)}}})
		}
	}
	got := scanAggregates(t, s)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, ok := got[ref(c.name)]["v"]
			if !ok {
				t.Fatalf("aggregate %v missing or without value v: %v", ref(c.name), got[ref(c.name)])
			}
			if v.Cmp(decimal.MustParse(c.want)) != 0 {
				t.Fatalf("sum of %v = %s, want %s", c.adds, v, c.want)
			}
		})
	}
}

// testAddNormalForm: a sum reads in DynamoDB's normal form, trailing
// fraction zeros trimmed, whatever the scales of the operands that made it,
// those retracted since included: what a store shows does not depend on the
// history of its sums.
func testAddNormalForm(t *testing.T, s Store) {
	cases := []struct {
		name string
		adds []string
		want string
	}{
		{"Retracted", []string{"6446.40", "1.0000", "-1.0000"}, "6446.4"},
		{"Scaled", []string{"120.50"}, "120.5"},
		{"WholeAtAScale", []string{"1.50", "1.50"}, "3"},
		{"BackToZero", []string{"12.340", "-12.34"}, "0"},
		{"Negative", []string{"-0.0100", "-0.0200"}, "-0.03"},
		{"Integers", []string{"100", "200"}, "300"},
	}
	ref := func(name string) driver.AggregateRef { return aggRef("normal", name, 0) }
	for _, c := range cases {
		for _, v := range c.adds { // one transaction per addition
			commit(t, s, &driver.Tx{Adds: []driver.Add{{Ref: ref(c.name), Values: values("v", v)}}})
		}
	}
	got := scanAggregates(t, s)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, ok := got[ref(c.name)]["v"]
			if !ok {
				t.Fatalf("aggregate %v missing or without value v: %v", ref(c.name), got[ref(c.name)])
			}
			if v.String() != c.want {
				t.Fatalf("sum of %v reads %s, want %s (DynamoDB's form: trailing zeros trimmed)", c.adds, v, c.want)
			}
		})
	}
}

func testAddManyValues(t *testing.T, s Store) {
	ref := aggRef("many", "K", 0)
	first := map[string]decimal.Decimal{}
	want := map[string]string{}
	for i := range 20 {
		name := fmt.Sprintf("v%02d", i)
		first[name] = decimal.FromInt(int64(i))
		want[name] = strconv.Itoa(i)
	}
	commit(t, s, &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: first}}})
	// Only some values, and a new one; the others keep theirs.
	commit(t, s, &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: values("v03", "0.5", "v07", "-7", "extra", "42")}}})
	want["v03"], want["v07"], want["extra"] = "3.5", "0", "42"
	wantAggregates(t, s, map[driver.AggregateRef]map[string]string{ref: want})
}

func testAddShards(t *testing.T, s Store) {
	refs := []driver.AggregateRef{
		aggRef("p", "HOT", 0), aggRef("p", "HOT", 1), aggRef("p", "HOT", 2), aggRef("p", "HOT", 15),
		aggRef("q", "HOT", 1), aggRef("p", "HOT#1", 0),
	}
	tx := &driver.Tx{}
	want := map[driver.AggregateRef]map[string]string{}
	for i, r := range refs {
		tx.Adds = append(tx.Adds, driver.Add{Ref: r, Values: values("n", strconv.Itoa(i+1))})
		want[r] = map[string]string{"n": strconv.Itoa(i + 1)}
	}
	commit(t, s, tx)
	commit(t, s, &driver.Tx{Adds: []driver.Add{{Ref: refs[1], Values: values("n", "100")}}})
	want[refs[1]]["n"] = "102"
	wantAggregates(t, s, want)
}

// --- rows ---

func testRowPut(t *testing.T, s Store) {
	row := driver.StoredRow{
		Ref:   rowRef("leaderboard", "SEASON#2026-Q2", "RATING#0000001842#PLAYER#u8231"),
		Attrs: pipeline.Item{"player": avS("u8231"), "rating": avN("1842")},
	}
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: row.Ref, Attrs: row.Attrs}}})
	wantRows(t, queryRows(t, s, row.Ref.Projection, row.Ref.Partition, 0), []driver.StoredRow{row})
}

func testRowReplace(t *testing.T, s Store) {
	ref := rowRef("p", "P", "S")
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: ref, Attrs: pipeline.Item{"a": avS("1"), "b": avS("2")}}}})
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: ref, Attrs: pipeline.Item{"b": avS("3"), "c": avS("4")}}}})
	wantRows(t, queryRows(t, s, "p", "P", 0), []driver.StoredRow{{Ref: ref, Attrs: pipeline.Item{"b": avS("3"), "c": avS("4")}}})
}

func testRowDelete(t *testing.T, s Store) {
	keep, gone := rowRef("p", "P", "keep"), rowRef("p", "P", "gone")
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{
		{Ref: keep, Attrs: pipeline.Item{"v": avS("k")}},
		{Ref: gone, Attrs: pipeline.Item{"v": avS("g")}},
	}})
	commit(t, s, &driver.Tx{Deletes: []driver.RowDelete{{Ref: gone}, {Ref: rowRef("p", "P", "never-written")}, {Ref: rowRef("other", "X", "Y")}}})
	wantRows(t, queryRows(t, s, "p", "P", 0), []driver.StoredRow{{Ref: keep, Attrs: pipeline.Item{"v": avS("k")}}})
	// Deleting it again is fine too.
	commit(t, s, &driver.Tx{Deletes: []driver.RowDelete{{Ref: gone}}})
}

func testRowAttributeTypes(t *testing.T, s Store) {
	cases := []struct {
		name string
		av   types.AttributeValue
	}{
		{"S", avS("héllo, wörld ✓")},
		{"N", avN("-1234.5678")},
		{"NLarge", avN("12345678901234567890123456789012345678")},
		{"B", &types.AttributeValueMemberB{Value: []byte{0x00, 0x01, 0x80, 0xff}}},
		{"BOOLTrue", &types.AttributeValueMemberBOOL{Value: true}},
		{"BOOLFalse", &types.AttributeValueMemberBOOL{Value: false}},
		{"NULL", &types.AttributeValueMemberNULL{Value: true}},
		{"SS", &types.AttributeValueMemberSS{Value: []string{"red", "green", "blue"}}},
		{"NS", &types.AttributeValueMemberNS{Value: []string{"1", "-2.5", "300"}}},
		{"BS", &types.AttributeValueMemberBS{Value: [][]byte{{0x01}, {0x02, 0x03}, {0xff}}}},
		{"L", &types.AttributeValueMemberL{Value: []types.AttributeValue{avS("a"), avN("1"), &types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberNULL{Value: true}}}},
		{"LEmpty", &types.AttributeValueMemberL{Value: []types.AttributeValue{}}},
		{"M", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"name": avS("x"),
			"n":    avN("7"),
			"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{
				&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"deep": &types.AttributeValueMemberSS{Value: []string{"d"}}}},
			}},
		}}},
		{"MEmpty", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}},
	}
	attrs := pipeline.Item{}
	for _, c := range cases {
		attrs[c.name] = c.av
	}
	ref := rowRef("types", "P", "S")
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: ref, Attrs: attrs}}})

	queried := queryRows(t, s, "types", "P", 0)
	scanned := scanRows(t, s)
	if len(queried) != 1 || len(scanned) != 1 {
		t.Fatalf("QueryRows returned %d rows, ScanRows %d; want 1 each", len(queried), len(scanned))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for how, row := range map[string]driver.StoredRow{"QueryRows": queried[0], "ScanRows": scanned[0]} {
				got, ok := row.Attrs[c.name]
				if !ok {
					t.Fatalf("%s: attribute %s is missing", how, c.name)
				}
				if !equalAV(got, c.av) {
					t.Errorf("%s: attribute %s = %s, want %s", how, c.name, formatAV(got), formatAV(c.av))
				}
			}
		})
	}
	if n := len(queried[0].Attrs); n != len(cases) {
		t.Errorf("row has %d attributes, want %d", n, len(cases))
	}
}

// --- QueryRows ---

func testQueryOrder(t *testing.T, s Store) {
	// Sort keys compare as UTF-8 bytes, as DynamoDB compares S keys: "AB"
	// after "A", lower case after upper case, "é" after "z".
	sorts := []string{"B", "A", "a", "AB", "#", "z", "é", "RATING#0000001842", "RATING#0000000099", "A#"}
	tx := &driver.Tx{}
	for _, so := range sorts {
		tx.Puts = append(tx.Puts, driver.RowPut{Ref: rowRef("p", "P", so), Attrs: pipeline.Item{"sortKey": avS(so)}})
	}
	commit(t, s, tx)
	want := slices.Clone(sorts)
	slices.Sort(want)
	slices.Reverse(want)
	rows := queryRows(t, s, "p", "P", 0)
	var got []string
	for _, r := range rows {
		got = append(got, r.Ref.Sort)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("QueryRows sort keys = %q, want %q", got, want)
	}
}

func testQueryLimit(t *testing.T, s Store) {
	tx := &driver.Tx{}
	for i := range 7 {
		tx.Puts = append(tx.Puts, driver.RowPut{Ref: rowRef("p", "P", fmt.Sprintf("S%d", i)), Attrs: pipeline.Item{"i": avN(strconv.Itoa(i))}})
	}
	commit(t, s, tx)
	cases := []struct {
		limit int
		want  []string
	}{
		{-1, []string{"S6", "S5", "S4", "S3", "S2", "S1", "S0"}},
		{0, []string{"S6", "S5", "S4", "S3", "S2", "S1", "S0"}},
		{1, []string{"S6"}},
		{3, []string{"S6", "S5", "S4"}},
		{7, []string{"S6", "S5", "S4", "S3", "S2", "S1", "S0"}},
		{100, []string{"S6", "S5", "S4", "S3", "S2", "S1", "S0"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("limit=%d", c.limit), func(t *testing.T) {
			var got []string
			for _, r := range queryRows(t, s, "p", "P", c.limit) {
				got = append(got, r.Ref.Sort)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("QueryRows(limit %d) = %q, want %q", c.limit, got, c.want)
			}
		})
	}
}

func testQueryIsolation(t *testing.T, s Store) {
	// Neighbours that a careless key layout would mix up: a partition that
	// is a prefix of another, a projection that is a prefix of another, and
	// partition and sort strings that run into each other when concatenated.
	refs := []driver.RowRef{
		rowRef("p", "P", "1"), rowRef("p", "P", "2"),
		rowRef("p", "P1", "0"), rowRef("p", "PP", "0"), rowRef("pP", "x", "0"),
		rowRef("p1", "P", "0"), rowRef("q", "P", "0"), rowRef("p", "Px", "0"),
		rowRef("p#P", "x", "0"), rowRef("p", "P#x", "0"),
	}
	tx := &driver.Tx{}
	for _, r := range refs {
		tx.Puts = append(tx.Puts, driver.RowPut{Ref: r, Attrs: pipeline.Item{"at": avS(r.Projection + "|" + r.Partition + "|" + r.Sort)}})
	}
	commit(t, s, tx)
	for _, q := range []struct{ projection, partition string }{{"p", "P"}, {"p", "P1"}, {"p1", "P"}, {"p", "P#x"}, {"p#P", "x"}} {
		var want []driver.StoredRow
		for _, p := range tx.Puts {
			if p.Ref.Projection == q.projection && p.Ref.Partition == q.partition {
				want = append(want, driver.StoredRow{Ref: p.Ref, Attrs: p.Attrs})
			}
		}
		slices.SortFunc(want, func(a, b driver.StoredRow) int { return -compareStrings(a.Ref.Sort, b.Ref.Sort) })
		t.Run(q.projection+"/"+q.partition, func(t *testing.T) {
			wantRows(t, queryRows(t, s, q.projection, q.partition, 0), want)
		})
	}
}

func testQueryEmpty(t *testing.T, s Store) {
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: rowRef("p", "P", "S"), Attrs: pipeline.Item{"v": avS("x")}}}})
	for _, q := range [][2]string{{"p", "Q"}, {"none", "P"}} {
		if rows := queryRows(t, s, q[0], q[1], 0); len(rows) != 0 {
			t.Errorf("QueryRows(%s, %s) = %d rows, want none", q[0], q[1], len(rows))
		}
	}
}

// --- scans ---

func testScanAll(t *testing.T, s Store) {
	if n := len(scanAggregates(t, s)); n != 0 {
		t.Fatalf("a fresh store has %d aggregates", n)
	}
	if n := len(scanRows(t, s)); n != 0 {
		t.Fatalf("a fresh store has %d rows", n)
	}
	wantAggs := map[driver.AggregateRef]map[string]string{}
	var wantRowsList []driver.StoredRow
	for b := range 3 {
		tx := &driver.Tx{}
		for i := range 30 {
			ref := aggRef(fmt.Sprintf("proj%d", i%3), fmt.Sprintf("KEY#%d#%d", b, i), i%4)
			tx.Adds = append(tx.Adds, driver.Add{Ref: ref, Values: values("n", strconv.Itoa(i), "m", "0.5")})
			wantAggs[ref] = map[string]string{"n": strconv.Itoa(i), "m": "0.5"}
			row := driver.StoredRow{Ref: rowRef(fmt.Sprintf("proj%d", i%3), fmt.Sprintf("PART#%d", i%5), fmt.Sprintf("SORT#%d#%d", b, i)), Attrs: pipeline.Item{"i": avN(strconv.Itoa(i))}}
			tx.Puts = append(tx.Puts, driver.RowPut{Ref: row.Ref, Attrs: row.Attrs})
			wantRowsList = append(wantRowsList, row)
		}
		commit(t, s, tx)
	}
	wantAggregates(t, s, wantAggs)
	got := scanRows(t, s)
	sortRows(got)
	sortRows(wantRowsList)
	wantRows(t, got, wantRowsList)
}

// testScanLedgers: ScanLedgers sees every ledger entry written, by key,
// with its revision and body, and no aggregate or row.
func testScanLedgers(t *testing.T, s Store) {
	ctx := context.Background()
	want := map[string]driver.LedgerEntry{}
	for b := range 3 {
		tx := &driver.Tx{Adds: []driver.Add{{Ref: aggRef("p", fmt.Sprintf("K%d", b), 0), Values: values("n", "1")}}}
		for i := range 40 {
			key := fmt.Sprintf(`{"PK":{"S":"ITEM#%d#%d"}}`, b, i)
			tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: key, Body: []byte(key)})
			want[key] = driver.LedgerEntry{Rev: 1, Body: []byte(key)}
		}
		commit(t, s, tx)
	}
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "#marker", Body: []byte("m")}}})
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "#marker", ExpectRev: 1, Body: []byte("m2")}}})
	want["#marker"] = driver.LedgerEntry{Rev: 2, Body: []byte("m2")}
	got := map[string]driver.LedgerEntry{}
	err := s.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		if _, dup := got[key]; dup {
			t.Errorf("ScanLedgers gave %s twice", key)
		}
		got[key] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ScanLedgers gave %d entries, want %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g.Rev != w.Rev || string(g.Body) != string(w.Body) {
			t.Errorf("%s: %+v, want %+v", k, g, w)
		}
	}
}

// testRowOwners: a row put or delete that names an owner is refused, as a
// *ClaimError naming the row and its owner, when another item owns the row,
// and the whole transaction with it; From takes a row over; a row stored
// without an owner is anybody's; readers report the owner and not as an
// attribute.
func testRowOwners(t *testing.T, s Store) {
	ctx := context.Background()
	r := rowRef("p", "BOARD", "R#00100")
	attrs := pipeline.Item{"player": avS("a")}
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "A", Body: []byte("a")}}, Puts: []driver.RowPut{{Ref: r, Attrs: attrs, Owner: "A"}}})
	refused := func(what string, tx *driver.Tx, owner, claimant string) {
		t.Helper()
		err := s.Commit(ctx, tx)
		var ce *driver.ClaimError
		if !errors.As(err, &ce) || ce.Ref != r || ce.Owner != owner || ce.Claimant != claimant {
			t.Fatalf("%s: %v, want a *ClaimError of %v owned by %s, claimed by %s", what, err, r, owner, claimant)
		}
	}
	refused("another owner's put", &driver.Tx{
		Ledgers: []driver.LedgerPut{{Key: "B", Body: []byte("b")}},
		Puts:    []driver.RowPut{{Ref: r, Attrs: pipeline.Item{"player": avS("b")}, Owner: "B"}},
	}, "A", "B")
	refused("another owner's delete", &driver.Tx{Deletes: []driver.RowDelete{{Ref: r, Owner: "B"}}}, "A", "B")
	if got := readLedgers(t, s, "B"); len(got) != 0 {
		t.Fatalf("a refused transaction wrote its ledger entry: %v", got)
	}
	rows, err := s.QueryRows(ctx, "p", "BOARD", 0)
	if err != nil || len(rows) != 1 || rows[0].Owner != "A" || len(rows[0].Attrs) != 1 || rows[0].Attrs["player"].(*types.AttributeValueMemberS).Value != "a" {
		t.Fatalf("after the refusals: %+v %v, want A's row, owner A", rows, err)
	}
	// A row released and claimed in one transaction: taken over.
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: r, Attrs: pipeline.Item{"player": avS("b")}, Owner: "B", From: "A"}}})
	got := scanRows(t, s)
	if len(got) != 1 || got[0].Owner != "B" {
		t.Fatalf("taken over: %+v", got)
	}
	refused("the former owner's delete", &driver.Tx{Deletes: []driver.RowDelete{{Ref: r, Owner: "A"}}}, "B", "A")
	commit(t, s, &driver.Tx{Deletes: []driver.RowDelete{{Ref: r, Owner: "B"}, {Ref: rowRef("p", "BOARD", "missing"), Owner: "B"}}})
	if got := scanRows(t, s); len(got) != 0 {
		t.Fatalf("deleted by its owner: %+v", got)
	}
	// A row stored without an owner (before rows had owners) is anybody's.
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: r, Attrs: attrs}}})
	commit(t, s, &driver.Tx{Puts: []driver.RowPut{{Ref: r, Attrs: attrs, Owner: "C"}}})
	if got := scanRows(t, s); len(got) != 1 || got[0].Owner != "C" {
		t.Fatalf("an ownerless row claimed: %+v", got)
	}
}

// testTakeoverCheck: a put that takes a row over from an owner whose
// ledger entry no longer claims it (CheckFrom) is refused, writing
// nothing, when that entry's revision is not the one the taker read; it
// takes the row when it is.
func testTakeoverCheck(t *testing.T, s Store) {
	ctx := context.Background()
	r := rowRef("p", "BOARD", "R#1")
	commit(t, s, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "A", Body: []byte("a")}}, Puts: []driver.RowPut{{Ref: r, Attrs: pipeline.Item{"v": avS("a")}, Owner: "A"}}})
	take := func(rev int64) error {
		return s.Commit(ctx, &driver.Tx{
			Ledgers: []driver.LedgerPut{{Key: "B", Body: []byte("b")}},
			Puts:    []driver.RowPut{{Ref: r, Attrs: pipeline.Item{"v": avS("b")}, Owner: "B", From: "A", CheckFrom: true, FromRev: rev}},
		})
	}
	for _, stale := range []int64{0, 2} {
		var ce *driver.ClaimError
		if err := take(stale); !errors.As(err, &ce) || ce.Ref != r || ce.Owner != "A" || ce.Claimant != "B" {
			t.Fatalf("a takeover read at revision %d of A's entry (at 1): %v, want a *ClaimError owned by A", stale, err)
		}
	}
	if got := readLedgers(t, s, "B"); len(got) != 0 {
		t.Fatalf("a refused takeover wrote its ledger entry: %v", got)
	}
	if got := scanRows(t, s); len(got) != 1 || got[0].Owner != "A" {
		t.Fatalf("after the refusals: %+v", got)
	}
	if err := take(1); err != nil {
		t.Fatalf("a takeover read at A's revision: %v", err)
	}
	if got := scanRows(t, s); len(got) != 1 || got[0].Owner != "B" {
		t.Fatalf("taken over: %+v", got)
	}
}

func testScanCallbackError(t *testing.T, s Store) {
	tx := &driver.Tx{}
	for i := range 5 {
		tx.Adds = append(tx.Adds, driver.Add{Ref: aggRef("p", strconv.Itoa(i), 0), Values: values("n", "1")})
		tx.Puts = append(tx.Puts, driver.RowPut{Ref: rowRef("p", "P", strconv.Itoa(i)), Attrs: pipeline.Item{"v": avS("x")}})
	}
	commit(t, s, tx)
	stop := errors.New("stop here")
	calls := 0
	err := s.ScanAggregates(t.Context(), func(driver.AggregateRef, map[string]decimal.Decimal) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ScanAggregates with a failing callback = %v after %d calls, want the callback's error after 1", err, calls)
	}
	calls = 0
	err = s.ScanRows(t.Context(), func(driver.StoredRow) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ScanRows with a failing callback = %v after %d calls, want the callback's error after 1", err, calls)
	}
}

// --- concurrency ---

func testConcurrentIncrements(t *testing.T, s Store) {
	// Each worker increments a shared counter kept in one ledger entry (read,
	// compute, commit on the read revision) together with its own ledger entry
	// and one aggregate, retrying on conflicts and contention.
	const workers, increments, maxAttempts = 8, 25, 1000
	const shared = "counter#shared"
	ref := aggRef("conc", "TOTAL", 0)
	ctx := t.Context()

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			own := fmt.Sprintf("counter#worker#%d", w)
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			attempts := 0
			for done := 0; done < increments; {
				got, err := s.ReadLedgers(ctx, []string{shared, own})
				if err != nil {
					errs <- fmt.Errorf("worker %d: ReadLedgers: %w", w, err)
					return
				}
				n := int64(0)
				if e, ok := got[shared]; ok {
					if n, err = strconv.ParseInt(string(e.Body), 10, 64); err != nil {
						errs <- fmt.Errorf("worker %d: shared counter body %q: %w", w, e.Body, err)
						return
					}
				}
				err = s.Commit(ctx, &driver.Tx{
					Ledgers: []driver.LedgerPut{
						{Key: shared, ExpectRev: got[shared].Rev, Body: []byte(strconv.FormatInt(n+1, 10))},
						{Key: own, ExpectRev: got[own].Rev, Body: []byte(strconv.Itoa(done + 1))},
					},
					Adds: []driver.Add{{Ref: ref, Values: values("count", "1", "amount", "0.01")}},
				})
				var ce *driver.ConflictError
				switch {
				case err == nil:
					done++
					attempts = 0
				case errors.As(err, &ce) || errors.Is(err, driver.ErrContention):
					attempts++
					if attempts > maxAttempts {
						errs <- fmt.Errorf("worker %d: still failing after %d attempts: %w", w, attempts, err)
						return
					}
					time.Sleep(time.Duration(rng.IntN(min(attempts, 10)*200)+50) * time.Microsecond)
				default:
					errs <- fmt.Errorf("worker %d: Commit: %w", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	keys := []string{shared}
	for w := range workers {
		keys = append(keys, fmt.Sprintf("counter#worker#%d", w))
	}
	got := readLedgers(t, s, keys...)
	wantLedger(t, got, shared, workers*increments, strconv.Itoa(workers*increments))
	for _, k := range keys[1:] {
		wantLedger(t, got, k, increments, strconv.Itoa(increments))
	}
	wantAggregates(t, s, map[driver.AggregateRef]map[string]string{ref: {"count": "200", "amount": "2.00"}})
}

// --- contexts ---

func testCancelled(t *testing.T, s Store) {
	conflictSetup(t, s)
	before := snapshot(t, s, "stored", "new")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	cases := []struct {
		name string
		call func() error
	}{
		{"ReadLedgers", func() error {
			_, err := s.ReadLedgers(ctx, []string{"stored"})
			return err
		}},
		{"Commit", func() error {
			return s.Commit(ctx, &driver.Tx{
				Ledgers: []driver.LedgerPut{{Key: "new", Body: []byte("x")}},
				Adds:    []driver.Add{{Ref: aggRef("p", "TOTAL", 0), Values: values("count", "1")}},
			})
		}},
		{"ScanAggregates", func() error {
			return s.ScanAggregates(ctx, func(driver.AggregateRef, map[string]decimal.Decimal) error {
				called = true
				return nil
			})
		}},
		{"ScanRows", func() error {
			return s.ScanRows(ctx, func(driver.StoredRow) error {
				called = true
				return nil
			})
		}},
		{"QueryRows", func() error {
			_, err := s.QueryRows(ctx, "p", "P", 0)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			called = false
			done := make(chan error, 1)
			go func() { done <- c.call() }()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s with a cancelled context = %v, want an error matching context.Canceled", c.name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s with a cancelled context did not return within 10s", c.name)
			}
			if called {
				t.Errorf("%s with a cancelled context called its callback", c.name)
			}
		})
	}
	if after := snapshot(t, s, "stored", "new"); !after.equal(before) {
		t.Fatalf("calls with a cancelled context changed the store:\nbefore: %v\nafter:  %v", before, after)
	}
}

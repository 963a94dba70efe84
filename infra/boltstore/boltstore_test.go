package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/drivertest"
	"github.com/tributary/tributary/projections/driver/layout"
)

// closeStore closes s, failing tb if that fails.
func closeStore(tb testing.TB, s *Store) {
	tb.Helper()
	if err := s.Close(); err != nil {
		tb.Error(err)
	}
}

// openTemp opens a store in a fresh temporary directory, closed when the
// test ends.
func openTemp(tb testing.TB, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(filepath.Join(tb.TempDir(), "store.db"), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// TestConformance runs the shared suite. It skips fsync, which changes
// nothing the suite can observe and may cost tens of milliseconds a commit.
func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) drivertest.Store { return openTemp(t, WithoutSync()) })
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "store.db") // parent dirs are created
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ref := driver.AggregateRef{Projection: "orders", Key: "TOTAL", Shard: 3}
	row := driver.RowRef{Projection: "board", Partition: "SEASON", Sort: "RATING#0042"}
	err = s.Commit(t.Context(), &driver.Tx{
		Ledgers: []driver.LedgerPut{{Key: "ORDER#1", Body: []byte("body"), ExpiresAt: 1}},
		Adds:    []driver.Add{{Ref: ref, Values: map[string]decimal.Decimal{"sum": decimal.MustParse("120.50")}}},
		Puts:    []driver.RowPut{{Ref: row, Attrs: pipeline.Item{"player": &types.AttributeValueMemberS{Value: "u1"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	ledgers, err := s.ReadLedgers(t.Context(), []string{"ORDER#1"})
	if err != nil {
		t.Fatal(err)
	}
	if e := ledgers["ORDER#1"]; e.Rev != 1 || string(e.Body) != "body" {
		t.Errorf("ledger after reopen = %+v, want rev 1 body %q", e, "body")
	}
	var sum string
	err = s.ScanAggregates(t.Context(), func(r driver.AggregateRef, v map[string]decimal.Decimal) error {
		if r == ref {
			sum = v["sum"].String()
		}
		return nil
	})
	if err != nil || sum != "120.5" {
		t.Errorf("aggregate after reopen: sum %q, err %v; want 120.5 (DynamoDB's form, trailing zeros trimmed)", sum, err)
	}
	rows, err := s.QueryRows(t.Context(), "board", "SEASON", 0)
	if err != nil || len(rows) != 1 || rows[0].Ref != row {
		t.Errorf("rows after reopen = %v, %v", rows, err)
	}
	// The tombstone expired long ago: DeleteExpired removes it, once.
	for want := 1; want >= 0; want-- {
		n, err := s.deleteExpired(t.Context(), time.Now())
		if err != nil || n != want {
			t.Errorf("DeleteExpired = %d, %v; want %d", n, err, want)
		}
	}
	if ledgers, _ := s.ReadLedgers(t.Context(), []string{"ORDER#1"}); len(ledgers) != 0 {
		t.Errorf("expired ledger still readable: %v", ledgers)
	}
}

func TestDeleteExpiredKeepsLiveEntries(t *testing.T) {
	s := openTemp(t, WithoutSync())
	now := time.Unix(1_800_000_000, 0)
	err := s.Commit(t.Context(), &driver.Tx{Ledgers: []driver.LedgerPut{
		{Key: "past", ExpiresAt: now.Unix() - 1},
		{Key: "future", ExpiresAt: now.Unix() + 1},
		{Key: "never"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.deleteExpired(t.Context(), now); n != 1 || err != nil {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	got, err := s.ReadLedgers(t.Context(), []string{"past", "future", "never"})
	if err != nil || len(got) != 2 || got["future"].Rev != 1 || got["never"].Rev != 1 {
		t.Fatalf("after DeleteExpired: %v, %v; want future and never", got, err)
	}
}

func TestOpenInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	start := time.Now()
	s2, err := Open(path, withOpenTimeout(200*time.Millisecond))
	if err == nil {
		closeStore(t, s2)
		t.Fatal("second Open of the same file succeeded")
	}
	if !errors.Is(err, errInUse) || !strings.Contains(err.Error(), path) {
		t.Errorf("second Open = %v, want ErrInUse naming the path", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open took %s", d)
	}
}

func TestClosedStoreFails(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadLedgers(t.Context(), []string{"k"}); err == nil {
		t.Error("ReadLedgers on a closed store succeeded")
	}
	if err := s.Commit(t.Context(), &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "k"}}}); err == nil {
		t.Error("Commit on a closed store succeeded")
	}
}

// TestInvalidTxRejected checks the validation DynamoDB would do, and that a
// rejected Tx writes nothing: each Tx also carries a valid ledger put.
func TestInvalidTxRejected(t *testing.T) {
	agg := func(projection, key string, values ...string) driver.Add {
		a := driver.Add{Ref: driver.AggregateRef{Projection: projection, Key: key}, Values: map[string]decimal.Decimal{}}
		for i := 0; i+1 < len(values); i += 2 {
			a.Values[values[i]] = decimal.MustParse(values[i+1])
		}
		return a
	}
	put := func(projection, partition, sort string, attrs pipeline.Item) driver.RowPut {
		return driver.RowPut{Ref: driver.RowRef{Projection: projection, Partition: partition, Sort: sort}, Attrs: attrs}
	}
	ok := pipeline.Item{"v": &types.AttributeValueMemberS{Value: "x"}}
	nines := strings.Repeat("9", 38)
	cases := []struct {
		name    string
		tx      driver.Tx
		wantErr string // a part of the error message naming the culprit
	}{
		{"NULInProjection", driver.Tx{Adds: []driver.Add{agg("p\x00q", "K", "n", "1")}}, `"p\x00q"`},
		{"NULInAggregateKey", driver.Tx{Adds: []driver.Add{agg("p", "K\x00", "n", "1")}}, `"K\x00"`},
		{"NULInPartition", driver.Tx{Puts: []driver.RowPut{put("p", "\x00P", "S", ok)}}, `"\x00P"`},
		{"NULInSort", driver.Tx{Puts: []driver.RowPut{put("p", "P", "S\x00", ok)}}, `"S\x00"`},
		{"NULInDeleteSort", driver.Tx{Deletes: []driver.RowDelete{{Ref: driver.RowRef{Projection: "p", Partition: "P", Sort: "\x00"}}}}, `"\x00"`},
		{"EmptyProjection", driver.Tx{Adds: []driver.Add{agg("", "K", "n", "1")}}, "empty projection"},
		{"EmptyLedgerKey", driver.Tx{Ledgers: []driver.LedgerPut{{Key: ""}}}, "ledger key is empty"},
		{"InvalidUTF8", driver.Tx{Puts: []driver.RowPut{put("p", "P", "\xff", ok)}}, `"\xff"`},
		{"NegativeShard", driver.Tx{Adds: []driver.Add{{Ref: driver.AggregateRef{Projection: "p", Key: "K", Shard: -1}}}}, "shard -1"},
		{"ReservedValueName", driver.Tx{Adds: []driver.Add{agg("p", "K", "shard", "1")}}, `"shard"`},
		{"ReservedAttributeName", driver.Tx{Puts: []driver.RowPut{put("p", "P", "S", pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "x"}})}}, `"PK"`},
		{"NilAttribute", driver.Tx{Puts: []driver.RowPut{put("p", "P", "S", pipeline.Item{"a": nil})}}, `"a"`},
		{"BadNumber", driver.Tx{Puts: []driver.RowPut{put("p", "P", "S", pipeline.Item{"a": &types.AttributeValueMemberN{Value: "1,5"}})}}, `"1,5"`},
		{"EmptySet", driver.Tx{Puts: []driver.RowPut{put("p", "P", "S", pipeline.Item{"a": &types.AttributeValueMemberSS{}})}}, "empty set"},
		{"DuplicateInNumberSet", driver.Tx{Puts: []driver.RowPut{put("p", "P", "S", pipeline.Item{"a": &types.AttributeValueMemberNS{Value: []string{"1", "1.0"}}})}}, "twice"},
		{"NestedNULLFalse", driver.Tx{Puts: []driver.RowPut{put("p", "P", "S", pipeline.Item{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberNULL{}}}})}}, `"m"."x"`},
		{"SumBeyond38Digits", driver.Tx{Adds: []driver.Add{agg("p", "BIG", "n", "0.1")}}, "38 significant digits"},
		{"NegativeExpectRev", driver.Tx{Ledgers: []driver.LedgerPut{{Key: "neg", ExpectRev: -1}}}, "negative ExpectRev"},
	}
	s := openTemp(t, WithoutSync())
	// BIG holds 38 nines: adding 0.1 needs 39 digits.
	if err := s.Commit(t.Context(), &driver.Tx{Adds: []driver.Add{agg("p", "BIG", "n", nines)}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx := c.tx
			tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: "valid#" + c.name})
			err := s.Commit(t.Context(), &tx)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Commit = %v, want an error containing %s", err, c.wantErr)
			}
			got, err := s.ReadLedgers(t.Context(), []string{"valid#" + c.name})
			if err != nil || len(got) != 0 {
				t.Fatalf("a rejected Tx wrote its ledger: %v, %v", got, err)
			}
		})
	}
	var big string
	_ = s.ScanAggregates(t.Context(), func(_ driver.AggregateRef, v map[string]decimal.Decimal) error {
		big = v["n"].String()
		return nil
	})
	if big != nines {
		t.Errorf("aggregate BIG = %s after a rejected add, want %s", big, nines)
	}
}

// A sum out of DynamoDB's number range fails the Tx with a
// *projections.RangeError naming the aggregate and the value, as the
// engine needs to find the change at fault.
func TestSumOutOfRangeIsARangeError(t *testing.T) {
	s := openTemp(t, WithoutSync())
	ref := driver.AggregateRef{Projection: "p", Key: "BIG", Shard: 2}
	add := func(v string) error {
		return s.Commit(t.Context(), &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: map[string]decimal.Decimal{"n": decimal.MustParse(v)}}}})
	}
	if err := add(strings.Repeat("9", 38)); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"0.1", "9.9999999999999999999999999999999999999E+125"} {
		err := add(v)
		var re *driver.RangeError
		if !errors.As(err, &re) || re.Ref != ref || re.Name != "n" {
			t.Errorf("adding %s: %v, want a *projections.RangeError on %v value n", v, err, ref)
		}
	}
}

func TestQueryRowsRejectsSeparator(t *testing.T) {
	s := openTemp(t, WithoutSync())
	_, err := s.QueryRows(t.Context(), "p", "P\x00", 0)
	if err == nil || !strings.Contains(err.Error(), `"P\x00"`) {
		t.Fatalf("QueryRows with a NUL in the partition = %v, want an error naming it", err)
	}
}

// TestScanCallbackMayWrite checks that scans do not hold a bbolt transaction
// while calling back: a callback that commits must not deadlock, even over
// more than one page.
func TestScanCallbackMayWrite(t *testing.T) {
	s := openTemp(t, WithoutSync())
	tx := &driver.Tx{}
	for i := range 2*scanPage + 10 {
		tx.Adds = append(tx.Adds, driver.Add{
			Ref:    driver.AggregateRef{Projection: "p", Key: fmt.Sprintf("K%04d", i)},
			Values: map[string]decimal.Decimal{"n": decimal.FromInt(1)},
		})
	}
	for i := 0; i < len(tx.Adds); i += driver.MaxTxActions {
		part := &driver.Tx{Adds: tx.Adds[i:min(i+driver.MaxTxActions, len(tx.Adds))]}
		if err := s.Commit(t.Context(), part); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	err := s.ScanAggregates(t.Context(), func(ref driver.AggregateRef, _ map[string]decimal.Decimal) error {
		seen++
		return s.Commit(t.Context(), &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "seen#" + ref.Key}}})
	})
	if err != nil || seen != len(tx.Adds) {
		t.Fatalf("ScanAggregates = %v after %d callbacks, want %d", err, seen, len(tx.Adds))
	}
}

// BenchmarkCommit commits a transaction the size of one projection batch: 20
// ledger updates (from a pool of 1000 items, so most are updates) and 20
// aggregate additions (from a pool of 50 aggregates).
//
// Commits are synced to disk, as in real use; the WithoutSync sub-benchmark
// shows the store's own cost.
func BenchmarkCommit(b *testing.B) {
	b.Run("Sync", func(b *testing.B) { benchmarkCommit(b, openTemp(b)) })
	b.Run("WithoutSync", func(b *testing.B) { benchmarkCommit(b, openTemp(b, WithoutSync())) })
}

func benchmarkCommit(b *testing.B, s *Store) {
	const items, aggregates, perTx = 1000, 50, 20
	revs := make([]int64, items)
	body := []byte(strings.Repeat("x", 120))
	values := map[string]decimal.Decimal{"count": decimal.FromInt(1), "amount": decimal.MustParse("12.34")}
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tx := &driver.Tx{}
		for j := range perTx {
			item := (i*perTx + j) % items
			tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: fmt.Sprintf("ORDER#%06d", item), ExpectRev: revs[item], Body: body})
			tx.Adds = append(tx.Adds, driver.Add{
				Ref:    driver.AggregateRef{Projection: "orders", Key: fmt.Sprintf("ORDERS#PAID#DAY#%03d", (i*perTx+j)%aggregates)},
				Values: values,
			})
		}
		if err := s.Commit(ctx, tx); err != nil {
			b.Fatal(err)
		}
		for j := range perTx {
			revs[(i*perTx+j)%items]++
		}
		i++
	}
	b.ReportMetric(float64(b.N*2*perTx)/b.Elapsed().Seconds(), "actions/s")
}

// TestWriteUnitsAreDynamoDBs: the embedded store estimates a commit at what
// it would cost in DynamoDB, so the demo and the cost benchmarks count
// DynamoDB's bill.
func TestWriteUnitsAreDynamoDBs(t *testing.T) {
	s := openTemp(t, WithoutSync())
	tx := &driver.Tx{
		Ledgers: []driver.LedgerPut{{Key: "k", Body: make([]byte, 1500)}},
		Adds:    []driver.Add{{Ref: driver.AggregateRef{Projection: "p", Key: "K"}, Values: map[string]decimal.Decimal{"n": decimal.MustParse("1")}}},
	}
	if got, want := driver.WriteUnitsOf(s, tx), layout.WriteUnits(tx); got != want || got == 0 {
		t.Errorf("WriteUnitsOf(boltstore) = %v, layout.WriteUnits = %v", got, want)
	}
}

// TestCommitGroupAllOrNothing: a group is applied in order, each
// transaction seeing the one before it; when one fails, none is applied
// and the error is that one's.
func TestCommitGroupAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	add := func(v string) driver.Add {
		return driver.Add{Ref: driver.AggregateRef{Projection: "p", Key: "k"}, Values: map[string]decimal.Decimal{"n": decimal.MustParse(v)}}
	}
	first := &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "a", Body: []byte("1")}}, Adds: []driver.Add{add("1")}}
	second := &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "a", ExpectRev: 1, Body: []byte("2")}}, Adds: []driver.Add{add("2")}}
	stale := &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "b", ExpectRev: 4, Body: []byte("x")}}, Adds: []driver.Add{add("10")}}
	var ce *driver.ConflictError
	if err := s.CommitGroup(ctx, []*driver.Tx{first, second, stale}); !errors.As(err, &ce) || ce.Current["b"].Rev != 0 {
		t.Fatalf("group with a stale revision: %v", err)
	}
	if got, _ := s.ReadLedgers(ctx, []string{"a"}); got["a"].Rev != 0 {
		t.Fatalf("a failed group applied ledger a: %+v", got["a"])
	}
	if err := s.CommitGroup(ctx, []*driver.Tx{first, second}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.ReadLedgers(ctx, []string{"a"})
	if got["a"].Rev != 2 || string(got["a"].Body) != "2" {
		t.Errorf("ledger a after the group: %+v", got["a"])
	}
	var sum string
	_ = s.ScanAggregates(ctx, func(ref driver.AggregateRef, vs map[string]decimal.Decimal) error {
		sum = vs["n"].String()
		return nil
	})
	if sum != "3" {
		t.Errorf("aggregate after the group: %q, want 3", sum)
	}
}

package remodel_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
)

// built is a target the remodel built from an export and its stream's
// tail, as TestRemodelThenStream builds one.
func built(t *testing.T) (*live, *remodel.Remodel, driver.Table) {
	t.Helper()
	ctx := context.Background()
	l := newLive(t, 61, 2500, 300)
	r := mustRemodel(t, newDesign())
	ts := openTarget(t, r)
	e, err := r.Open(ctx, ts, engine.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	backfillUntilDone(ctx, t, l, r, e, ts)
	form{name: "streams"}.deliver(ctx, t, l, e)
	sameTarget(t, "built", ts, expected(t, r, l.h.Table.Items()))
	return l, r, ts
}

// beforeAnyTTL is a check's time before every simulated item expires:
// nothing is left out for its TTL.
func beforeAnyTTL(l *live) time.Time { return l.h.Workload.Start.Add(-30 * 24 * time.Hour) }

// TestCheckNamesEveryDifference: a target the remodel built agrees with
// its export, with the items changed since told apart; a target item
// deleted, one changed and one that no source item makes are each named,
// whatever the number of partitions, and nothing else is.
func TestCheckNamesEveryDifference(t *testing.T) {
	ctx := context.Background()
	l, r, ts := built(t)
	res, err := r.Check(ctx, l.full, nil, ts, remodel.CheckOptions{Now: beforeAnyTTL(l)})
	if err != nil {
		t.Fatal(err)
	}
	if !agreeButSecond(res) || res.Changed == 0 || res.Expected != res.Found || res.Expired != 0 || res.Newest.IsZero() {
		t.Fatalf("the built target: %+v", res)
	}
	t.Logf("agreeing: %+v", res)
	// With the keys of the items changed since spilled and joined, the
	// same.
	cut, err := r.Check(ctx, l.full, nil, ts, remodel.CheckOptions{Now: beforeAnyTTL(l), NewerInMemory: -1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cut, res) {
		t.Fatalf("spilled: %+v\nheld: %+v", cut, res)
	}

	// Tamper with it behind the engine's back: one item changed since the
	// export (checked against its ledger entry), one from the export, and
	// one that nothing makes.
	var fromLedger, fromExport driver.StoredRow
	changed := map[string]bool{}
	if err := ts.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		st, ok, err := engine.DecodeItemState(key, e)
		if ok && st.Token.Newer(engine.AsOfToken(l.full.Time())) {
			for _, row := range st.Rows {
				changed[row.Ref.Partition+"/"+row.Ref.Sort] = true
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := ts.ScanRows(ctx, func(row driver.StoredRow) error {
		switch {
		case changed[row.Ref.Partition+"/"+row.Ref.Sort] && fromLedger.Attrs == nil:
			fromLedger = row
		case !changed[row.Ref.Partition+"/"+row.Ref.Sort] && fromExport.Attrs == nil:
			fromExport = row
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fromLedger.Attrs == nil || fromExport.Attrs == nil {
		t.Fatal("no target item of each kind to tamper with")
	}
	altered := clone(fromLedger.Attrs)
	altered["tampered"] = s("yes")
	stray := pipeline.Item{"PK": s("STRAY"), "SK": s("1")}
	strayRef, _ := r.Key().Ref(r.Name(), stray)
	if err := ts.Commit(ctx, &driver.Tx{
		Puts:    []driver.RowPut{{Ref: fromLedger.Ref, Attrs: altered, Owner: "tamper", Held: true}, {Ref: strayRef, Attrs: stray, Owner: "tamper"}},
		Deletes: []driver.RowDelete{{Ref: fromExport.Ref}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		parts int
		spill bool // the keys of the items changed since spilled
	}{{1, false}, {7, false}, {4096, false}, {7, true}, {4096, true}} {
		t.Run(fmt.Sprintf("%d partitions, spilled %v", tc.parts, tc.spill), func(t *testing.T) {
			opts := remodel.CheckOptions{Now: beforeAnyTTL(l), Partitions: tc.parts, Dir: t.TempDir()}
			if tc.spill {
				opts.NewerInMemory = -1
			}
			res, err := r.Check(ctx, l.full, nil, ts, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"target item PK=STRAY SK=1: not expected (no source item makes it, as of the export)",
				"target item " + r.DescribeKey(fromExport.Ref) + ": missing (from source item",
				"target item " + r.DescribeKey(fromLedger.Ref) + `: got ` + string(pipeline.AppendItem(nil, altered)) + ", not what the ledger entry of source item",
			}
			if res.Agree() || len(res.Differences) != len(want) || res.More != 0 || res.Unsettled != 0 {
				t.Fatalf("the tampered target: %+v, want %d differences", res, len(want))
			}
			for _, w := range want {
				if !slices.ContainsFunc(res.Differences, func(d string) bool { return strings.HasPrefix(d, w) }) {
					t.Errorf("no difference starting %q in:\n%s", w, strings.Join(res.Differences, "\n"))
				}
			}
		})
	}
}

// TestCheckLeavesOutExpired: an expired target item that the target's own
// TTL removed is no difference; one not expired yet is.
func TestCheckLeavesOutExpired(t *testing.T) {
	ctx := context.Background()
	l, r, ts := built(t)
	var victim driver.StoredRow
	var ttl int64
	if err := ts.ScanRows(ctx, func(row driver.StoredRow) error {
		if v, err := strconv.ParseInt(num(row.Attrs, "ttl"), 10, 64); err == nil && victim.Attrs == nil {
			victim, ttl = row, v
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if victim.Attrs == nil {
		t.Fatal("no target item with a TTL")
	}
	// The target's TTL removes it (a delete of its own, not the stream's).
	if err := ts.Commit(ctx, &driver.Tx{Deletes: []driver.RowDelete{{Ref: victim.Ref}}}); err != nil {
		t.Fatal(err)
	}
	after := time.Unix(ttl, 0)
	res, err := r.Check(ctx, l.full, nil, ts, remodel.CheckOptions{Now: after})
	if err != nil {
		t.Fatal(err)
	}
	if !agreeButSecond(res) || res.Expired == 0 {
		t.Fatalf("after its TTL: %+v", res)
	}
	res, err = r.Check(ctx, l.full, nil, ts, remodel.CheckOptions{Now: after.Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Agree() || len(res.Differences) != 1 || !strings.Contains(res.Differences[0], r.DescribeKey(victim.Ref)+": missing") {
		t.Fatalf("a second before its TTL: %+v, want it named missing", res)
	}
}

// TestCheckTTLHeavy: on a table whose items mostly have a passed TTL, the
// target's TTL removes some of them and not others (as the source's and
// the target's lag independently): no difference, even with the
// partitions whose expired keys differ far over the budget of partitions
// read again. A stray item with a passed TTL, which no source item makes,
// is named.
func TestCheckTTLHeavy(t *testing.T) {
	ctx := context.Background()
	l, r, ts := built(t)
	var expired []driver.StoredRow
	var last int64
	if err := ts.ScanRows(ctx, func(row driver.StoredRow) error {
		if v, err := strconv.ParseInt(num(row.Attrs, "ttl"), 10, 64); err == nil {
			expired = append(expired, row)
			last = max(last, v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(expired) < 50 {
		t.Fatalf("%d target items with a TTL: too few", len(expired))
	}
	// The target's TTL removes every other one.
	var dels []driver.RowDelete
	for i, row := range expired {
		if i%2 == 0 {
			dels = append(dels, driver.RowDelete{Ref: row.Ref})
		}
	}
	for len(dels) > 0 {
		n := min(len(dels), 50)
		if err := ts.Commit(ctx, &driver.Tx{Deletes: dels[:n]}); err != nil {
			t.Fatal(err)
		}
		dels = dels[n:]
	}
	opts := remodel.CheckOptions{Now: time.Unix(last+1, 0), MaxNamed: 1, Partitions: 8, Dir: t.TempDir()}
	res, err := r.Check(ctx, l.full, nil, ts, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !agreeButSecond(res) || res.Expired < int64(len(expired)) || res.Strays != 0 {
		t.Fatalf("the target's TTL removed half the expired items: %+v", res)
	}
	stray := driver.RowRef{Projection: r.Name(), Partition: "STRAY#1", Sort: "X"}
	strayAttrs := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "STRAY#1"}, "SK": &types.AttributeValueMemberS{Value: "X"}, "ttl": &types.AttributeValueMemberN{Value: "1"}}
	if err := ts.Commit(ctx, &driver.Tx{Puts: []driver.RowPut{{Ref: stray, Attrs: strayAttrs}}}); err != nil {
		t.Fatal(err)
	}
	res, err = r.Check(ctx, l.full, nil, ts, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Agree() || res.Strays != 1 || len(res.Differences) != 1 || !strings.Contains(res.Differences[0], r.DescribeKey(stray)+": not expected (no source item makes it, as of the export; its TTL has passed, but no source item's explains it)") {
		t.Fatalf("a stray item with a passed TTL: %+v", res)
	}
}

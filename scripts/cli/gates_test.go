package cli

import (
	"context"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
)

// gateChain writes a full export of items at 11:00 and an incremental one
// from then to 12:00:00.700 whose changes are last, each written at its
// Time, or at 12:00:00.500 when it has none: the chain a gate checks
// against, as of 12:00:00.700.
// It returns the two exports' directories.
func gateChain(t *testing.T, items []pipeline.Item, last []exportgen.Change) (full, inc string) {
	t.Helper()
	root := t.TempDir()
	ctx := context.Background()
	st := objstore.NewDir(root).WithoutSync()
	t0 := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	f, err := exportgen.WriteFull(ctx, st, exportgen.Export{ID: exportgen.ExportID(t0, 11), Time: t0, Files: 1}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	t1 := gateAsOf
	for i := range last {
		if last[i].Time.IsZero() {
			last[i].Time = t1.Add(-200 * time.Millisecond)
		}
	}
	i, err := exportgen.WriteIncremental(ctx, st, exportgen.Export{ID: exportgen.ExportID(t1, 12), Time: t1, From: t0, Files: 1}, last)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, f.Dir), filepath.Join(root, i.Dir)
}

func nv(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// gateAsOf is the end of gateChain's incremental export.
var gateAsOf = time.Date(2026, 12, 1, 12, 0, 0, 700_000_000, time.UTC)

// streamChanges writes a Streams event of records, in the second of
// gateAsOf (12:00:00, the precision of a Streams record), numbered from
// seq on, each the change from the one before (from: the first's old image).
func streamChanges(t *testing.T, keys pipeline.Item, from pipeline.Item, seq int, images ...pipeline.Item) string {
	t.Helper()
	var recs []sim.Record
	old := from
	for i, img := range images {
		recs = append(recs, sim.Record{Kind: pipeline.Modify, Keys: keys, Old: old, New: img,
			Seq: "9000000000000000000" + strconv.Itoa(10+seq+i), Time: gateAsOf.Truncate(time.Second), EventID: "e" + strconv.Itoa(seq+i)})
		old = img
	}
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, sim.StreamsEvent(recs), 0o600); err != nil {
		t.Fatal(err)
	}
	return event
}

// TestVerifyInTheExportsSecond: an order changed twice in the second of
// the incremental export's end, both before it (version 2, then 3); a
// store that applied the first change from the stream and missed the
// second is not agreed with (by time alone its state, in the export's own
// second, counts as changed since): the version orders it before the
// export's, and verify names the order and says NOT READY. Applying the
// second change makes it agree; a third, after the export (version 4),
// is told apart as changed since. Without a version attribute the same
// missed change cannot be ordered: NOT READY, naming it.
func TestVerifyInTheExportsSecond(t *testing.T) {
	order := func(version int, status, total string) pipeline.Item {
		it := pipeline.Item{"PK": sv("USER#u1"), "SK": sv("ORDER#2026-12-01#o1"), "EntityType": sv("Order"),
			"status": sv(status), "total": nv(total), "orderDate": sv("2026-12-01")}
		if version > 0 {
			it["version"] = nv(strconv.Itoa(version))
		}
		return it
	}
	keys := pipeline.Item{"PK": sv("USER#u1"), "SK": sv("ORDER#2026-12-01#o1")}
	const named = "item PK=USER#u1 SK=ORDER#2026-12-01#o1: "
	// missedSecond backfills a store from the full export of the order
	// (version 1, or v 0: none) and applies the first of its changes in
	// the export's second from the stream, not the second.
	missedSecond := func(v int) (full, inc, store string) {
		t.Helper()
		next := func(n int) int { return v * n }
		full, inc = gateChain(t, []pipeline.Item{order(next(1), "PENDING", "10")}, []exportgen.Change{{Keys: keys, Old: order(next(1), "PENDING", "10"), New: order(next(3), "PAID", "30")}})
		store = t.TempDir()
		if code, out, stderr := runCLI(t, "backfill", "--export", full, "--store", store, "--no-sync"); code != 0 {
			t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
		}
		if code, out, stderr := runCLI(t, "process", "--events", streamChanges(t, keys, order(next(1), "PENDING", "10"), 1, order(next(2), "PAID", "20")), "--store", store); code != 0 {
			t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
		}
		return full, inc, store
	}

	t.Run("version", func(t *testing.T) {
		full, inc, store := missedSecond(1)
		code, out, stderr := runCLI(t, "verify", "--export", full, "--incremental", inc, "--store", store)
		if code != 1 || strings.Contains(out, "AGREE") || !strings.Contains(out, "  "+named+"its state in the table (version 2, from a change in the export's own second (2026-12-01T12:00:00Z)) is older than the export's (version 3): a change the table missed, or the item removed and created again since") ||
			!strings.HasSuffix(out, "NOT READY: 1 items could not be judged against the export (in its own second; see above), the rest agrees: verify against a later incremental export, from the full export's time on and ending after that second: it knows each item's last write, which orders them by time (in its own last second, only the items it shows written there are left to the version)\n") {
			t.Fatalf("a store that missed the second change: exit %d\n%s%s", code, out, stderr)
		}
		// The change it missed: the same state as the export's.
		if code, out, stderr := runCLI(t, "process", "--events", streamChanges(t, keys, order(2, "PAID", "20"), 2, order(3, "PAID", "30")), "--store", store); code != 0 {
			t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
		}
		code, out, stderr = runCLI(t, "verify", "--export", full, "--incremental", inc, "--store", store)
		if code != 0 || !strings.HasSuffix(out, "AGREE: every aggregate and row in the store equals the recomputation from the export, with the 0 items changed since it as their state in the store says\n") {
			t.Fatalf("a store with both changes: exit %d\n%s%s", code, out, stderr)
		}
		// A change after the export's point, in its second.
		if code, out, stderr := runCLI(t, "process", "--events", streamChanges(t, keys, order(3, "PAID", "30"), 3, order(4, "SHIPPED", "30")), "--store", store); code != 0 {
			t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
		}
		code, out, stderr = runCLI(t, "verify", "--export", full, "--incremental", inc, "--store", store)
		if code != 0 || !strings.HasSuffix(out, "AGREE: every aggregate and row in the store equals the recomputation from the export, with the 1 items changed since it as their state in the store says\n") {
			t.Fatalf("a store with a change since: exit %d\n%s%s", code, out, stderr)
		}
	})

	// With the incremental export last, its lines time each item's last
	// write: an order it does not hold was not written in its window, and
	// one it holds written before the export's own second was not written
	// in that second; a creation, a removal (no version rule orders
	// either) or a change without a version in that second then came
	// after the export's point.
	t.Run("incremental last", func(t *testing.T) {
		item := func(id string, version int, status, total string) pipeline.Item {
			it := order(version, status, total)
			it["SK"] = sv("ORDER#2026-12-01#" + id)
			if version == 0 {
				delete(it, "version")
			}
			return it
		}
		key := func(id string) pipeline.Item {
			return pipeline.Item{"PK": sv("USER#u1"), "SK": sv("ORDER#2026-12-01#" + id)}
		}
		early := gateAsOf.Add(-30 * time.Minute)
		full, inc := gateChain(t, []pipeline.Item{item("o1", 0, "PAID", "10"), item("o2", 1, "PAID", "20")},
			[]exportgen.Change{{Keys: key("o2"), Old: item("o2", 1, "PAID", "20"), New: item("o2", 2, "PAID", "25"), Time: early},
				{Keys: key("o1"), Old: item("o1", 0, "PAID", "10"), New: item("o1", 0, "PAID", "15"), Time: early}})
		store := t.TempDir()
		if code, out, stderr := runCLI(t, "backfill", "--export", full, "--incremental", inc, "--store", store, "--no-sync"); code != 0 {
			t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
		}
		tick := gateAsOf.Truncate(time.Second)
		ev := streamEvent(t,
			sim.Record{Kind: pipeline.Insert, Keys: key("o3"), New: item("o3", 1, "PAID", "5"), Seq: "900000000000000000021", Time: tick, EventID: "i1"},
			sim.Record{Kind: pipeline.Remove, Keys: key("o2"), Old: item("o2", 2, "PAID", "25"), Seq: "900000000000000000022", Time: tick, EventID: "i2"},
			sim.Record{Kind: pipeline.Modify, Keys: key("o1"), Old: item("o1", 0, "PAID", "15"), New: item("o1", 0, "PAID", "17"), Seq: "900000000000000000023", Time: tick, EventID: "i3"})
		if code, out, stderr := runCLI(t, "process", "--events", ev, "--store", store); code != 0 {
			t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
		}
		code, out, stderr := runCLI(t, "verify", "--export", full, "--incremental", inc, "--store", store)
		if code != 0 || !strings.HasSuffix(out, "AGREE: every aggregate and row in the store equals the recomputation from the export, with the 3 items changed since it as their state in the store says\n") {
			t.Fatalf("changes in the export's own second of items the incremental export last wrote before it, or not at all: exit %d\n%s%s", code, out, stderr)
		}
	})

	t.Run("no version", func(t *testing.T) {
		full, inc, store := missedSecond(0)
		code, out, stderr := runCLI(t, "verify", "--export", full, "--incremental", inc, "--store", store)
		if code != 1 || strings.Contains(out, "AGREE") || !strings.Contains(out, "  "+named+"its state in the table is from a change in the export's own second (2026-12-01T12:00:00Z), differs from the export's, and neither has a version attribute to order them\n") ||
			!strings.Contains(out, "\nNOT READY: 1 items could not be judged") {
			t.Fatalf("no version: exit %d\n%s%s", code, out, stderr)
		}
	})
}

// TestRemodelVerifyInTheExportsSecond: remodel verify, as verify above: a
// target whose source comment missed its second change in the export's
// own second is not agreed with; one that has both is.
func TestRemodelVerifyInTheExportsSecond(t *testing.T) {
	comment := func(version int, body string) pipeline.Item {
		return pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#c1"), "EntityType": sv("Comment"), "docId": sv("d1"), "commentId": sv("c1"),
			"body": sv(body), "version": nv(strconv.Itoa(version))}
	}
	keys := pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#c1")}
	full, inc := gateChain(t, []pipeline.Item{comment(1, "a")}, []exportgen.Change{{Keys: keys, Old: comment(1, "a"), New: comment(3, "c")}})
	dir := t.TempDir()
	args := func(cmd string, more ...string) []string {
		return append([]string{"remodel", cmd, "--transform", "comments-table", "--store", dir}, more...)
	}
	if code, out, stderr := runCLI(t, args("backfill", "--export", full, "--no-sync")...); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, args("apply", "--events", streamChanges(t, keys, comment(1, "a"), 1, comment(2, "b")))...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := runCLI(t, args("verify", "--export", full, "--incremental", inc)...)
	if code != 1 || strings.Contains(out, "AGREE") || !strings.Contains(out, "  source item PK=WS#w1 SK=DOC#d1#CMT#c1: its state in the table (version 2, from a change in the export's own second (2026-12-01T12:00:00Z)) is older than the export's (version 3)") ||
		!strings.HasSuffix(out, "NOT READY: 1 source items could not be judged against the export (in its own second; see above), the rest agrees: verify against a later incremental export, from the full export's time on and ending after that second: it knows each item's last write, which orders them by time (in its own last second, only the items it shows written there are left to the version)\n") {
		t.Fatalf("a target that missed the second change: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, args("apply", "--events", streamChanges(t, keys, comment(2, "b"), 2, comment(3, "c")))...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, args("verify", "--export", full, "--incremental", inc)...)
	if code != 0 || !strings.HasSuffix(out, "AGREE: every target item equals the transform of its source item as of the export, with the 0 source items changed since as their ledger entries say\n") {
		t.Fatalf("a target with both changes: exit %d\n%s%s", code, out, stderr)
	}
}

// TestRemodelVerifyInTheExportsSecondIncrementalLast: remodel verify, as
// verify's "incremental last" above: in the export's own second, a comment
// created that the incremental export does not hold, and one removed that
// it last wrote before that second, are told apart as changed since.
func TestRemodelVerifyInTheExportsSecondIncrementalLast(t *testing.T) {
	comment := func(id string, version int, body string) pipeline.Item {
		return pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#" + id), "EntityType": sv("Comment"), "docId": sv("d1"), "commentId": sv(id),
			"body": sv(body), "version": nv(strconv.Itoa(version))}
	}
	key := func(id string) pipeline.Item { return pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#" + id)} }
	full, inc := gateChain(t, []pipeline.Item{comment("c1", 1, "a"), comment("c2", 1, "b")},
		[]exportgen.Change{{Keys: key("c2"), Old: comment("c2", 1, "b"), New: comment("c2", 2, "bb"), Time: gateAsOf.Add(-30 * time.Minute)}})
	dir := t.TempDir()
	args := func(cmd string, more ...string) []string {
		return append([]string{"remodel", cmd, "--transform", "comments-table", "--store", dir}, more...)
	}
	if code, out, stderr := runCLI(t, args("backfill", "--export", full, "--incremental", inc, "--no-sync")...); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	tick := gateAsOf.Truncate(time.Second)
	ev := streamEvent(t,
		sim.Record{Kind: pipeline.Insert, Keys: key("c3"), New: comment("c3", 1, "c"), Seq: "900000000000000000031", Time: tick, EventID: "r1"},
		sim.Record{Kind: pipeline.Remove, Keys: key("c2"), Old: comment("c2", 2, "bb"), Seq: "900000000000000000032", Time: tick, EventID: "r2"})
	if code, out, stderr := runCLI(t, args("apply", "--events", ev)...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := runCLI(t, args("verify", "--export", full, "--incremental", inc)...)
	if code != 0 || !strings.HasSuffix(out, "AGREE: every target item equals the transform of its source item as of the export, with the 2 source items changed since as their ledger entries say\n") {
		t.Fatalf("changes in the export's own second of items the incremental export last wrote before it, or not at all: exit %d\n%s%s", code, out, stderr)
	}
}

// TestRemodelVerifyStrayExpired: a target item whose TTL has passed is
// left out only where a source item's transform explains it: a stray one
// with ttl 1 that no source item makes is named, as it is without a TTL;
// the target item of a source comment whose TTL has passed is still left
// out, also once the target's TTL removed it.
func TestRemodelVerifyStrayExpired(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	comment := func(id string, ttl int64) pipeline.Item {
		it := pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#" + id), "EntityType": sv("Comment"), "docId": sv("d1"), "commentId": sv(id), "version": nv("1")}
		if ttl != 0 {
			it["ttl"] = nv(strconv.FormatInt(ttl, 10))
		}
		return it
	}
	exp, dir := commentsTarget(t, exportgen.Export{ID: exportgen.ExportID(at, 13), Time: at, Files: 1}, slices.Values([]pipeline.Item{comment("c1", 0), comment("c2", at.Add(-time.Hour).Unix())}))
	verify := func() (int, string) {
		code, out, stderr := runCLI(t, "remodel", "verify", "--export", exp, "--transform", "comments-table", "--store", dir, "--at", at.Format(time.RFC3339))
		return code, out + stderr
	}
	if code, out := verify(); code != 0 || !strings.Contains(out, "\n1 items left out: their TTL (ttl) passed before") || !strings.HasSuffix(out, "AGREE: every target item equals the transform of its source item as of the export, with the 0 source items changed since as their ledger entries say\n") {
		t.Fatalf("the backfilled target: exit %d\n%s", code, out)
	}
	put := func(ref driver.RowRef, attrs pipeline.Item, del bool) {
		t.Helper()
		tx := &driver.Tx{Puts: []driver.RowPut{{Ref: ref, Attrs: attrs}}}
		if del {
			tx = &driver.Tx{Deletes: []driver.RowDelete{{Ref: ref}}}
		}
		commitTarget(t, dir, tx)
	}
	// The target's TTL removes the expired comment's target item.
	put(driver.RowRef{Projection: "comments-table", Partition: "DOC#d1", Sort: "CMT#c2"}, nil, true)
	if code, out := verify(); code != 0 || !strings.HasSuffix(out, "AGREE: every target item equals the transform of its source item as of the export, with the 0 source items changed since as their ledger entries say\n") {
		t.Fatalf("its TTL removed an expired one: exit %d\n%s", code, out)
	}
	// A stray item with ttl 1, which no source item makes.
	stray := pipeline.Item{"PK": sv("DOC#d9"), "SK": sv("CMT#c9"), "EntityType": sv("Comment"), "ttl": nv("1")}
	put(driver.RowRef{Projection: "comments-table", Partition: "DOC#d9", Sort: "CMT#c9"}, stray, false)
	if code, out := verify(); code != 1 || !strings.Contains(out, "  target item PK=DOC#d9 SK=CMT#c9: not expected (no source item makes it, as of the export; its TTL has passed, but no source item's explains it): ") ||
		!strings.HasSuffix(out, "MISMATCH: 1 differences between the target and the transform of the export (the items changed since it taken as their state in the ledger says)\n") {
		t.Fatalf("a stray item with ttl 1: exit %d\n%s", code, out)
	}
}

// TestRemodelVerifyPartitionsBound: --partitions past the bound is a usage
// error naming it, not two bucket arrays the machine cannot hold.
func TestRemodelVerifyPartitionsBound(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"2000000000", "1048577", "0"} {
		code, out, stderr := runCLI(t, "remodel", "verify", "--export", dir, "--transform", "comments-table", "--store", dir, "--partitions", p)
		if code != 2 || !strings.Contains(stderr, "--partitions must be between 1 and 1048576 (the check holds four 24-byte hashes per partition: 96 MiB at the most)") {
			t.Errorf("--partitions %s: exit %d\n%s%s", p, code, out, stderr)
		}
	}
}

// TestVerifyNamesUpToMaxPrint: the gate names the first --max-print
// differences, sorted, and counts the rest, without holding them: the
// MISMATCH line counts them all, with --max-print 0 all are named.
func TestVerifyNamesUpToMaxPrint(t *testing.T) {
	store := fixtureStore(t)
	var adds []driver.Add
	for _, day := range []string{"2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"} {
		adds = append(adds, driver.Add{Ref: driver.AggregateRef{Projection: "order-totals", Key: "ORDERS#PAID#DAY#" + day},
			Values: map[string]decimal.Decimal{"orders": decimal.FromInt(1)}})
	}
	commitStore(t, store, &driver.Tx{Adds: adds})
	for _, tc := range []struct {
		maxPrint string
		named    int
		more     string
	}{
		{"2", 2, "  ... and 3 more (--max-print 0 prints all)\n"},
		{"0", 5, ""},
	} {
		code, out, stderr := runCLI(t, "verify", "--export", fullExport, "--store", store, "--max-print", tc.maxPrint)
		named := strings.Count(out, "  order-totals ORDERS#PAID#DAY#2026-01-0")
		if code != 1 || named != tc.named || !strings.Contains(out, "  order-totals ORDERS#PAID#DAY#2026-01-01 orders: got 1, want 0\n") ||
			tc.more != "" && !strings.Contains(out, tc.more) || tc.more == "" && strings.Contains(out, "... and") ||
			!strings.Contains(out, "MISMATCH: 5 differences between the store") || stderr != "" {
			t.Errorf("--max-print %s: exit %d, %d named\n%s%s", tc.maxPrint, code, named, out, stderr)
		}
	}
}

// commentsTarget writes a full export e of items and backfills a target
// of the comments-table transform from it: the export's directory and the
// target's.
func commentsTarget(t *testing.T, e exportgen.Export, items iter.Seq[pipeline.Item]) (exp, dir string) {
	t.Helper()
	root := t.TempDir()
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(root).WithoutSync(), e, items)
	if err != nil {
		t.Fatal(err)
	}
	exp, dir = filepath.Join(root, res.Dir), t.TempDir()
	if code, out, stderr := runCLI(t, "remodel", "backfill", "--export", exp, "--transform", "comments-table", "--store", dir, "--no-sync"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	return exp, dir
}

// fixtureStore backfills a store from the fixture export and returns its
// directory.
func fixtureStore(t *testing.T) string {
	t.Helper()
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	return store
}

// commitStore commits tx to the store in dir, as a write from outside the
// engine.
func commitStore(t *testing.T, dir string, tx *driver.Tx) {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(dir, StoreFile), boltstore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	err = st.Commit(context.Background(), tx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// commitTarget commits tx to the remodel target in dir, as a write from
// outside the remodeler (the target's TTL, a stray writer), its deletes
// 50 at a time.
func commitTarget(t *testing.T, dir string, tx *driver.Tx) {
	t.Helper()
	ts, err := boltstore.OpenTarget(filepath.Join(dir, "target.db"), "", target.Key{}, boltstore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	dels := tx.Deletes
	for err == nil && len(dels) > 50 {
		err = ts.Commit(context.Background(), &driver.Tx{Deletes: dels[:50]})
		dels = dels[50:]
	}
	if err == nil {
		err = ts.Commit(context.Background(), &driver.Tx{Puts: tx.Puts, Deletes: dels})
	}
	if cerr := ts.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// streamEvent writes a Streams event of records.
func streamEvent(t *testing.T, recs ...sim.Record) string {
	t.Helper()
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, sim.StreamsEvent(recs), 0o600); err != nil {
		t.Fatal(err)
	}
	return event
}

// TestGatesRefuseOtherKeyAttributes: a store backfilled with
// --key-attributes PK from an export of a PK,SK table, then changed by
// the stream, whose records are keyed {PK,SK}, holds the item twice in
// its ledger and twice in its sums; a gate that reads the export's items
// by PK expects both and would agree. Both gates refuse it, naming both
// sets of key attributes, whichever they are given.
func TestGatesRefuseOtherKeyAttributes(t *testing.T) {
	keys := pipeline.Item{"PK": sv("USER#u1"), "SK": sv("ORDER#2026-12-01#o1")}
	order := func(version int, status, total string) pipeline.Item {
		return pipeline.Item{"PK": sv("USER#u1"), "SK": sv("ORDER#2026-12-01#o1"), "EntityType": sv("Order"),
			"status": sv(status), "total": nv(total), "orderDate": sv("2026-12-01"), "version": nv(strconv.Itoa(version))}
	}
	change := sim.Record{Kind: pipeline.Modify, Keys: keys, Old: order(1, "PAID", "10"), New: order(2, "PAID", "20"),
		Seq: "900000000000000000001", Time: gateAsOf.Add(time.Hour), EventID: "k1"}
	full, _ := gateChain(t, []pipeline.Item{order(1, "PAID", "10")}, nil)
	refused := func(out string, checked string) bool {
		return strings.Contains(out, "the table's ledger holds item PK=USER#u1") && strings.Contains(out, "and the check reads the export's items by "+checked+": ") &&
			(strings.Contains(out, " keyed by PK,SK, ") || strings.Contains(out, " keyed by PK, ")) && !strings.Contains(out, "AGREE")
	}

	t.Run("verify", func(t *testing.T) {
		store := t.TempDir()
		if code, out, stderr := runCLI(t, "backfill", "--export", full, "--store", store, "--no-sync", "--key-attributes", "PK"); code != 0 {
			t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
		}
		if code, out, stderr := runCLI(t, "process", "--events", streamEvent(t, change), "--store", store); code != 0 {
			t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
		}
		for _, checked := range []string{"PK", "PK,SK"} {
			code, out, stderr := runCLI(t, "verify", "--export", full, "--store", store, "--key-attributes", checked)
			if code != 1 || !refused(out+stderr, checked) {
				t.Errorf("verify --key-attributes %s of a store keyed both ways: exit %d\n%s%s", checked, code, out, stderr)
			}
		}
	})

	t.Run("remodel verify", func(t *testing.T) {
		comment := func(version int, body string) pipeline.Item {
			return pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#c1"), "EntityType": sv("Comment"), "docId": sv("d1"), "commentId": sv("c1"),
				"body": sv(body), "version": nv(strconv.Itoa(version))}
		}
		full, _ := gateChain(t, []pipeline.Item{comment(1, "a")}, nil)
		dir := t.TempDir()
		args := func(cmd string, more ...string) []string {
			return append([]string{"remodel", cmd, "--transform", "comments-table", "--store", dir}, more...)
		}
		if code, out, stderr := runCLI(t, args("backfill", "--export", full, "--no-sync", "--key-attributes", "PK")...); code != 0 {
			t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
		}
		// Another comment, created since: the remodeler's claims refuse
		// the first one's change keyed {PK,SK} (its target item is
		// claimed by its {PK} entry), not a new item's.
		c2 := comment(1, "b")
		c2["SK"], c2["commentId"] = sv("DOC#d1#CMT#c2"), sv("c2")
		ev := streamEvent(t, sim.Record{Kind: pipeline.Insert, Keys: pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#c2")}, New: c2,
			Seq: "900000000000000000001", Time: gateAsOf.Add(time.Hour), EventID: "k2"})
		if code, out, stderr := runCLI(t, args("apply", "--events", ev)...); code != 0 {
			t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
		}
		for _, checked := range []string{"PK", "PK,SK"} {
			code, out, stderr := runCLI(t, args("verify", "--export", full, "--key-attributes", checked)...)
			if code != 1 || !strings.Contains(out+stderr, "the table's ledger holds item PK=WS#w1") || !strings.Contains(out+stderr, "and the check reads the export's items by "+checked+": ") || strings.Contains(out, "AGREE") {
				t.Errorf("remodel verify --key-attributes %s of a target keyed both ways: exit %d\n%s%s", checked, code, out, stderr)
			}
		}
	})
}

// TestGateBounds: remodel verify --at after now is a usage error naming
// now (every TTL passed by then would leave target items compared by key
// alone, and a target item of the right key and wrong content agreed
// with); --max-print past its bound is one for both gates.
func TestGateBounds(t *testing.T) {
	// A target whose comment, with a TTL not passed, has the wrong body.
	at := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	comment := pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#c1"), "EntityType": sv("Comment"), "docId": sv("d1"), "commentId": sv("c1"),
		"body": sv("right"), "version": nv("1"), "ttl": nv(strconv.FormatInt(at.AddDate(10, 0, 0).Unix(), 10))}
	exp, dir := commentsTarget(t, exportgen.Export{ID: exportgen.ExportID(at, 14), Time: at, Files: 1}, slices.Values([]pipeline.Item{comment}))
	wrong := pipeline.Item{"PK": sv("DOC#d1"), "SK": sv("CMT#c1"), "EntityType": sv("Comment"), "body": sv("wrong"), "ttl": comment["ttl"]}
	commitTarget(t, dir, &driver.Tx{Puts: []driver.RowPut{{Ref: driver.RowRef{Projection: "comments-table", Partition: "DOC#d1", Sort: "CMT#c1"}, Attrs: wrong}}})
	code, out, stderr := runCLI(t, "remodel", "verify", "--export", exp, "--transform", "comments-table", "--store", dir, "--at", "2100-01-01T00:00:00Z")
	if code != 2 || !strings.Contains(stderr, "--at 2100-01-01T00:00:00Z is after now (") || !strings.Contains(stderr, "give a time no later than now") {
		t.Errorf("--at 2100: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "remodel", "verify", "--export", exp, "--transform", "comments-table", "--store", dir)
	if code != 1 || !strings.Contains(out, "  target item PK=DOC#d1 SK=CMT#c1: got ") {
		t.Errorf("the wrong body now: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{
		{"verify", "--export", dir, "--store", dir},
		{"remodel", "verify", "--export", dir, "--transform", "comments-table", "--store", dir},
	} {
		for _, n := range []string{"10001", "2000000000", "-1"} {
			code, out, stderr := runCLI(t, append(args, "--max-print", n)...)
			if code != 2 || !strings.Contains(stderr, "--max-print "+n+": must be between 0 (") || !strings.Contains(stderr, ") and 10000 (a gate holds the differences it names: memory grows with it)") {
				t.Errorf("%s --max-print %s: exit %d\n%s%s", args[0], n, code, out, stderr)
			}
		}
	}
}

// TestVerifyNamesMixedFiles: a store into which a backfill applied items of
// a data file read in part from an object that is not the exported one
// (its record under the ledger's mixed prefix) is NOT READY, naming the
// file and saying to backfill into a new store: no comparison can tell
// those items from the export's own.
func TestVerifyNamesMixedFiles(t *testing.T) {
	store := fixtureStore(t)
	const file = "AWSDynamoDB/01796032802314-fa5ad9a8/data/f1.json.gz"
	body := `{"file":"` + file + `","error":"its MD5 is not the manifest's"}`
	commitStore(t, store, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: engine.MixedPrefix + "job-1/0123456789abcdef", Body: []byte(body)}}})
	code, out, stderr := runCLI(t, "verify", "--export", fullExport, "--store", store)
	if code != 1 || strings.Contains(out, "AGREE") ||
		!strings.Contains(out, "NOT READY: a backfill read 1 data files in part from an object that is not the exported one: items of it are in the store under the export's tokens, which no check or rerun can tell from the export's own; backfill into a new store") ||
		!strings.Contains(out, "  data file "+file+" of backfill job job-1 was read in part from an object that is not the exported one (its MD5 is not the manifest's)\n") {
		t.Fatalf("a store with a mixed file: exit %d\n%s%s", code, out, stderr)
	}
}

// TestRemodelVerifyTTLHeavy: a target of comments nearly all past their
// TTL, of which the target's TTL has removed every other one: the
// partitions whose expired keys differ are far more than the budget of
// partitions read again (64 items a difference --max-print may name, at
// least 1,000), and the target agrees; a stray item with a passed TTL,
// which no source comment makes, is named.
func TestRemodelVerifyTTLHeavy(t *testing.T) {
	if testing.Short() {
		t.Skip("70,000 comments")
	}
	at := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	const n = 70_000
	comments := func(yield func(pipeline.Item) bool) {
		for i := range n {
			id := "c" + strconv.Itoa(i)
			if !yield(pipeline.Item{"PK": sv("WS#w1"), "SK": sv("DOC#d1#CMT#" + id), "EntityType": sv("Comment"), "docId": sv("d1"), "commentId": sv(id),
				"version": nv("1"), "ttl": nv(strconv.FormatInt(at.Add(-time.Hour).Unix(), 10))}) {
				return
			}
		}
	}
	exp, dir := commentsTarget(t, exportgen.Export{ID: exportgen.ExportID(at, 15), Time: at, Files: 2}, comments)
	// The target's TTL removes every other comment's target item.
	tx := &driver.Tx{}
	for i := 0; i < n; i += 2 {
		tx.Deletes = append(tx.Deletes, driver.RowDelete{Ref: driver.RowRef{Projection: "comments-table", Partition: "DOC#d1", Sort: "CMT#c" + strconv.Itoa(i)}})
	}
	commitTarget(t, dir, tx)
	verify := func() (int, string) {
		code, out, stderr := runCLI(t, "remodel", "verify", "--export", exp, "--transform", "comments-table", "--store", dir, "--at", at.Format(time.RFC3339), "--partitions", "64")
		return code, out + stderr
	}
	if code, out := verify(); code != 0 || !strings.HasSuffix(out, "AGREE: every target item equals the transform of its source item as of the export, with the 0 source items changed since as their ledger entries say\n") {
		t.Fatalf("the target's TTL removed every other item: exit %d\n%s", code, out)
	}
	stray := pipeline.Item{"PK": sv("DOC#d9"), "SK": sv("CMT#c9"), "EntityType": sv("Comment"), "ttl": nv("1")}
	commitTarget(t, dir, &driver.Tx{Puts: []driver.RowPut{{Ref: driver.RowRef{Projection: "comments-table", Partition: "DOC#d9", Sort: "CMT#c9"}, Attrs: stray}}})
	if code, out := verify(); code != 1 || !strings.Contains(out, "  target item PK=DOC#d9 SK=CMT#c9: not expected (no source item makes it, as of the export; its TTL has passed, but no source item's explains it): ") ||
		!strings.HasSuffix(out, "MISMATCH: 1 differences between the target and the transform of the export (the items changed since it taken as their state in the ledger says)\n") {
		t.Fatalf("a stray item with ttl 1: exit %d\n%s", code, out)
	}
}

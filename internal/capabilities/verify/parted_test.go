package verify_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/capabilities/verify/verifytest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

// groupRow writes row G/x of every T item, holding its val: two items,
// one row.
type groupRow struct{}

func (groupRow) Name() string          { return "group-row" }
func (groupRow) EntityTypes() []string { return []string{"T"} }
func (groupRow) Contribute(it pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{Rows: []projections.Row{{Partition: "G", Sort: "x", Attrs: pipeline.Item{"val": it["val"]}}}}, nil
}

// rowsOnly is a table of rows alone.
type rowsOnly struct{ rows []driver.StoredRow }

func (r rowsOnly) ScanAggregates(context.Context, func(driver.AggregateRef, map[string]decimal.Decimal) error) error {
	return nil
}

func (r rowsOnly) ScanRows(_ context.Context, fn func(driver.StoredRow) error) error {
	for _, x := range r.rows {
		if err := fn(x); err != nil {
			return err
		}
	}
	return nil
}

func (r rowsOnly) QueryRows(context.Context, string, string, int) ([]driver.StoredRow, error) {
	return nil, nil
}

func (r rowsOnly) ScanLedgers(context.Context, func(string, driver.LedgerEntry) error) error {
	return nil
}

func row(val string) []driver.StoredRow {
	return []driver.StoredRow{{Ref: driver.RowRef{Projection: "group-row", Partition: "G", Sort: "x"}, Attrs: pipeline.Item{"val": nv(val)}}}
}

func item(pk, val string) pipeline.Item {
	return pipeline.Item{"PK": sv(pk), "SK": sv("S"), "EntityType": sv("T"), "val": nv(val)}
}

// exportOf writes a full export of items (and an incremental one of
// changes on top, when there are any) and opens them.
func exportOf(ctx context.Context, t *testing.T, items []pipeline.Item, changes []exportgen.Change) (*export.Export, *export.Overlay) {
	t.Helper()
	root := t.TempDir()
	st := objstore.NewDir(root).WithoutSync()
	t0 := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	f, err := exportgen.WriteFull(ctx, st, exportgen.Export{ID: exportgen.ExportID(t0, 11), Time: t0, Files: 1}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	full, err := export.OpenExport(ctx, objstore.NewDir(root), f.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 {
		return full, nil
	}
	i, err := exportgen.WriteIncremental(ctx, st, exportgen.Export{ID: exportgen.ExportID(t1, 12), Time: t1, From: t0, Files: 1}, changes)
	if err != nil {
		t.Fatal(err)
	}
	inc, err := export.OpenExport(ctx, objstore.NewDir(root), i.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := export.LoadOverlay(ctx, full, []*export.Export{inc}, pipeline.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	return full, ov
}

// TestPartedHandoffGone: a hand-off object gone (the work bucket's rule
// expired it before a redrive) or replaced while its step's notes remain
// stops the steps after it, naming the object; the check never answers
// without it. Here the object held the table's row that no item makes,
// so a check without it would agree.
func TestPartedHandoffGone(t *testing.T) {
	ctx := context.Background()
	full, _ := exportOf(ctx, t, []pipeline.Item{{"PK": sv("U"), "SK": sv("S"), "EntityType": sv("Other")}}, nil)
	ghost := rowsOnly{row("9")}
	if res, err := verify.Check(ctx, full, nil, ghost, verify.Options{Dir: t.TempDir()}, groupRow{}); err != nil || res.Agree() {
		t.Fatalf("one process: %v %+v", err, res)
	}
	for _, tc := range []struct {
		name string
		harm func(work *objstore.Dir, key string) error
		want string
	}{
		{"gone", func(work *objstore.Dir, key string) error { return work.Delete(ctx, key) }, "is gone"},
		{"replaced", func(work *objstore.Dir, key string) error { return work.Put(ctx, key, nil) }, "were handed over: not the object its step wrote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := objstore.NewDir(t.TempDir())
			c := &verify.Parted{Full: full, Table: ghost, Work: work, Prefix: "verify", Options: verify.Options{Dir: t.TempDir()}, Projections: []projections.Projection{groupRow{}}, Parts: 1}
			p, err := c.Plan(ctx, "run")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Scan(ctx, p, 0); err != nil {
				t.Fatal(err)
			}
			for _, f := range p.Files {
				if _, err := c.File(ctx, p, f); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Join(ctx, p, 0); err != nil {
				t.Fatal(err)
			}
			var harmed int
			err = work.List(ctx, "verify/"+p.Job+"/parts/0000/scan-000000.", func(o objstore.Object) error {
				harmed++
				return tc.harm(work, o.Key)
			})
			if err != nil || harmed != 1 {
				t.Fatalf("harmed %d objects: %v", harmed, err)
			}
			if _, err := c.Compare(ctx, p, 0); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "scan-000000") {
				t.Errorf("compare: %v, want an error naming the scan step's object and %q", err, tc.want)
			}
			if _, err := c.Finish(ctx, p); err == nil || !strings.Contains(err.Error(), "step compare-0000 is not done") {
				t.Errorf("finish: %v, want it to refuse a check whose compare did not run", err)
			}
		})
	}
}

// TestPartedPlanHeld: a plan read back with fewer segments, parts or data
// files than the export and the table have is refused: a check of it
// would leave some of them unread.
func TestPartedPlanHeld(t *testing.T) {
	ctx := context.Background()
	full, _ := exportOf(ctx, t, []pipeline.Item{item("A", "1")}, nil)
	work := objstore.NewDir(t.TempDir())
	c := &verify.Parted{Full: full, Table: rowsOnly{}, Work: work, Prefix: "verify", Projections: []projections.Projection{groupRow{}}, Parts: 2}
	p, err := c.Plan(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(p *verify.Plan)
		want string
	}{
		{"no segment", func(p *verify.Plan) { p.Segments = 0 }, "0 scan segments"},
		{"no part", func(p *verify.Plan) { p.Parts = 0 }, "0 parts"},
		{"parts not a power of two", func(p *verify.Plan) { p.Parts = 3 }, "3 parts"},
		{"a file left out", func(p *verify.Plan) { p.Files = nil }, "names 0 data files, the export 1"},
	} {
		q := *p
		tc.edit(&q)
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		if err := work.Put(ctx, "verify/"+p.Job+"/plan.json", b); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ReadPlan(ctx, p.Job); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal naming %q", tc.name, err, tc.want)
		}
	}
}

// TestPartedOverlayOrder: where two items write one row (a projection's
// mistake the engine fails as permanent), the check in one process and
// the parted check take the same item's as the last: the incremental
// export's items after every data file's, whichever the table holds.
func TestPartedOverlayOrder(t *testing.T) {
	ctx := context.Background()
	keysA := pipeline.Item{"PK": sv("A"), "SK": sv("S")}
	full, ov := exportOf(ctx, t, []pipeline.Item{item("A", "1"), item("B", "2")},
		[]exportgen.Change{{Keys: keysA, Old: item("A", "1"), New: item("A", "3"), Time: time.Date(2026, 12, 1, 11, 59, 0, 0, time.UTC)}})
	for _, val := range []string{"2", "3"} {
		table := rowsOnly{row(val)}
		one, err := verify.Check(ctx, full, ov, table, verify.Options{Dir: t.TempDir()}, groupRow{})
		if err != nil {
			t.Fatal(err)
		}
		parted := verifytest.RunParted(ctx, t, full, ov, table, verify.Options{Dir: t.TempDir()}, 1, 1, groupRow{})
		if one.Agree() != parted.Agree() || !slices.Equal(one.Differences, parted.Differences) {
			t.Errorf("the table holding %s: one process %v %q, parted %v %q", val, one.Agree(), one.Differences, parted.Agree(), parted.Differences)
		}
	}
}

// countGroup counts T items by their "g" attribute.
type countGroup struct{}

func (countGroup) Name() string          { return "count-group" }
func (countGroup) EntityTypes() []string { return []string{"T"} }
func (countGroup) Contribute(it pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{Counters: []projections.Counter{{Key: attrS(it, "g"), Values: map[string]decimal.Decimal{"n": decimal.FromInt(1)}}}}, nil
}

func attrS(it pipeline.Item, name string) string {
	b, _ := json.Marshal(it[name])
	var v struct{ Value string }
	_ = json.Unmarshal(b, &v)
	return v.Value
}

// memTable is a table whose state a test changes between steps.
type memTable struct {
	ledgers map[string]driver.LedgerEntry
	aggs    map[string]int64 // count-group key -> n
}

func (m *memTable) ScanAggregates(_ context.Context, fn func(driver.AggregateRef, map[string]decimal.Decimal) error) error {
	for k, n := range m.aggs {
		if err := fn(driver.AggregateRef{Projection: "count-group", Key: k}, map[string]decimal.Decimal{"n": decimal.FromInt(n)}); err != nil {
			return err
		}
	}
	return nil
}
func (m *memTable) ScanRows(context.Context, func(driver.StoredRow) error) error { return nil }
func (m *memTable) QueryRows(context.Context, string, string, int) ([]driver.StoredRow, error) {
	return nil, nil
}
func (m *memTable) ScanLedgers(_ context.Context, fn func(string, driver.LedgerEntry) error) error {
	for k, e := range m.ledgers {
		if err := fn(k, e); err != nil {
			return err
		}
	}
	return nil
}

func gItem(pk, g string) pipeline.Item {
	return pipeline.Item{"PK": sv(pk), "SK": sv("S"), "EntityType": sv("T"), "g": sv(g)}
}

// ledgerNewer is the ledger entry of item pk changed at t to count in group g.
func ledgerNewer(t *testing.T, pk, g string, at time.Time) (string, driver.LedgerEntry) {
	keys := pipeline.Item{"PK": sv(pk), "SK": sv("S")}
	body, err := json.Marshal(map[string]any{
		"t": engine.Token{Micros: at.UnixMicro(), Precision: pipeline.Microsecond},
		"c": map[string]any{"a": []map[string]any{{"p": "count-group", "k": g, "v": map[string]decimal.Decimal{"n": decimal.FromInt(1)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.ItemKey(keys), driver.LedgerEntry{Rev: 1, Body: body}
}

// TestPartedLateAttempt: a scan step that runs again (an attempt that
// ends late beside its retry, an operator) after the join steps read its
// first attempt's notes, and before the compare steps, on a table changed
// since (X moved from G to H; the table lost the withdrawal from G: G=2,
// H=1, where G=1 is right). The first attempt's notes stand: every later
// step reads the table as that attempt read it, which agreed then, and
// the late attempt answers the first's. (Before, the compare mixed the two
// snapshots and agreed over the wrong table.)
func TestPartedLateAttempt(t *testing.T) {
	ctx := context.Background()
	full, _ := exportOf(ctx, t, []pipeline.Item{gItem("A", "G"), gItem("X", "G")}, nil)
	exportTime := verify.Watermark(full, nil)
	if exportTime.IsZero() {
		t.Fatal("no export time")
	}
	before := &memTable{ledgers: map[string]driver.LedgerEntry{}, aggs: map[string]int64{"G": 2}}
	k, e := ledgerNewer(t, "X", "H", exportTime.Add(time.Hour))
	after := &memTable{ledgers: map[string]driver.LedgerEntry{k: e}, aggs: map[string]int64{"G": 2, "H": 1}} // wrong: G should be 1

	one, err := verify.Check(ctx, full, nil, after, verify.Options{Dir: t.TempDir()}, countGroup{})
	if err != nil {
		t.Fatal(err)
	}
	if one.Agree() {
		t.Fatalf("one process agrees over the wrong table: %+v", one)
	}

	var table driver.Reader = before
	sw := &switchable{&table}
	c := &verify.Parted{Full: full, Table: sw, Work: objstore.NewDir(t.TempDir()), Prefix: "verify", Options: verify.Options{Dir: t.TempDir()}, Projections: []projections.Projection{countGroup{}}, Parts: 1}
	p, err := c.Plan(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ *verify.Step, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	first, err := c.Scan(ctx, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Files {
		must(c.File(ctx, p, f))
	}
	must(c.Join(ctx, p, 0))
	table = after // X changes; the table loses a delta
	late, err := c.Scan(ctx, p, 0)
	if err != nil || *late != *first {
		t.Errorf("the late attempt: %+v (%v), want the first's answer %+v", late, err, first)
	}
	must(c.Compare(ctx, p, 0))
	res, err := c.Finish(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	then, err := verify.Check(ctx, full, nil, before, verify.Options{Dir: t.TempDir()}, countGroup{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Agree() != then.Agree() || res.Changed != then.Changed || !slices.Equal(res.Differences, then.Differences) {
		t.Errorf("parted %+v, want what one process finds of the table as the first attempt read it: %+v", res, then)
	}
	// And a check of the table now, a new job, finds the lost delta.
	table = after
	now := verifytest.RunParted(ctx, t, full, nil, sw, verify.Options{Dir: t.TempDir()}, 1, 1, countGroup{})
	if now.Agree() || !slices.Equal(now.Differences, one.Differences) {
		t.Errorf("a new check of the table now: %+v, want %q", now, one.Differences)
	}
}

type switchable struct{ t *driver.Reader }

func (s *switchable) ScanAggregates(ctx context.Context, fn func(driver.AggregateRef, map[string]decimal.Decimal) error) error {
	return (*s.t).ScanAggregates(ctx, fn)
}
func (s *switchable) ScanRows(ctx context.Context, fn func(driver.StoredRow) error) error {
	return (*s.t).ScanRows(ctx, fn)
}
func (s *switchable) QueryRows(ctx context.Context, a, b string, n int) ([]driver.StoredRow, error) {
	return (*s.t).QueryRows(ctx, a, b, n)
}
func (s *switchable) ScanLedgers(ctx context.Context, fn func(string, driver.LedgerEntry) error) error {
	return (*s.t).ScanLedgers(ctx, fn)
}

// halves cuts memTable into n segments: with 2, segment 1 holds the
// aggregate Z alone.
type halves struct {
	m    *memTable
	i, n int
}

func (h halves) mine(k string) bool { return h.n == 1 || (k == "Z") == (h.i == 1) }
func (h halves) ScanAggregates(ctx context.Context, fn func(driver.AggregateRef, map[string]decimal.Decimal) error) error {
	return h.m.ScanAggregates(ctx, func(r driver.AggregateRef, v map[string]decimal.Decimal) error {
		if !h.mine(r.Key) {
			return nil
		}
		return fn(r, v)
	})
}
func (h halves) ScanRows(context.Context, func(driver.StoredRow) error) error { return nil }
func (h halves) QueryRows(context.Context, string, string, int) ([]driver.StoredRow, error) {
	return nil, nil
}
func (h halves) ScanLedgers(ctx context.Context, fn func(string, driver.LedgerEntry) error) error {
	if h.n == 1 || h.i == 0 {
		return h.m.ScanLedgers(ctx, fn)
	}
	return nil
}

// TestPartedPlanStands: the plan run again for the same job (a retry, an
// attempt ending late; the table's size changed in between, so another
// segment count) after the scan steps ran answers the first plan: every
// step is cut the same way, and no segment goes unread. (Before, the
// second plan's one segment left the ghost aggregate Z unread: AGREE.)
func TestPartedPlanStands(t *testing.T) {
	ctx := context.Background()
	full, _ := exportOf(ctx, t, []pipeline.Item{gItem("A", "G")}, nil)
	table := &memTable{ledgers: map[string]driver.LedgerEntry{}, aggs: map[string]int64{"G": 1, "Z": 1}} // Z: a ghost
	one, err := verify.Check(ctx, full, nil, table, verify.Options{Dir: t.TempDir()}, countGroup{})
	if err != nil || one.Agree() {
		t.Fatalf("one process: %v %+v", err, one)
	}
	c := &verify.Parted{Full: full, Table: table, Work: objstore.NewDir(t.TempDir()), Prefix: "verify", Options: verify.Options{Dir: t.TempDir()},
		Projections: []projections.Projection{countGroup{}}, Parts: 1, Segments: 2,
		Segment: func(i, n int) (driver.Reader, error) { return halves{table, i, n}, nil }}
	p, err := c.Plan(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Segments {
		if _, err := c.Scan(ctx, p, i); err != nil {
			t.Fatal(err)
		}
	}
	c.Segments = 1
	again, err := c.Plan(ctx, "run") // the same job
	if err != nil || again.Segments != 2 {
		t.Fatalf("the plan run again: %+v (%v), want the first, of 2 segments", again, err)
	}
	p, err = c.ReadPlan(ctx, p.Job)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Files {
		if _, err := c.File(ctx, p, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Join(ctx, p, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compare(ctx, p, 0); err != nil {
		t.Fatal(err)
	}
	res, err := c.Finish(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Agree() || !slices.Equal(res.Differences, one.Differences) {
		t.Errorf("parted: %+v, want one process's %q", res, one.Differences)
	}
}

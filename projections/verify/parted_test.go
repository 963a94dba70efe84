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
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/export"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/verify"
	"github.com/tributary/tributary/projections/verify/verifytest"
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

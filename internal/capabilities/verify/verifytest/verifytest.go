// Package verifytest runs a parted check (verify.Parted) in the Verify state
// machine's order in one process, for tests that hold its result against
// verify.Check's.
package verifytest

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// segment is segment i of n of a table read by a parallel scan: the items
// whose key hashes to it (as DynamoDB's Segment parameter cuts a table).
type segment struct {
	driver.Reader
	i, n int
}

func (s segment) mine(parts ...string) bool {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int(h.Sum32()%uint32(s.n)) == s.i
}

func (s segment) ScanAggregates(ctx context.Context, fn func(driver.AggregateRef, map[string]decimal.Decimal) error) error {
	return s.Reader.ScanAggregates(ctx, func(ref driver.AggregateRef, v map[string]decimal.Decimal) error {
		if !s.mine("a", ref.Projection, ref.Key, strconv.Itoa(ref.Shard)) {
			return nil
		}
		return fn(ref, v)
	})
}

func (s segment) ScanRows(ctx context.Context, fn func(driver.StoredRow) error) error {
	return s.Reader.ScanRows(ctx, func(r driver.StoredRow) error {
		if !s.mine("r", r.Ref.Projection, r.Ref.Partition, r.Ref.Sort) {
			return nil
		}
		return fn(r)
	})
}

func (s segment) ScanLedgers(ctx context.Context, fn func(string, driver.LedgerEntry) error) error {
	return s.Reader.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		if !s.mine("l", key) {
			return nil
		}
		return fn(key, e)
	})
}

// RunParted runs a parted check of table against full (and overlay) in the
// Verify state machine's order, every step twice (a retry hands over the
// same), in segments of the table and parts as given, and returns its
// result: for a test to hold it against Check's.
func RunParted(ctx context.Context, t testing.TB, full *export.Export, overlay *export.Overlay, table driver.Reader, o verify.Options, segments, parts int, ps ...projections.Projection) *verify.Result {
	t.Helper()
	c := &verify.Parted{
		Full: full, Overlay: overlay, Table: table, Work: objstore.NewDir(t.TempDir()), Prefix: "verify",
		Options: o, Projections: ps, Segments: segments, Parts: parts,
		Segment: func(i, n int) (driver.Reader, error) { return segment{table, i, n}, nil },
	}
	plan, err := c.Plan(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, plan, 0); err == nil {
		t.Fatal("a join step ran before the file steps")
	}
	twice := func(step func() (*verify.Step, error)) {
		t.Helper()
		for range 2 {
			if _, err := step(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range plan.Segments {
		twice(func() (*verify.Step, error) { return c.Scan(ctx, plan, i) })
	}
	// Read back, as each step does.
	if plan, err = c.ReadPlan(ctx, plan.Job); err != nil {
		t.Fatal(err)
	}
	for _, f := range slices.Backward(plan.Files) {
		twice(func() (*verify.Step, error) { return c.File(ctx, plan, f) })
	}
	for i := range plan.Parts {
		twice(func() (*verify.Step, error) { return c.Join(ctx, plan, i) })
	}
	for i := range plan.Parts {
		twice(func() (*verify.Step, error) { return c.Compare(ctx, plan, i) })
	}
	res, err := c.Finish(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, plan.Job); err != nil {
		t.Fatal(err)
	}
	return res
}

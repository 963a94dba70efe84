package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// oneByOne is a store that commits one transaction at a time: the
// embedded store with its group commit (driver.GroupCommitter) hidden by
// a field of the same name.
type oneByOne struct {
	*boltstore.Store
	CommitGroup struct{}
}

// grouped counts the groups the engine commits.
type grouped struct {
	*boltstore.Store
	groups atomic.Int64
}

func (s *grouped) CommitGroup(ctx context.Context, txs []*driver.Tx) error {
	s.groups.Add(1)
	return s.Store.CommitGroup(ctx, txs)
}

// TestBackfillGroupCommit: over a store that commits a batch's
// transactions as one group (the embedded store, synced once a group), a
// backfill of the payments-ledger mix writes exactly what it writes one
// transaction at a time — every ledger entry, aggregate and row — with
// the same transactions and write units counted, in a group or so per
// batch instead of a commit per transaction.
func TestBackfillGroupCommit(t *testing.T) {
	ctx := context.Background()
	full, set := paymentsExport(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), 6000, 3, 2)
	run := func(st driver.Table) engine.Stats {
		e, err := engine.Open(ctx, st, set, engine.Config{Logger: quiet(), Ignore: []string{"Audit"}})
		if err != nil {
			t.Fatal(err)
		}
		job, err := backfill.Open(full, nil, e, st, set, backfill.Options{Decode: pipeline.Options{Schema: exportgen.PaymentsSchema()}, BatchSize: 500})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := job.Run(ctx, 2)
		if err != nil || !sum.Complete || sum.Items != 6000 {
			t.Fatalf("%+v %v", sum, err)
		}
		return e.Stats()
	}
	if _, ok := driver.Table(oneByOne{}).(driver.GroupCommitter); ok {
		t.Fatal("oneByOne commits groups")
	}
	open := func() *boltstore.Store {
		st, err := boltstore.Open(t.TempDir()+"/aggregates.db", boltstore.WithoutSync())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	single, group := open(), &grouped{Store: open()}
	a, b := run(oneByOne{Store: single}), run(group)
	if a.Items != b.Items || a.Transactions != b.Transactions || a.WriteUnits != b.WriteUnits {
		t.Errorf("one by one: %d items, %d transactions, %.1f write units; grouped: %d, %d, %.1f",
			a.Items, a.Transactions, a.WriteUnits, b.Items, b.Transactions, b.WriteUnits)
	}
	if n := group.groups.Load(); n == 0 || n > 6000/500+4 {
		t.Errorf("%d groups committed for %d transactions in 12 batches", n, b.Transactions)
	}
	want, got := contents(t, single), contents(t, group.Store)
	if len(want) < 6000 || len(got) != len(want) {
		t.Fatalf("%d items in the grouped store, %d in the other", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: grouped %q, one by one %q", k, got[k], v)
		}
	}
}

// contents renders every ledger entry (but the markers, whose times
// differ), aggregate and row st holds.
func contents(t *testing.T, st *boltstore.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	err := st.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		if key == backfill.MarkerKey || strings.HasPrefix(key, "#tributary/projection-set") {
			return nil
		}
		out["ledger "+key] = fmt.Sprintf("%d %s", e.Rev, e.Body)
		return nil
	})
	if err == nil {
		err = st.ScanAggregates(ctx, func(ref driver.AggregateRef, vs map[string]decimal.Decimal) error {
			b, err := json.Marshal(vs)
			out[fmt.Sprintf("aggregate %+v", ref)] = string(b)
			return err
		})
	}
	if err == nil {
		err = st.ScanRows(ctx, func(r driver.StoredRow) error {
			out[fmt.Sprintf("row %+v", r.Ref)] = r.Owner + " " + string(pipeline.AppendItem(nil, r.Attrs))
			return nil
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

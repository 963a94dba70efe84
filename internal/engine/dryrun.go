package engine

import (
	"context"
	"maps"
	"sync"

	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// DryRun wraps a table so that nothing is written to it: ledger entries are
// read from it, commits are checked against it and kept in memory (later
// ledger reads see them), and aggregates and rows are not touched: reading
// them reads the table's. An engine over a DryRun decides and counts exactly
// as it would over the table — items written, changes already applied —
// without changing it.
type DryRun struct {
	store driver.Table

	mu           sync.Mutex
	ledgers      map[string]driver.LedgerEntry
	txs, actions int64
}

var (
	_ driver.Table              = (*DryRun)(nil)
	_ driver.WriteUnitEstimator = (*DryRun)(nil)
	_ driver.NameReserver       = (*DryRun)(nil)
	_ driver.ActionCounter      = (*DryRun)(nil)
)

// NewDryRun wraps a table.
func NewDryRun(store driver.Table) *DryRun {
	return &DryRun{store: store, ledgers: map[string]driver.LedgerEntry{}}
}

// ReadLedgers reads the entries the dry run wrote, and the store's for the
// rest.
func (d *DryRun) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	d.mu.Lock()
	var rest []string
	out := make(map[string]driver.LedgerEntry, len(keys))
	for _, k := range keys {
		if e, ok := d.ledgers[k]; ok {
			out[k] = e
		} else {
			rest = append(rest, k)
		}
	}
	d.mu.Unlock()
	if len(rest) > 0 {
		got, err := d.store.ReadLedgers(ctx, rest)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, got)
	}
	return out, nil
}

// Commit checks tx's ledger conditions against what ReadLedgers would
// return and, if they hold, keeps its ledger entries.
func (d *DryRun) Commit(ctx context.Context, tx *driver.Tx) error {
	if tx == nil || tx.Len() == 0 {
		return nil
	}
	keys := make([]string, len(tx.Ledgers))
	for i, l := range tx.Ledgers {
		keys[i] = l.Key
	}
	cur, err := d.ReadLedgers(ctx, keys)
	if err != nil {
		return err
	}
	conflicts := map[string]driver.LedgerEntry{}
	for _, l := range tx.Ledgers {
		if cur[l.Key].Rev != l.ExpectRev {
			conflicts[l.Key] = cur[l.Key]
		}
	}
	if len(conflicts) > 0 {
		return &driver.ConflictError{Current: conflicts}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range tx.Ledgers {
		d.ledgers[l.Key] = driver.LedgerEntry{Rev: l.ExpectRev + 1, Body: l.Body}
	}
	d.txs++
	d.actions += int64(tx.Len())
	return nil
}

// WriteUnits passes on the wrapped store's estimate (WriteUnitEstimator),
// or 0 when it makes none: what the commits would cost if they were
// written.
func (d *DryRun) WriteUnits(tx *driver.Tx) float64 {
	return driver.WriteUnitsOf(d.store, tx)
}

// Counts returns how many transactions, and write actions in them, would
// have been committed.
func (d *DryRun) Counts() (txs, actions int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.txs, d.actions
}

// ScanAggregates scans the wrapped table's aggregates.
func (d *DryRun) ScanAggregates(ctx context.Context, fn func(ref driver.AggregateRef, values map[string]decimal.Decimal) error) error {
	return d.store.ScanAggregates(ctx, fn)
}

// ScanRows scans the wrapped table's rows.
func (d *DryRun) ScanRows(ctx context.Context, fn func(row driver.StoredRow) error) error {
	return d.store.ScanRows(ctx, fn)
}

// ScanLedgers scans the wrapped table's ledger entries.
func (d *DryRun) ScanLedgers(ctx context.Context, fn func(key string, entry driver.LedgerEntry) error) error {
	return d.store.ScanLedgers(ctx, fn)
}

// QueryRows queries the wrapped table's rows.
func (d *DryRun) QueryRows(ctx context.Context, projection, partition string, limit int) ([]driver.StoredRow, error) {
	return d.store.QueryRows(ctx, projection, partition, limit)
}

// CheckAggregate passes the wrapped table's key limits on (KeyLimiter).
func (d *DryRun) CheckAggregate(ref driver.AggregateRef) error {
	if k, ok := d.store.(driver.KeyLimiter); ok {
		return k.CheckAggregate(ref)
	}
	return nil
}

// CheckRow passes the wrapped table's key limits on (KeyLimiter).
func (d *DryRun) CheckRow(ref driver.RowRef) error {
	if k, ok := d.store.(driver.KeyLimiter); ok {
		return k.CheckRow(ref)
	}
	return nil
}

// ReservesName passes on the wrapped table's reserved names
// (driver.Reserved).
func (d *DryRun) ReservesName(name string) bool { return driver.Reserved(d.store, name) }

// PutActions passes on the wrapped table's count (driver.Actions).
func (d *DryRun) PutActions(p driver.RowPut) int {
	return driver.Actions(d.store, &driver.Tx{Puts: []driver.RowPut{p}})
}

// DeleteActions passes on the wrapped table's count (driver.Actions).
func (d *DryRun) DeleteActions(r driver.RowDelete) int {
	return driver.Actions(d.store, &driver.Tx{Deletes: []driver.RowDelete{r}})
}

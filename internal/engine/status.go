package engine

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/projections/driver"
)

// Applied is what a store's ledger holds from one source of changes.
type Applied struct {
	// Source is "stream <id>" for a DynamoDB stream (id: a hash of its
	// ARN, as tokens carry it), "export" for items as an export held them,
	// and "kinesis" for changes with no stream sequence (a Kinesis stream,
	// a replay, a redrive of one).
	Source string `json:"source"`
	// Newest is the creation time of the newest change applied from it.
	Newest time.Time `json:"newest"`
	// Items is how many items' ledger entries are from it.
	Items int64 `json:"items"`
}

// LedgerStatus is what a store's ledger says was applied to it.
type LedgerStatus struct {
	// Sources are the newest change applied per source, newest first.
	Sources []Applied `json:"sources"`
	// Items is the number of items' ledger entries.
	Items int64 `json:"items"`
	// Unfolded are the ledger keys of a backfill's partials not folded
	// into the aggregates yet.
	Unfolded []string `json:"unfolded,omitempty"`
}

// ReadLedgerStatus scans a store's ledger once (every entry: on DynamoDB a
// Scan of the ledger's items, billed as such) and says the newest change
// applied from each source, exactly: the newest order token of each item's
// entry is the change that entry was last written for.
func ReadLedgerStatus(ctx context.Context, r driver.Reader) (*LedgerStatus, error) {
	st := &LedgerStatus{}
	bySource := map[string]*Applied{}
	err := r.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		switch {
		case strings.HasPrefix(key, PartialPrefix):
			open, err := unfolded(key, e)
			if open {
				st.Unfolded = append(st.Unfolded, key)
			}
			return err
		case strings.HasPrefix(key, "#"):
			return nil // a marker
		}
		l, err := decodeLedger(key, e)
		if err != nil {
			return err
		}
		st.Items++
		src := "kinesis"
		switch {
		case l.Tok.Export:
			src = "export"
		case l.Tok.Stream != "":
			src = "stream " + l.Tok.Stream
		}
		a := bySource[src]
		if a == nil {
			a = &Applied{Source: src}
			bySource[src] = a
		}
		a.Items++
		if t := time.UnixMicro(l.Tok.Micros).UTC(); l.Tok.Micros != 0 && t.After(a.Newest) {
			a.Newest = t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range bySource {
		st.Sources = append(st.Sources, *a)
	}
	slices.SortFunc(st.Sources, func(a, b Applied) int {
		if c := b.Newest.Compare(a.Newest); c != 0 {
			return c
		}
		return strings.Compare(a.Source, b.Source)
	})
	slices.Sort(st.Unfolded)
	return st, nil
}

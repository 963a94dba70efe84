package projections

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
)

// An AsOfCheck compares a table with a recomputation from an export while
// the table goes on changing: each item's ledger entry says whether its
// state in the table is newer than the export's point in time. The
// expected view is the recomputation from the export's items whose state
// is not newer, plus what the ledger says every newer item contributes
// (items changed, created or removed since). A table that equals it holds
// exactly the export's contributions for the items unchanged since, and
// for the others exactly what their ledger entries say, with no delta
// lost or added twice. Memory holds the view, not the items.
//
// Use it in this order: AddLedgers, AddExportItems for every item of the
// export, then Diff.
type AsOfCheck struct {
	asOf Token
	add  func(pipeline.Item) (string, error)
	want *View
	// wantRows holds the rows of newer items, by hash of their attributes
	// (the ledger keeps no more of a row).
	wantRows map[driver.RowRef]string
	newer    map[string]bool // keys of items whose state is newer, seen in AddLedgers
	// Changed is how many items' state is newer than the export's (told
	// apart), Unfolded the partials a backfill has not folded yet, Items
	// how many export items the check read.
	Changed  int64
	Unfolded []string
	Items    int64
	// Refused lists the export items a projection refuses, one a line
	// naming the projection, the item and why: they add nothing to the
	// expected view (the engine fails every record a projection refuses as
	// permanent, and a backfill lists them as failed), and Diff counts
	// each as a difference.
	Refused []string
}

// NewAsOfCheck returns a check of a table built by ps against an export
// as of asOf, whose items keep their entity type in typeAttribute.
func NewAsOfCheck(asOf time.Time, typeAttribute string, ps ...Projection) *AsOfCheck {
	v := NewView()
	return &AsOfCheck{
		asOf: AsOfToken(asOf),
		add:  v.adder(typeAttribute, ps...), want: v, wantRows: map[driver.RowRef]string{}, newer: map[string]bool{},
	}
}

// newerThan reports whether a ledger entry's state is newer than the
// check's point in time: by time alone (the check knows no item's version
// in the ledger scan), as the engine compares an export's state with it.
func (a *AsOfCheck) newerThan(tok Token) bool { return tok.Newer(a.asOf) }

// AddLedgers scans the table's ledger entries: the contributions of every
// item whose state is newer than the export go into the expected view,
// and a backfill's partials not folded yet are listed (the aggregates lack
// their sums until they are).
func (a *AsOfCheck) AddLedgers(ctx context.Context, r driver.Reader) error {
	return r.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		switch {
		case strings.HasPrefix(key, PartialPrefix):
			var p Partial
			p.key = key
			if err := p.load(e); err != nil {
				return err
			}
			if len(p.sums) > 0 {
				a.Unfolded = append(a.Unfolded, key)
			}
			return nil
		case strings.HasPrefix(key, "#"):
			return nil // a marker
		}
		l, err := decodeLedger(key, e)
		if err != nil {
			return err
		}
		if !a.newerThan(l.Tok) {
			return nil
		}
		a.Changed++
		a.newer[key] = true
		for _, c := range l.C.Aggs {
			a.want.add(AggregateKey{c.Ref.Projection, c.Ref.Key}, c.Values)
		}
		for _, r := range l.C.Rows {
			a.wantRows[r.Ref] = r.Hash
		}
		return nil
	})
}

// AddExportItems adds the export items whose state in the table is not
// newer than the export's to the expected view. Their keys are read from
// keyAttributes. An item a projection refuses is listed in Refused, and
// the others go on.
func (a *AsOfCheck) AddExportItems(items []pipeline.Item, keyAttributes []string) error {
	for _, it := range items {
		a.Items++
		keys := make(pipeline.Item, len(keyAttributes))
		for _, k := range keyAttributes {
			if v, ok := it[k]; ok {
				keys[k] = v
			}
		}
		if a.newer[ledgerKey(keys)] {
			continue
		}
		if p, err := a.add(it); err != nil {
			if ie, ok := errors.AsType[*ItemError](err); ok && ie.Projection == p {
				err = ie.Err
				if ie.Attr != "" {
					err = fmt.Errorf("%s: %w", ie.Attr, ie.Err)
				}
			}
			a.Refused = append(a.Refused, fmt.Sprintf("%s export item %s: refused: %v (its record fails as permanent, so it adds to no projection)", p, pipeline.KeyString(keys), err))
		}
	}
	return nil
}

// Diff lists how the table differs from the expected view, one line each,
// sorted, as projections.Diff does; rows of items changed since the export
// are compared by the hash the ledger keeps of them.
func (a *AsOfCheck) Diff(ctx context.Context, r driver.Reader) ([]string, error) {
	got, err := ReadView(ctx, r)
	if err != nil {
		return nil, err
	}
	a.want.Prune()
	var out []string
	compared := map[driver.RowRef]pipeline.Item{} // rows compared by attributes
	for ref, attrs := range got.Rows {
		if _, fromExport := a.want.Rows[ref]; !fromExport {
			if h, fromLedger := a.wantRows[ref]; fromLedger {
				if hashItem(attrs) != h {
					out = append(out, fmt.Sprintf("%s row %s/%s: not what the ledger entry of its item, changed since the export, says", ref.Projection, ref.Partition, ref.Sort))
				}
				continue
			}
		}
		compared[ref] = attrs
	}
	for ref := range a.wantRows {
		if _, fromExport := a.want.Rows[ref]; fromExport {
			continue
		}
		if _, ok := got.Rows[ref]; !ok {
			out = append(out, fmt.Sprintf("%s row %s/%s: missing (its item changed since the export)", ref.Projection, ref.Partition, ref.Sort))
		}
	}
	out = append(out, Diff(&View{Aggregates: got.Aggregates, Rows: compared}, a.want)...)
	out = append(out, a.Refused...)
	sort.Strings(out)
	return out, nil
}

// Expected counts the expected view's aggregates and rows (after Diff).
func (a *AsOfCheck) Expected() (aggregates, rows int) {
	rows = len(a.want.Rows)
	for ref := range a.wantRows {
		if _, ok := a.want.Rows[ref]; !ok {
			rows++
		}
	}
	return len(a.want.Aggregates), rows
}

package projections

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
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
//
// An item whose state in the ledger is in the export's own clock tick
// (InTick: its second, for a DynamoDB Streams record) is held back until
// its export item is read: if its contributions are the same either way,
// it is judged against the export's; otherwise as JudgeTick says, by its
// version, and where the version cannot tell it is named in Unjudged. Memory holds those items'
// ledger entries too: the changes of one second.
type AsOfCheck struct {
	asOf     Token
	asOfTime time.Time
	add      func(pipeline.Item) (string, error)
	want     *View
	// VersionAttribute names the export items' version attribute
	// (default pipeline.DefaultVersionAttribute), which orders an item's
	// state in the export's own second.
	VersionAttribute string
	// inTick holds the ledger entries of the items whose state is in the
	// export's own clock tick, until their export items are read.
	inTick map[string]*ledger
	// scratch and addScratch recompute one item's contributions, names
	// the projections checked.
	scratch    *View
	addScratch func(pipeline.Item) (string, error)
	names      map[string]bool
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
	// Unjudged lists the items the check could not judge (JudgeTick),
	// one a line naming the item and why; set by Diff. They are expected
	// as their ledger entries say, so that the rest is judged: a check
	// with any cannot agree.
	Unjudged []string
}

// NewAsOfCheck returns a check of a table built by ps against an export
// as of asOf, whose items keep their entity type in typeAttribute.
func NewAsOfCheck(asOf time.Time, typeAttribute string, ps ...Projection) *AsOfCheck {
	v, scratch := NewView(), NewView()
	names := make(map[string]bool, len(ps))
	for _, p := range ps {
		names[p.Name()] = true
	}
	return &AsOfCheck{
		asOf: AsOfToken(asOf), asOfTime: asOf,
		add: v.adder(typeAttribute, ps...), want: v, wantRows: map[driver.RowRef]string{}, newer: map[string]bool{},
		inTick: map[string]*ledger{}, scratch: scratch, addScratch: scratch.adder(typeAttribute, ps...), names: names,
	}
}

// newerThan reports whether a ledger entry's state is newer than the
// check's point in time by time, as the engine compares an export's
// state with it; one in the export's own clock tick is not asked.
func (a *AsOfCheck) newerThan(tok Token) bool { return tok.Newer(a.asOf) }

// expectLedger adds an item's contributions as its ledger entry says.
func (a *AsOfCheck) expectLedger(key string, l *ledger) {
	a.newer[key] = true
	for _, c := range l.C.Aggs {
		a.want.add(AggregateKey{c.Ref.Projection, c.Ref.Key}, c.Values)
	}
	for _, r := range l.C.Rows {
		a.wantRows[r.Ref] = r.Hash
	}
}

// differing returns the checked projections in which an export item (nil:
// none) and a ledger entry's contributions differ, sorted; none: the
// item is expected the same either way. An item a projection refuses
// differs in every projection.
func (a *AsOfCheck) differing(it pipeline.Item, l *ledger) []string {
	clear(a.scratch.Aggregates)
	clear(a.scratch.Rows)
	if it != nil {
		if _, err := a.addScratch(it); err != nil {
			return slices.Sorted(maps.Keys(a.names))
		}
	}
	a.scratch.Prune()
	led := NewView()
	ledRows := map[driver.RowRef]string{}
	for _, c := range l.C.Aggs {
		if a.names[c.Ref.Projection] {
			led.add(AggregateKey{c.Ref.Projection, c.Ref.Key}, c.Values)
		}
	}
	for _, r := range l.C.Rows {
		if a.names[r.Ref.Projection] {
			ledRows[r.Ref] = r.Hash
		}
	}
	led.Prune()
	diff := map[string]bool{}
	for k, vs := range a.scratch.Aggregates {
		if !sameValues(vs, led.Aggregates[k]) {
			diff[k.Projection] = true
		}
	}
	for k := range led.Aggregates {
		if _, ok := a.scratch.Aggregates[k]; !ok {
			diff[k.Projection] = true
		}
	}
	for ref, attrs := range a.scratch.Rows {
		if h, ok := ledRows[ref]; !ok || h != hashItem(attrs) {
			diff[ref.Projection] = true
		}
	}
	for ref := range ledRows {
		if _, ok := a.scratch.Rows[ref]; !ok {
			diff[ref.Projection] = true
		}
	}
	return slices.Sorted(maps.Keys(diff))
}

func sameValues(a, b map[string]decimal.Decimal) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.Cmp(y) != 0 {
			return false
		}
	}
	return true
}

// judgeInTick judges an item whose ledger state is in the export's own
// clock tick against its export item (nil: the export lacks it), and
// reports whether the export item is to be added to the expected view.
func (a *AsOfCheck) judgeInTick(key string, l *ledger, it pipeline.Item) bool {
	differ := a.differing(it, l)
	if len(differ) == 0 {
		return it != nil // the same either way: judged against the export
	}
	x := ExportState{}
	if it != nil {
		x = ExportStateOf(it, a.VersionAttribute)
	}
	since, why := JudgeTick(l.Tok, l.Removed, x)
	if since {
		a.Changed++
	} else {
		a.Unjudged = append(a.Unjudged, fmt.Sprintf("item %s: %s", describeOwner(key), why))
	}
	a.expectLedger(key, l)
	return false
}

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
		if InTick(l.Tok, a.asOfTime) {
			a.inTick[key] = l
			return nil
		}
		if !a.newerThan(l.Tok) {
			return nil
		}
		a.Changed++
		a.expectLedger(key, l)
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
		key := ledgerKey(keys)
		if a.newer[key] {
			continue
		}
		if l, ok := a.inTick[key]; ok {
			delete(a.inTick, key)
			if !a.judgeInTick(key, l, it) {
				continue
			}
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
	// The items in the export's own clock tick that the export lacks.
	for key, l := range a.inTick {
		a.judgeInTick(key, l, nil)
	}
	clear(a.inTick)
	sort.Strings(a.Unjudged)
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

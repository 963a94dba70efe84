package projections

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// View is the logical content of an aggregate table: aggregates summed over
// their write shards, and rows. Values that sum to zero are left out, and so
// are aggregates whose values are all zero: an aggregate that no item
// contributes to any more reads as absent.
type View struct {
	Aggregates map[AggregateKey]map[string]decimal.Decimal
	Rows       map[driver.RowRef]pipeline.Item
}

// AggregateKey names a logical aggregate.
type AggregateKey struct {
	Projection string
	Key        string
}

// NewView returns an empty view.
func NewView() *View {
	return &View{Aggregates: map[AggregateKey]map[string]decimal.Decimal{}, Rows: map[driver.RowRef]pipeline.Item{}}
}

// Add adds values to the aggregate k's values of the same names. v is one
// NewView made (or one whose maps are made).
func (v *View) Add(k AggregateKey, values map[string]decimal.Decimal) {
	cur := v.Aggregates[k]
	if cur == nil {
		cur = map[string]decimal.Decimal{}
		v.Aggregates[k] = cur
	}
	for name, x := range values {
		cur[name] = cur[name].Add(x)
	}
}

// Prune drops values that sum to zero and aggregates left with none: a view
// built with Adder reads as ReadView and Recompute give it.
func (v *View) Prune() {
	for k, vs := range v.Aggregates {
		for name, x := range vs {
			if x.IsZero() {
				delete(vs, name)
			}
		}
		if len(vs) == 0 {
			delete(v.Aggregates, k)
		}
	}
}

// ReadView reads a store's logical view. Its values are in DynamoDB's
// normal form (decimal.Decimal.Normal), also where they sum write shards, so
// that every store shows the same, whatever the history of its sums.
func ReadView(ctx context.Context, r driver.Reader) (*View, error) {
	v := NewView()
	err := r.ScanAggregates(ctx, func(ref driver.AggregateRef, values map[string]decimal.Decimal) error {
		v.Add(AggregateKey{ref.Projection, ref.Key}, values)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading aggregates: %w", err)
	}
	err = r.ScanRows(ctx, func(row driver.StoredRow) error {
		v.Rows[row.Ref] = row.Attrs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading rows: %w", err)
	}
	v.Prune()
	for _, vs := range v.Aggregates {
		for name, x := range vs {
			vs[name] = x.Normal()
		}
	}
	return v, nil
}

// Recompute builds the view from scratch from a table's current items: what
// the aggregate table must hold once every change has been applied. It is the
// reference the engine is checked against.
func Recompute(items []pipeline.Item, typeAttribute string, ps ...Projection) (*View, error) {
	v := NewView()
	add := v.Adder(typeAttribute, ps...)
	for _, item := range items {
		if err := add(item); err != nil {
			return nil, err
		}
	}
	v.Prune()
	return v, nil
}

// Adder returns a function that adds one item's contributions to v, under
// every projection of ps that reads the item's entity type (typeAttribute;
// default EntityType): its counters' values add up, its rows are set. Items
// added one by one make the view Recompute makes of them all; call Prune at
// the end. An item a projection refuses adds nothing to any projection (as
// the engine applies nothing of a record it fails), and the error is a
// *RefusedError that names the projection.
func (v *View) Adder(typeAttribute string, ps ...Projection) func(item pipeline.Item) error {
	add := v.adder(typeAttribute, ps...)
	return func(item pipeline.Item) error {
		p, err := add(item)
		if err == nil {
			return nil
		}
		return &RefusedError{Projection: p, Err: err}
	}
}

// A RefusedError is an item a projection refused while a view was
// recomputed (Recompute, View.Adder): Err is what its Contribute returned
// (a *pipeline.PanicError if it panicked).
type RefusedError struct {
	Projection string
	Err        error
}

// Error returns e.g. "recompute: projection order-totals: <Err>", or
// "recompute: <Err>" when Err is an *ItemError that names the projection
// already.
func (e *RefusedError) Error() string {
	if ie, ok := errors.AsType[*ItemError](e.Err); ok && ie.Projection == e.Projection {
		return "recompute: " + e.Err.Error()
	}
	return "recompute: projection " + e.Projection + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *RefusedError) Unwrap() error { return e.Err }

// adder is Adder's function, whose error comes with the name of the
// projection that refused the item, unwrapped.
func (v *View) adder(typeAttribute string, ps ...Projection) func(item pipeline.Item) (string, error) {
	if typeAttribute == "" {
		typeAttribute = pipeline.DefaultTypeAttribute
	}
	byType := map[string][]Projection{}
	var others []Projection // othersReaders: for every other type
	for _, p := range ps {
		for _, t := range p.EntityTypes() {
			byType[t] = append(byType[t], p)
		}
		if o, ok := p.(othersReader); ok && o.ReadsOtherTypes() {
			others = append(others, p)
		}
	}
	var cons []Contribution
	return func(item pipeline.Item) (string, error) {
		var t string
		if sv, ok := item[typeAttribute].(*types.AttributeValueMemberS); ok {
			t = sv.Value
		}
		read, ok := byType[t]
		if !ok {
			read = others
		}
		cons = cons[:0]
		for _, p := range read {
			con, err := contribute(p, item)
			if err != nil {
				return p.Name(), err
			}
			cons = append(cons, con)
		}
		for i, p := range read {
			for _, c := range cons[i].Counters {
				v.Add(AggregateKey{p.Name(), c.Key}, c.Values)
			}
			for _, r := range cons[i].Rows {
				v.Rows[driver.RowRef{Projection: p.Name(), Partition: r.Partition, Sort: r.Sort}] = r.Attrs
			}
		}
		return "", nil
	}
}

// othersReader is a projection that may read items of entity types it
// does not list, and items without one: a remodel's, which copies the
// types its transform does not name. A view hands it those items, as the
// engine does.
type othersReader interface {
	ReadsOtherTypes() bool
}

// contribute calls a projection, turning a panic into an error.
func contribute(p Projection, img pipeline.Item) (c Contribution, err error) {
	defer pipeline.Recover(&err)
	return p.Contribute(img)
}

// Diff lists the differences between two views, "want" being the reference,
// one line each, sorted. No lines: the views agree.
func Diff(got, want *View) []string {
	encode := func(rows map[driver.RowRef]pipeline.Item) map[driver.RowRef]string {
		out := make(map[driver.RowRef]string, len(rows))
		for r, attrs := range rows {
			out[r] = string(pipeline.AppendItem(nil, attrs))
		}
		return out
	}
	var out []string
	diffEncoded(got.Aggregates, want.Aggregates, encode(got.Rows), encode(want.Rows), func(line string) { out = append(out, line) })
	sort.Strings(out)
	return out
}

// diffEncoded names, to line, each difference between two views' aggregates
// and rows (encoded as pipeline.AppendItem does), "want" being the
// reference, in no order.
func diffEncoded(gotAggs, wantAggs map[AggregateKey]map[string]decimal.Decimal, gotRows, wantRows map[driver.RowRef]string, line func(string)) {
	for k, g := range gotAggs {
		w := wantAggs[k]
		for n := range g {
			if g[n].Cmp(w[n]) != 0 {
				line(fmt.Sprintf("%s %s %s: got %s, want %s", k.Projection, k.Key, n, g[n], w[n]))
			}
		}
		for n := range w {
			if _, ok := g[n]; !ok && w[n].Sign() != 0 {
				line(fmt.Sprintf("%s %s %s: got %s, want %s", k.Projection, k.Key, n, g[n], w[n]))
			}
		}
	}
	for k, w := range wantAggs {
		if _, ok := gotAggs[k]; ok {
			continue
		}
		for n := range w {
			if w[n].Sign() != 0 {
				line(fmt.Sprintf("%s %s %s: got %s, want %s", k.Projection, k.Key, n, decimal.Decimal{}, w[n]))
			}
		}
	}
	for r, g := range gotRows {
		w, ok := wantRows[r]
		switch {
		case !ok:
			line(fmt.Sprintf("%s row %s/%s: unexpected", r.Projection, r.Partition, r.Sort))
		case g != w:
			line(fmt.Sprintf("%s row %s/%s: got %s, want %s", r.Projection, r.Partition, r.Sort, g, w))
		}
	}
	for r := range wantRows {
		if _, ok := gotRows[r]; !ok {
			line(fmt.Sprintf("%s row %s/%s: missing", r.Projection, r.Partition, r.Sort))
		}
	}
}

// AppendJSONLines appends the view as JSON lines, the form `tributary
// aggregates --json` prints, sorted by projection and key:
//
//	{"projection":"order-totals","key":"ORDERS#PAID#DAY#2026-11-30","values":{"orders":"3","revenue":"120.50"}}
//	{"projection":"season-leaderboard","key":"SEASON#2026-Q2","sort":"RATING#0000001842#PLAYER#u8231","values":{...}}
//
// Every value prints as a JSON string of its exact decimal, as DynamoDB
// JSON writes numbers: a reader that parses JSON numbers as floats (jq,
// JavaScript, most JSON libraries) would round 9007199254740993 to …992 and
// a 38-digit sum to 16 digits. Row values print in DynamoDB JSON. Strings
// are JSON-escaped, and so is what a terminal would interpret (DEL, C1
// controls, bidirectional overrides: quote.AppendJSON), since the lines are
// printed.
func (v *View) AppendJSONLines(buf []byte) []byte {
	keys := make([]AggregateKey, 0, len(v.Aggregates))
	for k := range v.Aggregates {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Projection != keys[j].Projection {
			return keys[i].Projection < keys[j].Projection
		}
		return keys[i].Key < keys[j].Key
	})
	for _, k := range keys {
		buf = append(buf, `{"projection":`...)
		buf = quote.AppendJSON(buf, k.Projection)
		buf = append(buf, `,"key":`...)
		buf = quote.AppendJSON(buf, k.Key)
		buf = append(buf, `,"values":{`...)
		vs := v.Aggregates[k]
		names := make([]string, 0, len(vs))
		for n := range vs {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = quote.AppendJSON(buf, n)
			buf = append(buf, ':')
			buf = quote.AppendJSON(buf, vs[n].String())
		}
		buf = append(buf, "}}\n"...)
	}
	rows := make([]driver.RowRef, 0, len(v.Rows))
	for r := range v.Rows {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Compare(rows[j]) < 0 })
	for _, r := range rows {
		buf = append(buf, `{"projection":`...)
		buf = quote.AppendJSON(buf, r.Projection)
		buf = append(buf, `,"key":`...)
		buf = quote.AppendJSON(buf, r.Partition)
		buf = append(buf, `,"sort":`...)
		buf = quote.AppendJSON(buf, r.Sort)
		buf = append(buf, `,"values":`...)
		buf = append(buf, quote.PrintableJSON(pipeline.AppendItem(nil, v.Rows[r]))...)
		buf = append(buf, "}\n"...)
	}
	return buf
}

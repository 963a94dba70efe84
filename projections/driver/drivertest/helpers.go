package drivertest

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

func aggRef(projection, key string, shard int) driver.AggregateRef {
	return driver.AggregateRef{Projection: projection, Key: key, Shard: shard}
}

func rowRef(projection, partition, sort string) driver.RowRef {
	return driver.RowRef{Projection: projection, Partition: partition, Sort: sort}
}

// values builds a value map from name, decimal string pairs.
func values(kv ...string) map[string]decimal.Decimal {
	m := make(map[string]decimal.Decimal, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = decimal.MustParse(kv[i+1])
	}
	return m
}

func avS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func avN(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func commit(t *testing.T, s Store, tx *driver.Tx) {
	t.Helper()
	if err := s.Commit(t.Context(), tx); err != nil {
		t.Fatalf("Commit(%d actions): %v", tx.Len(), err)
	}
}

func readLedgers(t *testing.T, s Store, keys ...string) map[string]driver.LedgerEntry {
	t.Helper()
	got, err := s.ReadLedgers(t.Context(), keys)
	if err != nil {
		t.Fatalf("ReadLedgers(%d keys): %v", len(keys), err)
	}
	return got
}

func wantLedger(t *testing.T, got map[string]driver.LedgerEntry, key string, rev int64, body string) {
	t.Helper()
	e, ok := got[key]
	switch {
	case !ok:
		t.Errorf("ledger %q: missing, want rev %d", key, rev)
	case e.Rev != rev || !bytes.Equal(e.Body, []byte(body)):
		t.Errorf("ledger %q = rev %d body %q, want rev %d body %q", key, e.Rev, e.Body, rev, body)
	}
}

func scanAggregates(t *testing.T, s Store) map[driver.AggregateRef]map[string]decimal.Decimal {
	t.Helper()
	got := map[driver.AggregateRef]map[string]decimal.Decimal{}
	err := s.ScanAggregates(t.Context(), func(ref driver.AggregateRef, values map[string]decimal.Decimal) error {
		if _, dup := got[ref]; dup {
			return fmt.Errorf("aggregate %+v scanned twice", ref)
		}
		got[ref] = values
		return nil
	})
	if err != nil {
		t.Fatalf("ScanAggregates: %v", err)
	}
	return got
}

// wantAggregates checks that the store holds exactly the given aggregates,
// with exactly the given values (compared as numbers, whatever their scale).
func wantAggregates(t *testing.T, s Store, want map[driver.AggregateRef]map[string]string) {
	t.Helper()
	got := scanAggregates(t, s)
	for ref, wv := range want {
		gv, ok := got[ref]
		if !ok {
			t.Errorf("aggregate %+v: missing", ref)
			continue
		}
		if !sameValues(gv, wv) {
			t.Errorf("aggregate %+v = %s, want %v", ref, formatValues(gv), wv)
		}
	}
	for ref, gv := range got {
		if _, ok := want[ref]; !ok {
			t.Errorf("unexpected aggregate %+v = %s", ref, formatValues(gv))
		}
	}
}

func sameValues(got map[string]decimal.Decimal, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || g.Cmp(decimal.MustParse(w)) != 0 {
			return false
		}
	}
	return true
}

func formatValues(v map[string]decimal.Decimal) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, name+":"+v[name].String())
	}
	return "map[" + strings.Join(parts, " ") + "]"
}

func scanRows(t *testing.T, s Store) []driver.StoredRow {
	t.Helper()
	var got []driver.StoredRow
	if err := s.ScanRows(t.Context(), func(row driver.StoredRow) error {
		got = append(got, row)
		return nil
	}); err != nil {
		t.Fatalf("ScanRows: %v", err)
	}
	return got
}

func queryRows(t *testing.T, s Store, projection, partition string, limit int) []driver.StoredRow {
	t.Helper()
	rows, err := s.QueryRows(t.Context(), projection, partition, limit)
	if err != nil {
		t.Fatalf("QueryRows(%q, %q, %d): %v", projection, partition, limit, err)
	}
	return rows
}

// wantRows compares rows in order; attributes compare as DynamoDB values.
func wantRows(t *testing.T, got, want []driver.StoredRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows %v, want %d %v", len(got), rowRefs(got), len(want), rowRefs(want))
	}
	for i := range got {
		if got[i].Ref != want[i].Ref {
			t.Errorf("row %d is %+v, want %+v", i, got[i].Ref, want[i].Ref)
			continue
		}
		if g, w := canonItem(got[i].Attrs), canonItem(want[i].Attrs); g != w {
			t.Errorf("row %+v attributes = %s, want %s", got[i].Ref, g, w)
		}
	}
}

func rowRefs(rows []driver.StoredRow) []driver.RowRef {
	refs := make([]driver.RowRef, len(rows))
	for i, r := range rows {
		refs[i] = r.Ref
	}
	return refs
}

func sortRows(rows []driver.StoredRow) {
	slices.SortFunc(rows, func(a, b driver.StoredRow) int {
		return cmp.Or(
			compareStrings(a.Ref.Projection, b.Ref.Projection),
			compareStrings(a.Ref.Partition, b.Ref.Partition),
			compareStrings(a.Ref.Sort, b.Ref.Sort))
	})
}

// compareStrings orders strings by their UTF-8 bytes, as DynamoDB orders S keys.
func compareStrings(a, b string) int { return strings.Compare(a, b) }

// storeState is what the store holds: the given ledger keys, every aggregate and
// every row, in a canonical form that compares with ==.
type storeState struct {
	ledgers map[string]string
	aggs    map[driver.AggregateRef]string
	rows    map[driver.RowRef]string
}

func snapshot(t *testing.T, s Store, ledgerKeys ...string) storeState {
	t.Helper()
	snap := storeState{ledgers: map[string]string{}, aggs: map[driver.AggregateRef]string{}, rows: map[driver.RowRef]string{}}
	for k, e := range readLedgers(t, s, ledgerKeys...) {
		snap.ledgers[k] = fmt.Sprintf("rev %d body %q", e.Rev, e.Body)
	}
	for ref, v := range scanAggregates(t, s) {
		canon := map[string]decimal.Decimal{}
		for name, d := range v {
			canon[name] = decimal.MustParse(canonNumber(d.String()))
		}
		snap.aggs[ref] = formatValues(canon)
	}
	for _, row := range scanRows(t, s) {
		snap.rows[row.Ref] = canonItem(row.Attrs)
	}
	return snap
}

func (a storeState) equal(b storeState) bool {
	return maps.Equal(a.ledgers, b.ledgers) && maps.Equal(a.aggs, b.aggs) && maps.Equal(a.rows, b.rows)
}

func (a storeState) String() string {
	return fmt.Sprintf("ledgers %v aggregates %v rows %v", a.ledgers, a.aggs, a.rows)
}

// equalAV reports whether two attribute values are equal as DynamoDB sees
// them: numbers by value, sets in any order.
func equalAV(a, b types.AttributeValue) bool { return canonAV(a) == canonAV(b) }

func formatAV(av types.AttributeValue) string { return canonAV(av) }

func canonItem(item pipeline.Item) string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range slices.Sorted(maps.Keys(item)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(k) + ": " + canonAV(item[k]))
	}
	b.WriteString("}")
	return b.String()
}

// canonAV is a canonical text form of an attribute value.
func canonAV(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S " + strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return "N " + canonNumber(v.Value)
	case *types.AttributeValueMemberB:
		return "B " + hex.EncodeToString(v.Value)
	case *types.AttributeValueMemberBOOL:
		return "BOOL " + strconv.FormatBool(v.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL " + strconv.FormatBool(v.Value)
	case *types.AttributeValueMemberSS:
		return "SS " + canonSet(v.Value, strconv.Quote)
	case *types.AttributeValueMemberNS:
		return "NS " + canonSet(v.Value, canonNumber)
	case *types.AttributeValueMemberBS:
		return "BS " + canonSet(v.Value, hex.EncodeToString)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = canonAV(e)
		}
		return "L [" + strings.Join(parts, ", ") + "]"
	case *types.AttributeValueMemberM:
		return "M " + canonItem(v.Value)
	case nil:
		return "<nil>"
	default:
		return fmt.Sprintf("%T", av)
	}
}

func canonSet[E any](elems []E, format func(E) string) string {
	parts := make([]string, len(elems))
	for i, e := range elems {
		parts[i] = format(e)
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// canonNumber writes a number without trailing fraction zeros, as DynamoDB
// returns it.
func canonNumber(s string) string {
	d, err := decimal.Parse(s)
	if err != nil {
		return "invalid " + strconv.Quote(s)
	}
	out := d.String()
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}

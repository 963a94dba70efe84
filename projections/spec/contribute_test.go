package spec_test

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

var null types.AttributeValue = &types.AttributeValueMemberNULL{Value: true}

// loadFile loads a spec from testdata.
func loadFile(t testing.TB, name string) *spec.Spec {
	t.Helper()
	sp, err := spec.LoadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// projection returns the spec's projection called name.
func projection(t testing.TB, sp *spec.Spec, name string) projections.Projection {
	t.Helper()
	for _, p := range sp.Projections() {
		if p.Name() == name {
			return p
		}
	}
	t.Fatalf("no projection %s", name)
	return nil
}

// invoice is an item that fits testdata/features.yaml's invoices.
func invoice() pipeline.Item {
	return pipeline.Item{
		"kind": s("Invoice"), "pk": s("ACCOUNT#a1"), "sk": s("INVOICE#i1"),
		"status": s("OPEN"), "amount": n("120.50"), "lines": n("3"), "issued": n("1796030000"),
		"customer-info": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"tier": s("gold"), "name": s("Ada"), "since": n("2019"),
		}},
		"version": n("1"),
	}
}

// edit returns a copy of item with the given attributes set (nil
// deletes).
func edit(item pipeline.Item, kv ...any) pipeline.Item {
	out := maps.Clone(item)
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		if kv[i+1] == nil {
			delete(out, name)
			continue
		}
		out[name] = kv[i+1].(types.AttributeValue)
	}
	return out
}

// TestContributeMisfits: an item that does not fit a spec projection is
// that record's error, a *projections.ItemError naming the projection, the item's
// keys and the attribute at fault, with the message a Go projection's
// would have.
func TestContributeMisfits(t *testing.T) {
	p := projection(t, loadFile(t, "load/features.yaml"), "invoices")
	const at = "invoices: item ACCOUNT#a1/INVOICE#i1: "
	cases := []struct {
		name    string
		item    pipeline.Item
		attr    string // the ItemError's Attr
		want    string // the whole message
		missing bool   // the error matches projections.ErrMissing
	}{
		{name: "nil item", item: nil, attr: "kind", want: "invoices: item ?/?: kind: missing", missing: true},
		{name: "no type attribute", item: edit(invoice(), "kind", nil), attr: "kind", want: at + "kind: missing", missing: true},
		{name: "type attribute N", item: edit(invoice(), "kind", n("1")), attr: "kind", want: at + "kind: want S, got N"},
		{name: "another entity type", item: edit(invoice(), "kind", s("Receipt")), attr: "kind", want: at + `kind: want Invoice or CreditNote, got "Receipt"`},
		{name: "missing attribute", item: edit(invoice(), "amount", nil), attr: "amount", want: at + "amount: missing", missing: true},
		{name: "nil member counts as absent", item: edit(invoice(), "amount", (*types.AttributeValueMemberN)(nil)), attr: "amount", want: at + "amount: missing", missing: true},
		{name: "wrong type", item: edit(invoice(), "status", n("5")), attr: "status", want: at + "status: want S, got N"},
		{name: "NULL for a required attribute", item: edit(invoice(), "status", null), attr: "status", want: at + "status: want S, got NULL"},
		{name: "aliased attribute", item: edit(invoice(), "customer-info", s("gold")), attr: "customer-info", want: at + "customer-info: want M, got S"},
		{name: "unknown member type", item: edit(invoice(), "status", &types.UnknownUnionMember{Tag: "X"}), attr: "status", want: at + "status: want S, got a value of unknown type *types.UnknownUnionMember"},
		{name: "nil M member", item: edit(invoice(), "customer-info", (*types.AttributeValueMemberM)(nil)), attr: "customer-info", want: at + "customer-info: a nil value of type M"},
		{name: "optional of the wrong type", item: edit(invoice(), "tags", s("priority")), attr: "tags", want: at + "tags: want SS, got S"},
		{name: "invalid number", item: edit(invoice(), "amount", n("12,5")), attr: "amount", want: at + `amount: decimal: "12,5" is not a number`},
		{name: "number DynamoDB cannot hold", item: edit(invoice(), "amount", n("1E+126")), attr: "amount", want: at + `amount: decimal: "1E+126" is out of range`},
		{name: "int not an integer", item: edit(invoice(), "lines", n("2.5")), attr: "lines", want: at + "lines: want a 64-bit integer, got 2.5"},
		{name: "int beyond 64 bits", item: edit(invoice(), "lines", n("9223372036854775808")), attr: "lines", want: at + "lines: want a 64-bit integer, got 9223372036854775808"},
		{name: "invalid number in a nested value", item: edit(invoice(), "customer-info", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"tier": s("gold"), "limits": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1"), n("x")}},
		}}), attr: "customer-info.limits[1]", want: at + `customer-info.limits[1]: decimal: "x" is not a number`},
		{name: "failed check with attribute", item: edit(invoice(), "pk", s("USER#a1")), attr: "pk", want: `invoices: item USER#a1/INVOICE#i1: pk: want ACCOUNT#<account>, got "USER#a1"`},
		{name: "failed check where the projection's condition is false", item: edit(invoice(), "status", s("DRAFT"), "lines", n("0")), attr: "lines", want: at + "lines: want at least one line, got 0"},
		{name: "failed check of an int", item: edit(invoice(), "lines", n("0")), attr: "lines", want: at + "lines: want at least one line, got 0"},
		{name: "failed check without attribute or message", item: edit(invoice(), "amount", n("2e9")), want: at + "check failed: amount < 1e9"},
		{name: "conditional check", item: edit(invoice(), "paid", &types.AttributeValueMemberBOOL{Value: true}), attr: "status", want: at + `status: a paid invoice is PAID or REFUNDED, got "OPEN"`},
		{name: "key part with #", item: edit(invoice(), "status", s("OPEN#2")), attr: "status", want: at + `status: "OPEN#2" contains '#'`},
		{name: "empty key part", item: edit(invoice(), "status", s("")), attr: "status", want: at + "status: empty"},
		{name: "missing segment", item: edit(invoice(), "sk", s("INVOICE")), attr: "sk", want: `invoices: item ACCOUNT#a1/INVOICE: sk: "INVOICE" has no segment 1 (it has 1)`},
		{name: "empty segment", item: edit(invoice(), "sk", s("INVOICE#")), attr: "sk", want: `invoices: item ACCOUNT#a1/INVOICE#: sk: segment 1 of "INVOICE#" is empty`},
		{name: "padding a negative number", item: edit(invoice(), "issued", n("-5")), attr: "issued", want: at + "issued: want an integer from 0 to 999999999999 for {issued:012}, got -5"},
		{name: "padding too wide a number", item: edit(invoice(), "issued", n("1E+12")), attr: "issued", want: at + "issued: want an integer from 0 to 999999999999 for {issued:012}, got 1E+12"},
		{name: "keys of type N and B", item: edit(invoice(), "pk", n("42"), "sk", &types.AttributeValueMemberB{Value: []byte{1, 2}}), attr: "pk", want: "invoices: item 42/AQI=: pk: want S, got N"},
		{name: "expression error", item: edit(invoice(), "customer-info", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"tier": s("gold"), "since": s("2019")}}),
			want: at + `rows[0].when: customer.tier == "gold" && customer.since >= 2000: invalid operation: string >= int`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.Contribute(tc.item)
			if err == nil {
				t.Fatalf("no error; contribution %+v", c)
			}
			if len(c.Counters) != 0 || len(c.Rows) != 0 {
				t.Errorf("a contribution with the error: %+v", c)
			}
			var ie *projections.ItemError
			if !errors.As(err, &ie) {
				t.Fatalf("%v (%T) is not a *projections.ItemError", err, err)
			}
			if ie.Projection != "invoices" || ie.Attr != tc.attr {
				t.Errorf("ItemError{Projection: %q, Attr: %q}, want invoices, %q", ie.Projection, ie.Attr, tc.attr)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
			if errors.Is(err, projections.ErrMissing) != tc.missing {
				t.Errorf("errors.Is(err, projections.ErrMissing) = %t, want %t", !tc.missing, tc.missing)
			}
		})
	}
}

// TestContributeFits: what items that fit contribute, feature by feature.
func TestContributeFits(t *testing.T) {
	p := projection(t, loadFile(t, "load/features.yaml"), "invoices")
	gold := invoice()
	cases := []struct {
		name string
		item pipeline.Item
		want string // the rendering of the contribution
	}{
		{name: "invoice", item: gold, want: `counters:
ACCOUNT#a1#STATUS#OPEN amount=120.50 discount=0 invoices=1 lines=3
STATUS#OPEN (4 shards) amount=120.50 invoices=1
rows:
GOLD#a1 / ISSUED#001796030000#INVOICE#i1 {"amount":{"N":"120.5"},"customer":{"M":{"name":{"S":"Ada"},"since":{"N":"2019"},"tier":{"S":"gold"}}},"empty":{"S":""},"label":{"S":"OPEN/i1"}}`},
		{name: "projection condition false", item: edit(gold, "status", s("DRAFT")), want: "counters:\nrows:"},
		{name: "counter condition false", item: edit(gold, "kind", s("CreditNote")), want: `counters:
ACCOUNT#a1#STATUS#OPEN amount=120.50 discount=0 invoices=1 lines=3
rows:
GOLD#a1 / ISSUED#001796030000#INVOICE#i1 {"amount":{"N":"120.5"},"customer":{"M":{"name":{"S":"Ada"},"since":{"N":"2019"},"tier":{"S":"gold"}}},"empty":{"S":""},"label":{"S":"OPEN/i1"}}`},
		{name: "optional values present", item: edit(gold, "discount", n("5.5"), "tags", &types.AttributeValueMemberSS{Value: []string{"priority", "eu"}}, "note", null,
			"customer-info", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"tier": s("silver")}}), want: `counters:
ACCOUNT#a1#STATUS#OPEN amount=120.50 discount=5.5 invoices=1 lines=3 priority=1
STATUS#OPEN (4 shards) amount=120.50 invoices=1
rows:`},
		{name: "NULL optional sum counts as missing", item: edit(gold, "discount", null, "customer-info", &types.AttributeValueMemberM{}), want: `counters:
ACCOUNT#a1#STATUS#OPEN amount=120.50 discount=0 invoices=1 lines=3
STATUS#OPEN (4 shards) amount=120.50 invoices=1
rows:`},
		{name: "copies keep their type, NULL included", item: edit(gold, "tags", &types.AttributeValueMemberSS{Value: []string{"eu"}}, "note", null, "issued", n("42.000")), want: `counters:
ACCOUNT#a1#STATUS#OPEN amount=120.50 discount=0 invoices=1 lines=3
STATUS#OPEN (4 shards) amount=120.50 invoices=1
rows:
GOLD#a1 / ISSUED#000000000042#INVOICE#i1 {"amount":{"N":"120.5"},"customer":{"M":{"name":{"S":"Ada"},"since":{"N":"2019"},"tier":{"S":"gold"}}},"empty":{"S":""},"label":{"S":"OPEN/i1"},"note":{"NULL":true},"tags":{"SS":["eu"]}}`},
		{name: "int at any scale", item: edit(gold, "lines", n("3.00")), want: `counters:
ACCOUNT#a1#STATUS#OPEN amount=120.50 discount=0 invoices=1 lines=3
STATUS#OPEN (4 shards) amount=120.50 invoices=1
rows:
GOLD#a1 / ISSUED#001796030000#INVOICE#i1 {"amount":{"N":"120.5"},"customer":{"M":{"name":{"S":"Ada"},"since":{"N":"2019"},"tier":{"S":"gold"}}},"empty":{"S":""},"label":{"S":"OPEN/i1"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.Contribute(tc.item)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(c); got != tc.want {
				t.Errorf("contribution\n got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestContributeKeepsNoImage: a row's copied attributes are copies: a
// change to the image after Contribute does not reach the row, and
// Contribute does not change the image.
func TestContributeKeepsNoImage(t *testing.T) {
	p := projection(t, loadFile(t, "load/features.yaml"), "invoices")
	item := edit(invoice(), "tags", &types.AttributeValueMemberSS{Value: []string{"eu"}})
	before := render(mustContribute(t, p, item))
	c := mustContribute(t, p, item)
	if !reflect.DeepEqual(item, edit(invoice(), "tags", &types.AttributeValueMemberSS{Value: []string{"eu"}})) {
		t.Fatal("Contribute changed the image")
	}
	item["customer-info"].(*types.AttributeValueMemberM).Value["tier"] = s("bronze")
	item["tags"].(*types.AttributeValueMemberSS).Value[0] = "us"
	if got := render(c); got != before {
		t.Errorf("the row changed with the image:\n%s\nwas\n%s", got, before)
	}
}

func mustContribute(t testing.TB, p projections.Projection, item pipeline.Item) projections.Contribution {
	t.Helper()
	c, err := p.Contribute(item)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render is a deterministic rendering of a contribution: counters sorted
// by key with their values, rows with their attributes in DynamoDB JSON.
func render(c projections.Contribution) string {
	var b strings.Builder
	b.WriteString("counters:")
	ctrs := slices.Clone(c.Counters)
	slices.SortFunc(ctrs, func(a, b projections.Counter) int { return strings.Compare(a.Key, b.Key) })
	for _, ctr := range ctrs {
		b.WriteString("\n" + ctr.Key)
		if ctr.Shards > 1 {
			b.WriteString(" (" + itoa(ctr.Shards) + " shards)")
		}
		for _, name := range slices.Sorted(maps.Keys(ctr.Values)) {
			b.WriteString(" " + name + "=" + ctr.Values[name].String())
		}
	}
	b.WriteString("\nrows:")
	rows := slices.Clone(c.Rows)
	slices.SortFunc(rows, func(a, b projections.Row) int {
		return strings.Compare(a.Partition+"\x00"+a.Sort, b.Partition+"\x00"+b.Sort)
	})
	for _, r := range rows {
		b.WriteString("\n" + r.Partition + " / " + r.Sort + " " + string(pipeline.AppendItem(nil, r.Attrs)))
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestSortablePlaceholder: {name:sortable} renders an N or an int in the
// sortable encoding (decimal.Decimal.Sortable), however the item writes
// it, and the Definition names the format.
func TestSortablePlaceholder(t *testing.T) {
	sp, err := spec.Parse("sortable.yaml", []byte(`version: 1
projections:
  - name: p
    entityTypes: [T]
    item: {x: N, i: int}
    counters: [{key: "X#{x:sortable}#I#{i:sortable}", values: {c: 1}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	p := sp.Projections()[0]
	for _, tc := range []struct{ x, i, want string }{
		{"120.50", "3.00", "X#P1321205" + strings.Repeat("0", 34) + "#I#P1303" + strings.Repeat("0", 37)},
		{"-15E-1", "-1", "X#M12584" + strings.Repeat("9", 36) + "#I#M1258" + strings.Repeat("9", 37)},
		{"0.000", "0", "X#N" + strings.Repeat("0", 41) + "#I#N" + strings.Repeat("0", 41)},
	} {
		c := mustContribute(t, p, pipeline.Item{"EntityType": s("T"), "x": n(tc.x), "i": n(tc.i)})
		if len(c.Counters) != 1 || c.Counters[0].Key != tc.want {
			t.Errorf("x %s, i %s: %+v, want key %s", tc.x, tc.i, c.Counters, tc.want)
		}
	}
	if !strings.Contains(p.(projections.Definer).Definition(), `"key":"X#{x:sortable}#I#{i:sortable}"`) {
		t.Errorf("Definition %s", p.(projections.Definer).Definition())
	}
}

package spec_test

import (
	"os"
	"strings"
	"testing"

	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// identity returns the Definition and fingerprint of the only projection
// of a spec.
func identity(t *testing.T, name string, data []byte) (def, fp string) {
	t.Helper()
	sp, err := spec.Parse(name, data)
	if err != nil {
		t.Fatal(err)
	}
	ps := sp.Projections()
	if len(ps) != 1 {
		t.Fatalf("%s: %d projections", name, len(ps))
	}
	return ps[0].(projections.Definer).Definition(), projections.Fingerprint(ps[0])
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDefinitionIgnoresForm: the same projection written otherwise — in
// JSON, in flow style, with keys and lists reordered, other quoting and
// spacing in expressions, other check messages, without the
// keyAttributes that only label errors, shards: 1 for none — has the same
// Definition, and so the same fingerprint.
func TestDefinitionIgnoresForm(t *testing.T) {
	const base = "testdata/load/features.yaml"
	wantDef, wantFP := identity(t, base, readFile(t, base))
	for _, path := range []string{"testdata/identity/features-reformatted.yaml", "testdata/identity/features.json"} {
		t.Run(path, func(t *testing.T) {
			def, fp := identity(t, path, readFile(t, path))
			if def != wantDef || fp != wantFP {
				t.Errorf("definition differs from %s's:\n got %s %s\nwant %s %s", base, fp, def, wantFP, wantDef)
			}
		})
	}
}

// TestDefinitionFollowsMeaning: every edit that changes what the
// projection contributes for some item, or which items it rejects,
// changes its Definition and its fingerprint.
func TestDefinitionFollowsMeaning(t *testing.T) {
	const base = "testdata/load/features.yaml"
	src := string(readFile(t, base))
	baseDef, baseFP := identity(t, base, []byte(src))
	edits := []struct {
		name, old, new string
	}{
		{"projection name", "name: invoices", "name: invoices2"},
		{"entity type added", "entityTypes: [Invoice, CreditNote]", "entityTypes: [Invoice, CreditNote, Refund]"},
		{"type attribute", "typeAttribute: kind\n", "typeAttribute: type\n"},
		{"attribute type", "      amount: N\n", "      amount: int\n"},
		{"attribute made required", "note: any?", "note: any"},
		{"attribute alias", "attribute: customer-info", "attribute: customer_info"},
		{"attribute declared", "      lines: int\n", "      lines: int\n      currency: S\n"},
		{"projection condition", `when: status != "DRAFT"`, `when: status != "VOID"`},
		{"check expression", "expr: lines >= 1", "expr: lines >= 2"},
		{"check operator", `expr: pk matches "^ACCOUNT#[^#]+$"`, `expr: not (pk matches "^ACCOUNT#[^#]+$")`},
		{"check condition dropped", "      - when: paid != nil && paid\n        expr:", "      - expr:"},
		{"check dropped", "      - amount < 1e9\n", ""},
		{"counter key literal", "ACCOUNT#{pk[1]}#STATUS", "ACCT#{pk[1]}#STATUS"},
		{"segment", "ACCOUNT#{pk[1]}#STATUS", "ACCOUNT#{pk[0]}#STATUS"},
		{"placeholder", "STATUS#{status}\"\n        shards", "STATUS#{kind}\"\n        shards"},
		{"shards", "shards: 4", "shards: 8"},
		{"counter condition", `when: kind == "Invoice"`, `when: kind == "CreditNote"`},
		{"value literal", "invoices: 1\n          amount: amount\n          discount", "invoices: 2\n          amount: amount\n          discount"},
		{"value summed", "lines: lines", "lines: issued"},
		{"missing value", "missing: 0", "missing: 1"},
		{"value condition", `"priority" in tags`, `"urgent" in tags`},
		{"value dropped", "          lines: lines\n", ""},
		{"row condition literal", `customer.tier == "gold"`, `customer.tier == "Gold"`},
		{"row partition", `partition: "GOLD#{pk[1]}"`, `partition: "GOLD#{sk[1]}"`},
		{"padding width", "{issued:012}", "{issued:013}"},
		{"row attribute type", `amount: {N: "{amount}"}`, `amount: {S: "{amount}"}`},
		{"row attribute dropped", "          tags: tags\n", ""},
		{"row attribute template", `label: {S: "{status}/{sk[1]}"}`, `label: {S: "{status}-{sk[1]}"}`},
		{"empty S attribute", `empty: {S: ""}`, `empty: {S: " "}`},
	}
	seen := map[string]string{baseDef: "the base"}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			if strings.Count(src, e.old) != 1 {
				t.Fatalf("%q occurs %d times in %s", e.old, strings.Count(src, e.old), base)
			}
			def, fp := identity(t, e.name, []byte(strings.Replace(src, e.old, e.new, 1)))
			if fp == baseFP {
				t.Errorf("the fingerprint did not change: %s", fp)
			}
			if other, dup := seen[def]; dup {
				t.Errorf("the definition is the same as for %s: %s", other, def)
			}
			seen[def] = e.name
		})
	}
}

package exportgen_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/spec"
)

// TestPayments holds the payments mix to what it says: about 10 % audit
// entries, 60 % of transfers settled, and through PaymentsSpec a settled
// transfer adds to three aggregates and writes one row, the rest nothing.
func TestPayments(t *testing.T) {
	sp, err := spec.Parse("payments.yaml", exportgen.PaymentsSpec)
	if err != nil {
		t.Fatal(err)
	}
	set, err := sp.Set()
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	var audits, transfers, settled, counters, rows int
	keys := map[string]bool{}
	for it := range exportgen.Payments(n, 1) {
		keys[pipeline.ItemKey(pipeline.Item{"pk": it["pk"], "sk": it["sk"]})] = true
		var moved int
		for _, p := range set.Projections() {
			if !slices.Contains(p.EntityTypes(), kindOf(it)) {
				continue
			}
			c, err := p.Contribute(it)
			if err != nil {
				t.Fatalf("%s: %v", pipeline.KeyString(pipeline.Item{"pk": it["pk"], "sk": it["sk"]}), err)
			}
			counters += len(c.Counters)
			rows += len(c.Rows)
			moved += len(c.Counters) + len(c.Rows)
		}
		switch kindOf(it) {
		case "Audit":
			audits++
		case "Transfer":
			transfers++
			if moved > 0 {
				settled++
				if moved != 4 {
					t.Fatalf("a settled transfer moved %d aggregates and rows, want 4", moved)
				}
			}
		}
	}
	if len(keys) != n {
		t.Errorf("%d items under %d keys: keys repeat", n, len(keys))
	}
	within := func(what string, got, want, tol float64) {
		if got < want-tol || got > want+tol {
			t.Errorf("%s: %.3f, want %.2f ± %.2f", what, got, want, tol)
		}
	}
	within("audit share", float64(audits)/n, 0.10, 0.01)
	within("settled share of transfers", float64(settled)/float64(transfers), 0.60, 0.02)
	if counters != 3*settled || rows != settled {
		t.Errorf("%d counters and %d rows for %d settled transfers", counters, rows, settled)
	}
}

func kindOf(it pipeline.Item) string {
	if v, ok := it["kind"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// A sum that would leave DynamoDB's 38 significant digits is the fault of
// the record whose contribution takes it there: that record fails, as
// permanent, so that bisection and the on-failure destination isolate it;
// every record before it is applied.
func TestOverflowingSumBlamesItsRecord(t *testing.T) {
	event, err := os.ReadFile(filepath.Join("..", "..", "pipeline", "testdata", "streams", "overflowing-sum.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := boltstoretest.Open(t)
	res := process(t, newEngine(st), event)
	if res.Report != "4421588100000000017450443002" || len(res.Failed) != 1 || res.Failed[0].Index != 1 {
		t.Fatalf("result %+v; want record 1 (seq …3002) reported", res)
	}
	var re *driver.RangeError
	if err := res.Failed[0].Err; !errors.Is(err, pipeline.ErrPermanent) || !errors.As(err, &re) || !strings.HasPrefix(re.Ref.Key, "ORDERS#PAID") || re.Name != "revenue" {
		t.Fatalf("failure %v; want a permanent *RangeError on the paid orders' revenue", res.Failed[0].Err)
	}
	// Record 0 is applied, alone: the day's revenue is its total, exactly.
	v := mustView(t, st)
	day := v.Aggregates[projections.AggregateKey{Projection: "order-totals", Key: "ORDERS#PAID#DAY#2026-11-30"}]
	if day["revenue"].Cmp(decimal.MustParse("12345678901234567890123456789012345678")) != 0 || day["orders"].Cmp(decimal.FromInt(1)) != 0 {
		t.Errorf("the day's aggregate: %v", day)
	}

	// Under SkipPermanent the batch goes on past it.
	st2 := boltstoretest.Open(t)
	p := pipeline.NewStreamsProcessor(newEngine(st2), pipeline.Config{Logger: quiet(), Permanent: pipeline.SkipPermanent})
	res, err = p.Process(t.Context(), event)
	if err != nil || res.Report != "" || len(res.Failed) != 1 || res.Failed[0].Index != 1 || !res.Failed[0].Skipped {
		t.Fatalf("skipping: %+v, %v", res, err)
	}
	if other := mustView(t, st2).Aggregates[projections.AggregateKey{Projection: "order-totals", Key: "ORDERS#PAID#DAY#2026-12-01"}]; other["revenue"].Cmp(decimal.FromInt(7)) != 0 {
		t.Errorf("record 2 not applied: %v", other)
	}
}

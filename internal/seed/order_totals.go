package seed

import (
	"time"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// OrderTotals counts orders and sums their revenue exactly, per status and
// per status and day, from Order items. An order that moves from PENDING to
// PAID moves its count and revenue with it: the engine retracts the old
// image's contribution. The zero value is ready to use.
type OrderTotals struct{}

var _ projections.Projection = (*OrderTotals)(nil)

var (
	userPK  = shape("PK", "USER#<user>")
	orderSK = shape("SK", "ORDER#<date>#<order>")
)

// Name returns "order-totals".
func (*OrderTotals) Name() string { return "order-totals" }

// EntityTypes returns Order.
func (*OrderTotals) EntityTypes() []string { return []string{"Order"} }

// Definition describes what the projection computes (see
// projections.Definer): a change to it is a change of definition.
func (*OrderTotals) Definition() string {
	return "v1: Order PK=USER#<user> SK=ORDER#<date>#<order> status in PENDING|PAID|SHIPPED|CANCELLED -> ORDERS#<status>#DAY#<orderDate> orders=1 revenue=total; ORDERS#<status> (8 shards) orders=1 revenue=total"
}

// Contribute returns, for an order, the counters
// ORDERS#<status>#DAY#<orderDate> and ORDERS#<status> (8 shards), each with
// orders=1 and revenue=total. The status must be PENDING, PAID, SHIPPED or
// CANCELLED, and orderDate a calendar date written YYYY-MM-DD.
func (p *OrderTotals) Contribute(item pipeline.Item) (projections.Contribution, error) {
	c, err := p.contribute(item)
	if err != nil {
		return projections.Contribution{}, fail(p.Name(), item, err)
	}
	return c, nil
}

func (*OrderTotals) contribute(item pipeline.Item) (projections.Contribution, error) {
	if _, err := entityType(item, "Order"); err != nil {
		return projections.Contribution{}, err
	}
	if _, err := userPK.parse(item); err != nil {
		return projections.Contribution{}, err
	}
	if _, err := orderSK.parse(item); err != nil {
		return projections.Contribution{}, err
	}
	status, err := oneOf(item, "status", "PENDING", "PAID", "SHIPPED", "CANCELLED")
	if err != nil {
		return projections.Contribution{}, err
	}
	total, err := num(item, "total")
	if err != nil {
		return projections.Contribution{}, err
	}
	day, err := str(item, "orderDate")
	if err != nil {
		return projections.Contribution{}, err
	}
	if _, err := time.Parse(time.DateOnly, day); err != nil || len(day) != len(time.DateOnly) {
		return projections.Contribution{}, attrErrorf("orderDate", "want a date YYYY-MM-DD, got %s", quote.Value(day))
	}
	return projections.Contribution{Counters: []projections.Counter{
		{
			Key:    "ORDERS#" + status + "#DAY#" + day,
			Values: map[string]decimal.Decimal{"orders": one, "revenue": total},
		},
		{
			Key:    "ORDERS#" + status,
			Values: map[string]decimal.Decimal{"orders": one, "revenue": total},
			Shards: hotShards,
		},
	}}, nil
}

package seed

import (
	"math"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// CartContents counts each cart's lines and sums their quantities, from
// CartItem items. The zero value is ready to use.
type CartContents struct{}

var _ projections.Projection = (*CartContents)(nil)

var (
	cartPK     = shape("PK", "CART#<cart>")
	cartItemSK = shape("SK", "ITEM#<product>")
)

// Name returns "cart-contents".
func (*CartContents) Name() string { return "cart-contents" }

// EntityTypes returns CartItem.
func (*CartContents) EntityTypes() []string { return []string{"CartItem"} }

// Definition describes what the projection computes (see
// projections.Definer): a change to it is a change of definition.
func (*CartContents) Definition() string {
	return "v1: CartItem PK=CART#<cart> SK=ITEM#<product> -> CART#<cart> lines=1 quantity=quantity"
}

// Contribute returns, for a line of cart <cart>, the counter CART#<cart> with
// lines=1 and quantity=quantity. The quantity must be an integer (at any
// scale: "2.0" counts as 2).
func (p *CartContents) Contribute(item pipeline.Item) (projections.Contribution, error) {
	c, err := p.contribute(item)
	if err != nil {
		return projections.Contribution{}, fail(p.Name(), item, err)
	}
	return c, nil
}

func (*CartContents) contribute(item pipeline.Item) (projections.Contribution, error) {
	if _, err := entityType(item, "CartItem"); err != nil {
		return projections.Contribution{}, err
	}
	pk, err := cartPK.parse(item)
	if err != nil {
		return projections.Contribution{}, err
	}
	if _, err := cartItemSK.parse(item); err != nil {
		return projections.Contribution{}, err
	}
	quantity, err := integer(item, "quantity", math.MinInt64, math.MaxInt64)
	if err != nil {
		return projections.Contribution{}, err
	}
	return projections.Contribution{Counters: []projections.Counter{{
		Key:    "CART#" + pk[0],
		Values: map[string]decimal.Decimal{"lines": one, "quantity": decimal.FromInt(quantity)},
	}}}, nil
}

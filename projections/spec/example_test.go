package spec_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/spec"
)

// A spec with one projection, and two items through it: one that fits,
// one that does not.
func Example() {
	const file = `
version: 1
projections:
  - name: order-totals
    entityTypes: [Order]
    item:
      status: S
      total: N
      orderDate: S
    checks:
      - expr: status in ["PENDING", "PAID"]
        attribute: status
        message: want PENDING or PAID
    counters:
      - key: "ORDERS#{status}#DAY#{orderDate}"
        values: {orders: 1, revenue: total}
`
	sp, err := spec.Parse("projections.yaml", []byte(file))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := sp.Projections()[0]
	order := pipeline.Item{
		"PK": &types.AttributeValueMemberS{Value: "USER#u42"}, "SK": &types.AttributeValueMemberS{Value: "ORDER#2026-11-30#o1"},
		"EntityType": &types.AttributeValueMemberS{Value: "Order"}, "status": &types.AttributeValueMemberS{Value: "PAID"},
		"total": &types.AttributeValueMemberN{Value: "120.50"}, "orderDate": &types.AttributeValueMemberS{Value: "2026-11-30"},
	}
	c, err := p.Contribute(order)
	fmt.Println(c.Counters[0].Key, c.Counters[0].Values["orders"], c.Counters[0].Values["revenue"], err)

	order["status"] = &types.AttributeValueMemberS{Value: "LOST"}
	_, err = p.Contribute(order)
	fmt.Println(err)
	// Output:
	// ORDERS#PAID#DAY#2026-11-30 1 120.50 <nil>
	// order-totals: item USER#u42/ORDER#2026-11-30#o1: status: want PENDING or PAID, got "LOST"
}

// Every problem of a spec at once, each with its line, projection and
// field.
func ExampleParse_problems() {
	const file = `version: 1
projections:
  - name: order-totals
    entityTypes: [Order]
    item:
      status: S
    counters:
      - key: "ORDERS#{sttus}"
        when: status = "PAID"
        values: {orders: 1, PK: 1}
`
	_, err := spec.Parse("projections.yaml", []byte(file))
	fmt.Println(err)
	// Output:
	// invalid projection spec:
	// projections.yaml:8: projection order-totals: counters[0].key: placeholder {sttus}: sttus is not declared in item
	// projections.yaml:9: projection order-totals: counters[0].when: status = "PAID": unexpected token Operator("=") (1:8)
	// projections.yaml:10: projection order-totals: counters[0].values.PK: "PK" is reserved: the stores use it for their own bookkeeping
}

// A spec's projections describe their aggregates and rows, as `tributary
// projections check` prints them.
func ExampleProjection_Counters() {
	sp, err := spec.Parse("orders.yaml", []byte(`
version: 1
projections:
  - name: order-totals
    entityTypes: [Order]
    item: {status: S, orderDate: S, total: N}
    counters:
      - key: "ORDERS#{status}#DAY#{orderDate}"
        values: {orders: 1, revenue: total}
      - key: "ORDERS#{status}"
        shards: 8
        values: {orders: 1, revenue: total}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range sp.SpecProjections()[0].Counters() {
		fmt.Println(c.Key, c.Shards, c.Values)
	}
	// Output:
	// ORDERS#{status}#DAY#{orderDate} 0 [orders revenue]
	// ORDERS#{status} 8 [orders revenue]
}

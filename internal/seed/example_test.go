package seed_test

import (
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
)

func ExampleOrderTotals() {
	order := pipeline.Item{
		"PK":         &types.AttributeValueMemberS{Value: "USER#u42"},
		"SK":         &types.AttributeValueMemberS{Value: "ORDER#2026-11-30#o1"},
		"EntityType": &types.AttributeValueMemberS{Value: "Order"},
		"version":    &types.AttributeValueMemberN{Value: "2"},
		"status":     &types.AttributeValueMemberS{Value: "PAID"},
		"total":      &types.AttributeValueMemberN{Value: "120.50"},
		"orderDate":  &types.AttributeValueMemberS{Value: "2026-11-30"},
	}
	c, err := (&seed.OrderTotals{}).Contribute(order)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ctr := range c.Counters {
		fmt.Printf("%s shards=%d", ctr.Key, ctr.Shards)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for name := range ctr.Values {
				if !yield(name) {
					return
				}
			}
		}) {
			fmt.Printf(" %s=%s", name, ctr.Values[name])
		}
		fmt.Println()
	}

	// The same order with a status written as a number is a poison record.
	order["status"] = &types.AttributeValueMemberN{Value: "2"}
	_, err = (&seed.OrderTotals{}).Contribute(order)
	fmt.Println(err)
	// Output:
	// ORDERS#PAID#DAY#2026-11-30 shards=0 orders=1 revenue=120.50
	// ORDERS#PAID shards=8 orders=1 revenue=120.50
	// order-totals: item USER#u42/ORDER#2026-11-30#o1: status: want S, got N
}

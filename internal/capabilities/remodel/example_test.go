package remodel_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver/target"
)

// A remodel of Order items to a table keyed by status: what it makes of
// one item, and the key the engine writes it under.
func ExampleRemodel_Apply() {
	byStatus := &projections.Transform{
		Name:    "orders-by-status",
		Version: "1",
		ByType: map[string]projections.TransformFunc{
			"Order": func(it pipeline.Item) ([]pipeline.Item, error) {
				out := pipeline.Item{}
				for k, v := range it {
					out[k] = v
				}
				status := it["status"].(*types.AttributeValueMemberS).Value
				out["PK"] = &types.AttributeValueMemberS{Value: "STATUS#" + status}
				out["SK"] = it["orderId"]
				return []pipeline.Item{out}, nil
			},
		},
	}
	key, _ := target.NewKey("PK", "SK")
	r, err := remodel.New(byStatus, key, pipeline.Schema{})
	if err != nil {
		fmt.Println(err)
		return
	}
	order := pipeline.Item{
		"PK": &types.AttributeValueMemberS{Value: "USER#u1"}, "SK": &types.AttributeValueMemberS{Value: "ORDER#o1"},
		"EntityType": &types.AttributeValueMemberS{Value: "Order"}, "orderId": &types.AttributeValueMemberS{Value: "o1"},
		"status": &types.AttributeValueMemberS{Value: "PAID"},
	}
	items, err := r.Apply(order)
	if err != nil {
		fmt.Println(err)
		return
	}
	ref, _ := key.Ref(r.Name(), items[0])
	fmt.Println(string(pipeline.AppendItem(nil, items[0])))
	fmt.Println(r.DescribeKey(ref))
	// Output:
	// {"EntityType":{"S":"Order"},"PK":{"S":"STATUS#PAID"},"SK":{"S":"o1"},"orderId":{"S":"o1"},"status":{"S":"PAID"}}
	// PK=STATUS#PAID SK=o1
}

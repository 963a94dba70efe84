package decimal_test

import (
	"encoding/json"
	"fmt"

	"github.com/tributary/tributary/projections/decimal"
)

func Example() {
	// Sum DynamoDB N attribute values exactly.
	var sum decimal.Decimal
	for _, n := range []string{"120.50", "-3", "1E+2", "0.000", "0.1"} {
		d, err := decimal.Parse(n)
		if err != nil {
			fmt.Println(err)
			return
		}
		sum = sum.Add(d)
	}
	fmt.Println(sum)

	// Ten times 0.1 is exactly 1.0.
	tenth := decimal.MustParse("0.1")
	var total decimal.Decimal
	for range 10 {
		total = total.Add(tenth)
	}
	fmt.Println(total, total.Cmp(decimal.FromInt(1)) == 0)

	b, _ := json.Marshal(map[string]decimal.Decimal{"sum": sum})
	fmt.Println(string(b))

	_, err := decimal.Parse("12x")
	fmt.Println(err)
	// Output:
	// 217.600
	// 1.0 true
	// {"sum":"217.600"}
	// decimal: "12x" is not a number
}

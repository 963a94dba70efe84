package emf_test

import (
	"fmt"
	"os"
	"time"

	"github.com/tributary/tributary/internal/emf"
)

func Example() {
	// One Set per invocation; a Set is not safe for concurrent use.
	m := emf.New("tributary", map[string]string{"Function": "ingest"})
	m.Property("requestId", "989ffbf8-9ace-4817-a57c-e4dd734019ee")
	m.Add("Records", emf.Count, 3)
	m.Add("Records", emf.Count, 2) // sums to 5
	m.Add("Latency", emf.Milliseconds, 12.5)

	// On Lambda, write to os.Stdout; CloudWatch Logs extracts the metrics.
	now := time.UnixMilli(1700000000000)
	if _, err := m.WriteTo(os.Stdout, now); err != nil {
		fmt.Println("emf:", err)
	}
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"tributary","Dimensions":[["Function"]],"Metrics":[{"Name":"Latency","Unit":"Milliseconds"},{"Name":"Records","Unit":"Count"}]}]},"Function":"ingest","Latency":12.5,"Records":5,"requestId":"989ffbf8-9ace-4817-a57c-e4dd734019ee"}
}

func ExampleSet_WriteTo_invalid() {
	m := emf.New("tributary", nil)
	m.Add("Latency", "Millis", 1)
	_, err := m.WriteTo(os.Stdout, time.Now())
	fmt.Println(err)
	// Output:
	// emf: invalid: metric "Latency": unknown unit "Millis"
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// orderRecord renders one Lambda DynamoDB Streams INSERT of an order: the
// second version of an order comes as an INSERT too, which the engine takes
// by its version.
func orderRecord(seq int, order, status, total string, version int) string {
	return fmt.Sprintf(`{"eventID":"o%d","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000","dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":{"PK":{"S":"USER#u1"},"SK":{"S":"ORDER#2026-11-30#%s"}},"NewImage":{"PK":{"S":"USER#u1"},"SK":{"S":"ORDER#2026-11-30#%s"},"EntityType":{"S":"Order"},"version":{"N":"%d"},"status":{"S":"%s"},"total":{"N":"%s"},"orderDate":{"S":"2026-11-30"}},"SequenceNumber":"44217000000000000000000%05d","StreamViewType":"NEW_AND_OLD_IMAGES"}}`,
		seq, order, order, version, status, total, seq)
}

// TestAggregatesNormalForm: the embedded store shows its sums as DynamoDB
// does, trailing zeros trimmed, and not at the scale of operands retracted
// since: an order of 1.0000 paid and then back to pending leaves the paid
// revenue 6446.4, not 6446.4000.
func TestAggregatesNormalForm(t *testing.T) {
	// Two deliveries, so that the engine applies the paid 1.0000 and then
	// retracts it (within one batch it would coalesce the two versions).
	dir := t.TempDir()
	var files []string
	for i, recs := range [][]string{
		{orderRecord(1, "o1", "PAID", "6446.40", 1), orderRecord(2, "o2", "PAID", "1.0000", 1)},
		{orderRecord(3, "o2", "PENDING", "1.0000", 2)},
	} {
		f := filepath.Join(dir, fmt.Sprintf("event-%d.json", i))
		if err := os.WriteFile(f, []byte(`{"Records":[`+strings.Join(recs, ",")+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	store := t.TempDir()
	if code, out, stderr := runCLI(t, append([]string{"process", "--store", store}, files...)...); code != 0 {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := runCLI(t, "aggregates", "--store", store, "--json", "--projection", "order-totals")
	if code != 0 {
		t.Fatalf("aggregates: exit %d: %s", code, stderr)
	}
	want := `{"projection":"order-totals","key":"ORDERS#PAID","values":{"orders":"1","revenue":"6446.4"}}
{"projection":"order-totals","key":"ORDERS#PAID#DAY#2026-11-30","values":{"orders":"1","revenue":"6446.4"}}
{"projection":"order-totals","key":"ORDERS#PENDING","values":{"orders":"1","revenue":"1"}}
{"projection":"order-totals","key":"ORDERS#PENDING#DAY#2026-11-30","values":{"orders":"1","revenue":"1"}}
`
	if out != want {
		t.Errorf("aggregates --json\n got %s\nwant %s", out, want)
	}
	if _, out, _ := runCLI(t, "aggregates", "--store", store); !strings.Contains(out, "orders=1 revenue=6446.4\n") {
		t.Errorf("aggregates:\n%s", out)
	}
}

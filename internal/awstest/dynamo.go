package awstest

// DynamoDB on the wire: the rules and readers of BatchWriteItem requests
// that the writer's and the loaders' tests share.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/pipeline"
)

// Throttled is the error DynamoDB answers a write with when the table's
// capacity is exceeded.
var Throttled = DynamoDBErrorBody("ProvisionedThroughputExceededException",
	"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.", "")

// PutItems returns the items of the PutRequests in a BatchWriteItem request
// body, as raw JSON.
func PutItems(t testing.TB, body []byte, table string) []json.RawMessage {
	t.Helper()
	var in struct {
		RequestItems map[string][]struct {
			PutRequest *struct{ Item json.RawMessage }
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatalf("BatchWriteItem request %.200s: %v", body, err)
	}
	var out []json.RawMessage
	for _, r := range in.RequestItems[table] {
		if r.PutRequest == nil {
			t.Fatalf("BatchWriteItem request with a write that is not a put: %.200s", body)
		}
		out = append(out, r.PutRequest.Item)
	}
	return out
}

// CanonItems returns the items of the PutRequests in a BatchWriteItem
// request body in a canonical form (members in sorted order), sorted: the
// SDK writes an item's members in any order.
func CanonItems(t testing.TB, body []byte, table string) []string {
	t.Helper()
	var out []string
	for _, it := range PutItems(t, body, table) {
		var v any
		if err := json.Unmarshal(it, &v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// ItemKey is the PK|SK of an item in DynamoDB JSON.
func ItemKey(t testing.TB, item json.RawMessage) string {
	t.Helper()
	var k struct{ PK, SK struct{ S string } }
	if err := json.Unmarshal(item, &k); err != nil {
		t.Fatal(err)
	}
	return k.PK.S + "|" + k.SK.S
}

// HoldBack makes the server write only the first half of the items of each
// of the next n BatchWriteItem requests that have more than one: it sends
// the server the request without the rest and adds the rest to the
// server's response as UnprocessedItems, as DynamoDB does when it throttles
// part of a batch. held counts the items held back.
func HoldBack(t testing.TB, n int, held *int) Rule {
	var mu sync.Mutex
	return func(_ *http.Request, body []byte, forward ForwardFunc) (*http.Response, []byte, bool, error) {
		var in map[string]any
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, nil, false, err
		}
		requestItems := in["RequestItems"].(map[string]any)
		unprocessed := map[string]any{}
		mu.Lock()
		for table, v := range requestItems {
			list := v.([]any)
			if n == 0 || len(list) < 2 {
				continue
			}
			n--
			requestItems[table], unprocessed[table] = list[:len(list)/2], list[len(list)/2:]
			*held += len(list) - len(list)/2
		}
		mu.Unlock()
		if len(unprocessed) == 0 {
			resp, rb, err := forward(body)
			return resp, rb, false, err
		}
		sent, err := json.Marshal(in)
		if err != nil {
			return nil, nil, false, err
		}
		resp, rb, err := forward(sent)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, rb, false, err
		}
		var out map[string]any
		if err := json.Unmarshal(rb, &out); err != nil {
			return nil, nil, false, fmt.Errorf("BatchWriteItem response %s: %w", rb, err)
		}
		if u, _ := out["UnprocessedItems"].(map[string]any); len(u) > 0 {
			return nil, nil, false, fmt.Errorf("the server itself left items unprocessed: %s", rb)
		}
		out["UnprocessedItems"] = unprocessed
		if rb, err = json.Marshal(out); err != nil {
			return nil, nil, false, err
		}
		SetBody(resp, rb)
		return resp, rb, false, nil
	}
}

// ProcessNothing answers every BatchWriteItem request with all its items
// unprocessed, without reaching the server.
func ProcessNothing(req *http.Request, body []byte, _ ForwardFunc) (*http.Response, []byte, bool, error) {
	var in struct{ RequestItems json.RawMessage }
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, nil, false, err
	}
	out := fmt.Appendf(nil, `{"UnprocessedItems":%s}`, in.RequestItems)
	return DynamoDBResponse(req, http.StatusOK, out), out, true, nil
}

// WireDynamoDB returns a DynamoDB client for the test server whose
// requests go through a [Wire], and the wire. The client keeps the SDK's
// standard retryer, without the waits between its attempts.
func WireDynamoDB(t testing.TB) (*dynamodb.Client, *Wire) {
	t.Helper()
	w := &Wire{Next: http.DefaultClient}
	cfg := Config(t)
	cfg.HTTPClient = w
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	}
	return dynamodb.NewFromConfig(cfg), w
}

// TableLines scans a table on the test server and returns its items as
// export lines ({"Item":...}), sorted: comparable byte for byte with the
// lines a repartition writes.
func TableLines(t testing.TB, table string) []string {
	t.Helper()
	var lines []string
	p := dynamodb.NewScanPaginator(DynamoDB(t), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			lines = append(lines, `{"Item":`+string(pipeline.AppendItem(nil, it))+`}`)
		}
	}
	sort.Strings(lines)
	return lines
}

// FailFrom lets the first n-1 requests of an operation through and answers
// every one from the nth on with body (a DynamoDB error, say [Throttled]),
// without reaching the server: a table that starts throttling for good.
func FailFrom(n int, body string) Rule {
	var mu sync.Mutex
	seen := 0
	return func(req *http.Request, b []byte, forward ForwardFunc) (*http.Response, []byte, bool, error) {
		mu.Lock()
		seen++
		fail := seen >= n
		mu.Unlock()
		if fail {
			return Fail(body)(req, b, forward)
		}
		resp, rb, err := forward(b)
		return resp, rb, false, err
	}
}

// SameLines reports how a table's lines (TableLines) differ from want.
func SameLines(t testing.TB, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("the table holds %d items, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("item differs:\n got %.300s\nwant %.300s", got[i], want[i])
			return
		}
	}
}

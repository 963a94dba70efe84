package export_test

// The loader's integration tests watch its requests on the wire. The loader
// uses a real *dynamodb.Client whose HTTP client (an awstest.Wire) sits
// between the SDK and the AWS-protocol test server (moto): it records the
// JSON bodies of every request and response, and for selected requests
// rewrites the server's real response, or answers with a real
// DynamoDB-protocol error, to produce what DynamoDB does under load and moto
// never does (BatchWriteItem's UnprocessedItems, throttling). Nothing below
// the HTTP layer is faked. infra/dynamostore/wire_test.go uses the same wire.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
)

// throttled is the error DynamoDB answers a write with when the table's
// capacity is exceeded.
var throttled = awstest.DynamoDBErrorBody("ProvisionedThroughputExceededException",
	"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.", "")

// putItems returns the items of the PutRequests in a BatchWriteItem request
// body, as raw JSON.
func putItems(t testing.TB, body []byte, table string) []json.RawMessage {
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

// canonItems returns the items of the PutRequests in a BatchWriteItem
// request body in a canonical form (members in sorted order), sorted: the
// SDK writes an item's members in any order.
func canonItems(t testing.TB, body []byte, table string) []string {
	t.Helper()
	var out []string
	for _, it := range putItems(t, body, table) {
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

// itemKey is the PK|SK of an item in DynamoDB JSON.
func itemKey(t testing.TB, item json.RawMessage) string {
	t.Helper()
	var k struct{ PK, SK struct{ S string } }
	if err := json.Unmarshal(item, &k); err != nil {
		t.Fatal(err)
	}
	return k.PK.S + "|" + k.SK.S
}

// holdBack makes the server write only the first half of the items of each
// of the next n BatchWriteItem requests that have more than one: it sends
// the server the request without the rest and adds the rest to the
// server's response as UnprocessedItems, as DynamoDB does when it throttles
// part of a batch. held counts the items held back.
func holdBack(t testing.TB, n int, held *int) awstest.Rule {
	var mu sync.Mutex
	return func(_ *http.Request, body []byte, forward awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
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
		awstest.SetBody(resp, rb)
		return resp, rb, false, nil
	}
}

// processNothing answers every BatchWriteItem request with all its items
// unprocessed, without reaching the server.
func processNothing(req *http.Request, body []byte, _ awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
	var in struct{ RequestItems json.RawMessage }
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, nil, false, err
	}
	out := fmt.Appendf(nil, `{"UnprocessedItems":%s}`, in.RequestItems)
	return awstest.DynamoDBResponse(req, http.StatusOK, out), out, true, nil
}

// ---- setup

// newWireDynamo returns a DynamoDB client for the test server whose
// requests go through an awstest.Wire, and the wire. The client keeps the
// SDK's standard retryer, without the waits between its attempts.
func newWireDynamo(t *testing.T) (*dynamodb.Client, *awstest.Wire) {
	t.Helper()
	w := &awstest.Wire{Next: http.DefaultClient}
	cfg := awstest.Config(t)
	cfg.HTTPClient = w
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	}
	return dynamodb.NewFromConfig(cfg), w
}

// newTable creates a PK/SK table on the test server, deleted after the test.
func newTable(t *testing.T) string {
	t.Helper()
	name := awstest.UniqueName(t, "export")
	awstest.CreateTable(t.Context(), t, awstest.DynamoDB(t), name, false)
	return name
}

// tableLines scans a table on the test server and returns its items as
// export lines ({"Item":...}), sorted: comparable byte for byte with
// expectedLines.
func tableLines(t *testing.T, table string) []string {
	t.Helper()
	var lines []string
	p := dynamodb.NewScanPaginator(awstest.DynamoDB(t), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
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

// wantLines returns the sorted expected lines of the given segments (all
// of them if none are given).
func wantLines(lines map[string][]string, segs ...string) []string {
	var out []string
	for seg, ls := range lines {
		if len(segs) == 0 || slices.Contains(segs, seg) {
			out = append(out, ls...)
		}
	}
	sort.Strings(out)
	return out
}

// sameLines compares a table's lines with the expected ones.
func sameLines(t *testing.T, got, want []string) {
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

// newBucket creates a bucket on the test server, emptied and deleted after
// the test.
func newBucket(t *testing.T) (*s3.Client, string) {
	t.Helper()
	c := awstest.S3(t)
	name := awstest.UniqueName(t, "export")
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Errorf("emptying bucket %s: %v", name, err)
				return
			}
			var ids []s3types.ObjectIdentifier
			for _, o := range page.Contents {
				ids = append(ids, s3types.ObjectIdentifier{Key: o.Key})
			}
			if len(ids) > 0 {
				if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(name), Delete: &s3types.Delete{Objects: ids}}); err != nil {
					t.Errorf("emptying bucket %s: %v", name, err)
					return
				}
			}
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("deleting bucket %s: %v", name, err)
		}
	})
	return c, name
}

// itemSize is an item's size as DynamoDB counts it for write units:
// attribute names plus values (strings and binaries by length, numbers by
// about one byte per two significant digits plus one, 1 for a boolean or
// null, 3 plus one per element for lists and maps), from its DynamoDB JSON.
func itemSize(t testing.TB, item json.RawMessage) int {
	t.Helper()
	var m map[string]map[string]json.RawMessage
	if err := json.Unmarshal(item, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, v := range m {
		n += len(name) + valueSize(t, v)
	}
	return n
}

func valueSize(t testing.TB, v map[string]json.RawMessage) int {
	t.Helper()
	str := func(raw json.RawMessage) string {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	strs := func(raw json.RawMessage) []string {
		var s []string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	num := func(s string) int { return (len(strings.TrimLeft(s, "-0."))+1)/2 + 1 }
	bin := func(s string) int { return len(s)/4*3 - strings.Count(s[max(len(s)-2, 0):], "=") }
	for typ, raw := range v {
		switch typ {
		case "S":
			return len(str(raw))
		case "N":
			return num(str(raw))
		case "B":
			return bin(str(raw))
		case "BOOL", "NULL":
			return 1
		case "SS", "NS", "BS":
			n := 0
			for _, s := range strs(raw) {
				switch typ {
				case "SS":
					n += len(s)
				case "NS":
					n += num(s)
				default:
					n += bin(s)
				}
			}
			return n
		case "M":
			var m map[string]map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			n := 3
			for k, e := range m {
				n += len(k) + valueSize(t, e) + 1
			}
			return n
		case "L":
			var l []map[string]json.RawMessage
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			n := 3
			for _, e := range l {
				n += valueSize(t, e) + 1
			}
			return n
		}
	}
	t.Fatalf("attribute value %v of no known type", v)
	return 0
}

// writeUnits is the write units of putting item: one per started KB.
func writeUnits(t testing.TB, item json.RawMessage) float64 {
	return float64((itemSize(t, item) + 1023) / 1024)
}

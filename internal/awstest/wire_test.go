package awstest

// Wire between a real DynamoDB client and a local HTTP server standing in
// for the test server: these tests need no AWS-protocol server.

import (
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"
)

// fakeServer answers every request with the JSON body {"Item":{"PK":{"S":
// <the request's X-Amz-Target>}}}, with DynamoDB's CRC32 header, and keeps
// the request bodies it got.
type fakeServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newFakeServer(t *testing.T) *fakeServer {
	s := &fakeServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		out := []byte(`{"Item":{"PK":{"S":` + strconv.Quote(r.Header.Get("X-Amz-Target")) + `}}}`)
		rw.Header().Set("Content-Type", "application/x-amz-json-1.0")
		rw.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(out)), 10))
		if _, err := rw.Write(out); err != nil {
			t.Errorf("answering: %v", err)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fakeServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// wireClient returns a DynamoDB client for srv whose requests go through w
// and that fails t on anything the SDK logs, such as a CRC32 mismatch.
func wireClient(t *testing.T, srv *fakeServer, w *Wire) *dynamodb.Client {
	return dynamodb.NewFromConfig(aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(srv.URL),
		HTTPClient:   w,
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
		Logger: logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			t.Errorf("SDK log %s: "+format, append([]any{c}, v...)...)
		}),
	})
}

func getPK(t *testing.T, c *dynamodb.Client, table string) (string, error) {
	t.Helper()
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key:       map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "k"}},
	})
	if err != nil {
		return "", err
	}
	pk, _ := out.Item["PK"].(*ddbtypes.AttributeValueMemberS)
	if pk == nil {
		t.Fatalf("GetItem item %v", out.Item)
	}
	return pk.Value, nil
}

func TestWireForwardsAndRecords(t *testing.T) {
	srv := newFakeServer(t)
	w := &Wire{} // http.DefaultClient
	c := wireClient(t, srv, w)

	pk, err := getPK(t, c, "t1")
	if err != nil || pk != "DynamoDB_20120810.GetItem" {
		t.Fatalf("GetItem = %q, %v", pk, err)
	}
	calls := w.Recorded()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	got := calls[0]
	if got.Op != "GetItem" || got.Status != http.StatusOK || got.Injected ||
		!strings.Contains(string(got.Req), `"TableName":"t1"`) || string(got.Sent) != string(got.Req) ||
		!strings.Contains(string(got.Resp), "DynamoDB_20120810.GetItem") {
		t.Errorf("call %+v", got)
	}
	if b := srv.got(); len(b) != 1 || b[0] != string(got.Req) {
		t.Errorf("server got %q, want the request body %q", b, got.Req)
	}
	if calls := w.Recorded("PutItem"); len(calls) != 0 {
		t.Errorf("Recorded(PutItem) = %+v, want none", calls)
	}
	w.Reset()
	if calls := w.Recorded(); len(calls) != 0 {
		t.Errorf("after Reset: %+v", calls)
	}
}

func TestWireFail(t *testing.T) {
	srv := newFakeServer(t)
	w := &Wire{Next: http.DefaultClient}
	c := wireClient(t, srv, w)

	w.On("PutItem", Fail(DynamoDBErrorBody("ConditionalCheckFailedException", "The conditional request failed", `"Item":{"PK":{"S":"old"}}`)))
	put := &dynamodb.PutItemInput{
		TableName: aws.String("t1"),
		Item:      map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "k"}},
	}
	_, err := c.PutItem(t.Context(), put)
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("PutItem = %v, want ConditionalCheckFailedException", err)
	}
	if pk, _ := ccf.Item["PK"].(*ddbtypes.AttributeValueMemberS); pk == nil || pk.Value != "old" || ccf.ErrorMessage() != "The conditional request failed" {
		t.Errorf("exception %+v", ccf)
	}
	if b := srv.got(); len(b) != 0 {
		t.Errorf("the server got %q", b)
	}
	calls := w.Recorded("PutItem")
	if len(calls) != 1 || !calls[0].Injected || calls[0].Status != http.StatusBadRequest || calls[0].Sent != nil {
		t.Fatalf("calls %+v, want one injected 400 that was not sent", calls)
	}

	// Other operations still reach the server.
	if _, err := getPK(t, c, "t1"); err != nil {
		t.Fatal(err)
	}
	// A nil rule removes the operation's rule.
	w.On("PutItem", nil)
	if _, err := c.PutItem(t.Context(), put); err != nil {
		t.Fatalf("PutItem without a rule: %v", err)
	}
	if n := len(srv.got()); n != 2 {
		t.Errorf("the server got %d requests, want 2", n)
	}
	// Reset forgets the rules too.
	w.On("GetItem", Fail(DynamoDBErrorBody("ValidationException", "no", "")))
	w.Reset()
	if _, err := getPK(t, c, "t1"); err != nil {
		t.Fatalf("GetItem after Reset: %v", err)
	}
}

// TestWireRewrites checks a rule that rewrites both the request it forwards
// and the server's response: the SDK takes the new body without a checksum
// warning (SetBody fixes its CRC32), and the call records both request
// bodies.
func TestWireRewrites(t *testing.T) {
	srv := newFakeServer(t)
	w := &Wire{Next: http.DefaultClient}
	c := wireClient(t, srv, w)
	w.On("GetItem", func(_ *http.Request, body []byte, forward ForwardFunc) (*http.Response, []byte, bool, error) {
		resp, rb, err := forward([]byte(strings.Replace(string(body), `"t1"`, `"t2"`, 1)))
		if err != nil {
			return nil, nil, false, err
		}
		rb = []byte(strings.Replace(string(rb), "GetItem", "Rewritten", 1))
		SetBody(resp, rb)
		return resp, rb, false, nil
	})
	pk, err := getPK(t, c, "t1")
	if err != nil || pk != "DynamoDB_20120810.Rewritten" {
		t.Fatalf("GetItem = %q, %v", pk, err)
	}
	calls := w.Recorded("GetItem")
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	got := calls[0]
	if !strings.Contains(string(got.Req), `"t1"`) || !strings.Contains(string(got.Sent), `"t2"`) || got.Injected ||
		!strings.Contains(string(got.Resp), "Rewritten") {
		t.Errorf("call %+v", got)
	}
	if b := srv.got(); len(b) != 1 || b[0] != string(got.Sent) {
		t.Errorf("server got %q, want %q", b, got.Sent)
	}
}

func TestWireOperation(t *testing.T) {
	srv := newFakeServer(t)
	w := &Wire{}
	for target, want := range map[string]string{
		"DynamoDB_20120810.Query":             "Query",
		"DynamoDBStreams_20120810.GetRecords": "GetRecords",
		"Kinesis_20131202.PutRecord":          "PutRecord",
		"":                                    "",
	} {
		w.Reset()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if target != "" {
			req.Header.Set("X-Amz-Target", target)
		}
		resp, err := w.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if cerr := resp.Body.Close(); err != nil || cerr != nil {
			t.Fatal(err, cerr)
		}
		calls := w.Recorded()
		if len(calls) != 1 || calls[0].Op != want || string(calls[0].Resp) != string(b) {
			t.Errorf("X-Amz-Target %q: calls %+v, body %s; want operation %q", target, calls, b, want)
		}
	}
}

func TestDynamoDBErrorBody(t *testing.T) {
	for _, c := range []struct{ code, message, extra, want string }{
		{"ThrottlingException", "Rate exceeded", "",
			`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}`},
		{"TransactionCanceledException", `say "no"`, `"CancellationReasons":[{"Code":"None"}]`,
			`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"say \"no\"","CancellationReasons":[{"Code":"None"}]}`},
	} {
		if got := DynamoDBErrorBody(c.code, c.message, c.extra); got != c.want {
			t.Errorf("DynamoDBErrorBody(%q, %q, %q) = %s, want %s", c.code, c.message, c.extra, got, c.want)
		}
	}
}

func TestDynamoDBResponse(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	resp := DynamoDBResponse(req, http.StatusBadRequest, []byte(`{"a":1}`))
	check := func(body string) {
		t.Helper()
		crc := strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)
		if resp.ContentLength != int64(len(body)) || resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) || resp.Header.Get("X-Amz-Crc32") != crc {
			t.Errorf("length %d, headers %v; want length %d, CRC32 %s", resp.ContentLength, resp.Header, len(body), crc)
		}
	}
	if resp.StatusCode != http.StatusBadRequest || resp.Status != "400 Bad Request" || resp.Request != req ||
		resp.Header.Get("Content-Type") != "application/x-amz-json-1.0" || resp.Header.Get("X-Amzn-Requestid") == "" {
		t.Errorf("response %+v", resp)
	}
	check(`{"a":1}`)
	SetBody(resp, []byte(`{"b":[1,2]}`))
	check(`{"b":[1,2]}`)
}

package awstest

// The wire: an HTTP client for tests that watch an AWS SDK client's requests
// as they go out, and that make the test server's answers look like those
// the real service gives under load, which the test server never produces.

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Call is one request seen by a [Wire], with the response the SDK got.
type Call struct {
	Op       string // operation: X-Amz-Target after its last '.', "PutItem" ("" without the header)
	Req      []byte // request body as the SDK sent it
	Sent     []byte // request body as the server got it (nil: not sent)
	Status   int    // HTTP status code of the response
	Resp     []byte // response body as the SDK received it
	Injected bool   // answered by a rule without reaching the server
}

// ForwardFunc sends a request body to the server in place of the original
// one and returns the server's response and body. A [Rule] calls it to
// reach the server, with the request's body or a rewritten one.
type ForwardFunc func(body []byte) (*http.Response, []byte, error)

// Rule answers one request of an operation, calling forward to reach the
// server if it needs to: it can answer by itself (an error the server never
// gives), rewrite the request before forwarding it, or rewrite the server's
// response (then with [SetBody]). It reports whether the server was left
// out, which the [Call] records as Injected.
type Rule func(req *http.Request, body []byte, forward ForwardFunc) (resp *http.Response, respBody []byte, injected bool, err error)

// Wire is an aws.HTTPClient to put in an SDK client's config (HTTPClient)
// between the SDK and the test server. It passes every request on to Next,
// except for the operations that have a rule (see [Wire.On]), and records
// the request and response bodies of all of them (see [Wire.Recorded]), so
// that a test can check what the code under test sends and how it handles
// answers, with nothing below the HTTP layer faked.
//
// The operation of a request is its X-Amz-Target header after the last '.'
// ("DynamoDB_20120810.PutItem" is "PutItem"): the JSON protocols of
// DynamoDB, DynamoDB Streams and Kinesis. The zero Wire forwards to
// http.DefaultClient. A Wire is safe for concurrent use.
type Wire struct {
	// Next sends the requests on to the test server; nil means
	// http.DefaultClient.
	Next aws.HTTPClient

	mu    sync.Mutex
	calls []Call
	rules map[string]Rule
}

// Do sends req through the rule of its operation, or on to Next if it has
// none, and records it. It implements aws.HTTPClient.
func (w *Wire) Do(req *http.Request) (*http.Response, error) {
	target := req.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		if cerr := req.Body.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	next := w.Next
	if next == nil {
		next = http.DefaultClient
	}
	var sent []byte
	forward := func(b []byte) (*http.Response, []byte, error) {
		sent = b
		out := req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(b))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		out.ContentLength = int64(len(b))
		resp, err := next.Do(out)
		if err != nil {
			return nil, nil, err
		}
		rb, err := io.ReadAll(resp.Body)
		if cerr := resp.Body.Close(); err == nil {
			err = cerr
		}
		return resp, rb, err
	}

	w.mu.Lock()
	r := w.rules[op]
	w.mu.Unlock()
	var (
		resp     *http.Response
		rb       []byte
		injected bool
		err      error
	)
	if r != nil {
		resp, rb, injected, err = r(req, body, forward)
	} else {
		resp, rb, err = forward(body)
	}
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.calls = append(w.calls, Call{Op: op, Req: body, Sent: sent, Status: resp.StatusCode, Resp: rb, Injected: injected})
	w.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	return resp, nil
}

// On makes r answer the requests of operation op from now on; a nil r
// removes op's rule, so that its requests go to the server again.
func (w *Wire) On(op string, r Rule) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r == nil {
		delete(w.rules, op)
		return
	}
	if w.rules == nil {
		w.rules = map[string]Rule{}
	}
	w.rules[op] = r
}

// Reset forgets the recorded calls and all rules: a test calls it before
// the requests it means to check, after its setup's.
func (w *Wire) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls, w.rules = nil, nil
}

// Recorded returns the calls recorded since the last [Wire.Reset], in the
// order they completed: all of them, or those of the given operations.
func (w *Wire) Recorded(ops ...string) []Call {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Call
	for _, c := range w.calls {
		if len(ops) == 0 || slices.Contains(ops, c.Op) {
			out = append(out, c)
		}
	}
	return out
}

// DynamoDBResponse makes a response to req the way DynamoDB sends one: JSON
// 1.0 with a request id, the body's length and its CRC32 (see [SetBody]).
func DynamoDBResponse(req *http.Request, status int, body []byte) *http.Response {
	resp := &http.Response{
		StatusCode: status,
		Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":     {"application/x-amz-json-1.0"},
			"X-Amzn-Requestid": {"wire-test"},
		},
		Request: req,
	}
	SetBody(resp, body)
	return resp
}

// SetBody updates the length and CRC32 headers of resp for body. A [Rule]
// that rewrites the server's response body calls it so that the response
// stays what DynamoDB would send: the SDK checks the CRC32 as it closes the
// body, and logs a warning on a mismatch.
func SetBody(resp *http.Response, body []byte) {
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
}

// DynamoDBErrorBody is a DynamoDB JSON error body of code (the exception's
// name, "ThrottlingException") and message, plus the members in extra (a
// JSON object's members, without braces; "" for none), such as a
// TransactionCanceledException's CancellationReasons.
func DynamoDBErrorBody(code, message, extra string) string {
	b := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q`, code, message)
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// Fail is a [Rule] that answers every request with an HTTP 400 DynamoDB
// error whose body is body (see [DynamoDBErrorBody]), without reaching the
// server.
func Fail(body string) Rule {
	return func(req *http.Request, _ []byte, _ ForwardFunc) (*http.Response, []byte, bool, error) {
		b := []byte(body)
		return DynamoDBResponse(req, http.StatusBadRequest, b), b, true, nil
	}
}

package shardreadtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Wire is an HTTP client for an SDK client that passes requests on to the
// test server, except calls it is told to answer itself with the error a
// service gives under load or over time (throttling, an expired iterator),
// which test servers never produce. Nothing below the HTTP layer is faked:
// the SDK parses the error from the wire as it would the service's.
type Wire struct {
	// Next sends requests on; nil: a default SDK HTTP client.
	Next aws.HTTPClient
	// Inject returns the error code to answer the n-th call (from 1) of op
	// (e.g. "GetRecords") with, or "" to pass it on.
	Inject func(op string, n int) string
	// Answer, when set, may answer a call that Inject passed on: it gets
	// the call's operation, number and request body, and forward, which
	// sends the request to the server and returns the response body. It
	// returns the body to answer with (status 200) and true, or false to
	// let the server's answer through.
	Answer func(op string, n int, req []byte, forward func() ([]byte, error)) ([]byte, bool, error)

	mu       sync.Mutex
	calls    map[string]int
	injected map[string]int
}

// Do implements aws.HTTPClient.
func (w *Wire) Do(req *http.Request) (*http.Response, error) {
	target := req.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	w.mu.Lock()
	if w.calls == nil {
		w.calls, w.injected = map[string]int{}, map[string]int{}
	}
	w.calls[op]++
	n := w.calls[op]
	code := ""
	if w.Inject != nil {
		code = w.Inject(op, n)
	}
	if code != "" {
		w.injected[op]++
	}
	next := w.Next
	w.mu.Unlock()
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	var reqBody []byte
	if req.Body != nil {
		var err error
		reqBody, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	if code != "" {
		body := fmt.Sprintf(`{"__type":%q,"message":"injected by the test: %s"}`, code, code)
		return respond(req, http.StatusBadRequest, code, []byte(body)), nil
	}
	forward := func() (*http.Response, []byte, error) {
		out := req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(reqBody))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
		out.ContentLength = int64(len(reqBody))
		resp, err := next.Do(out)
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(resp.Body)
		if cerr := resp.Body.Close(); err == nil {
			err = cerr
		}
		return resp, b, err
	}
	if w.Answer != nil {
		var resp *http.Response
		body, ok, err := w.Answer(op, n, reqBody, func() ([]byte, error) {
			var b []byte
			var err error
			resp, b, err = forward()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("server answered %s: %s", resp.Status, b)
			}
			return b, err
		})
		if err != nil {
			return nil, err
		}
		if ok {
			return respond(req, http.StatusOK, "", body), nil
		}
		if resp != nil {
			return respond(req, resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), body), nil
		}
	}
	resp, body, err := forward()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// respond makes a JSON-protocol response; errType names a service error.
func respond(req *http.Request, status int, errType string, body []byte) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.1")
	if errType != "" {
		h.Set("X-Amzn-Errortype", errType)
	}
	h.Set("X-Amzn-Requestid", "wire")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// Injected returns how many calls of op were answered with an error.
func (w *Wire) Injected(op string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.injected[op]
}

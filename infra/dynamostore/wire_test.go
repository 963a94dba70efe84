package dynamostore

// Integration tests that watch the store's requests on the wire. The store
// uses a real *dynamodb.Client whose HTTP client (an awstest.Wire) sits
// between the SDK and the AWS-protocol test server: it records the JSON
// bodies of every request and response, and can answer selected operations
// itself with the responses DynamoDB gives under load (throttling, cancelled
// transactions, unprocessed keys), which the test server never produces.
// Nothing below the HTTP layer is faked.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

var (
	_ API      = (*dynamodb.Client)(nil)
	_ tableAPI = (*dynamodb.Client)(nil)
)

// holdBack makes the server process all but the last n keys of each table in
// a BatchGetItem request: it sends the server the request without them and
// returns them in the response's UnprocessedKeys, as DynamoDB does when it
// throttles part of a batch.
func holdBack(n int) awstest.Rule {
	return func(_ *http.Request, body []byte, forward awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
		in, err := decodeErr(body)
		if err != nil {
			return nil, nil, false, err
		}
		requestItems, _ := in.(map[string]any)["RequestItems"].(map[string]any)
		unprocessed := map[string]any{}
		for table, v := range requestItems {
			ka := v.(map[string]any)
			keys := ka["Keys"].([]any)
			if len(keys) <= n {
				continue
			}
			kept, held := map[string]any{}, map[string]any{}
			for k, v := range ka {
				kept[k], held[k] = v, v
			}
			kept["Keys"], held["Keys"] = keys[:len(keys)-n], keys[len(keys)-n:]
			requestItems[table] = kept
			unprocessed[table] = held
		}
		sent, err := json.Marshal(in)
		if err != nil {
			return nil, nil, false, err
		}
		resp, rb, err := forward(sent)
		if err != nil || resp.StatusCode != http.StatusOK || len(unprocessed) == 0 {
			return resp, rb, false, err
		}
		out, err := decodeErr(rb)
		if err != nil {
			return nil, nil, false, err
		}
		out.(map[string]any)["UnprocessedKeys"] = unprocessed
		if rb, err = json.Marshal(out); err != nil {
			return nil, nil, false, err
		}
		awstest.SetBody(resp, rb)
		return resp, rb, false, nil
	}
}

// processNothing answers every BatchGetItem request with all its keys
// unprocessed, without reaching the server.
func processNothing(req *http.Request, body []byte, _ awstest.ForwardFunc) (*http.Response, []byte, bool, error) {
	in, err := decodeErr(body)
	if err != nil {
		return nil, nil, false, err
	}
	out, err := json.Marshal(map[string]any{"Responses": map[string]any{}, "UnprocessedKeys": in.(map[string]any)["RequestItems"]})
	if err != nil {
		return nil, nil, false, err
	}
	return awstest.DynamoDBResponse(req, http.StatusOK, out), out, true, nil
}

// ---- JSON documents

func decodeErr(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode %s: %w", b, err)
	}
	return v, nil
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	v, err := decodeErr(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// at returns the value at path in doc: names of object members and indices
// of array elements, separated by '/'.
func at(doc any, path string) (any, bool) {
	v := doc
	for _, p := range strings.Split(path, "/") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func canon(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantJSON checks that the value at path in doc is the JSON want (compared
// canonically: member order and spacing do not matter); want "" means that
// there is no value at path.
func wantJSON(t *testing.T, doc any, path, want string) {
	t.Helper()
	got, ok := at(doc, path)
	switch {
	case want == "" && ok:
		t.Errorf("%s = %s, want it absent", path, canon(t, got))
	case want == "":
	case !ok:
		t.Errorf("%s is absent, want %s", path, want)
	default:
		if g, w := canon(t, got), canon(t, decode(t, []byte(want))); g != w {
			t.Errorf("%s = %s, want %s", path, g, w)
		}
	}
}

// ---- setup

// newWireStore creates a table on the test server and returns a Store on it
// whose client goes through an awstest.Wire and never retries, and the
// client itself.
func newWireStore(t *testing.T) (*Store, *awstest.Wire, *dynamodb.Client) {
	t.Helper()
	w := &awstest.Wire{Next: http.DefaultClient}
	cfg := awstest.Config(t)
	cfg.HTTPClient = w
	cfg.RetryMaxAttempts = 1
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	client := dynamodb.NewFromConfig(cfg)
	table := awstest.UniqueName(t, "dynamostore")
	if err := CreateTable(t.Context(), client, table); err != nil {
		t.Fatal(err)
	}
	awstest.DeleteTableAtEnd(t, client, table) // gone already is no error (a retried DeleteTable)
	t.Cleanup(w.Reset)
	w.Reset()
	return New(client, table), w, client
}

// only returns the one recorded call, which must be of operation op.
func only(t *testing.T, w *awstest.Wire, op string) awstest.Call {
	t.Helper()
	calls := w.Recorded()
	if len(calls) != 1 || calls[0].Op != op {
		ops := make([]string, len(calls))
		for i, c := range calls {
			ops[i] = c.Op
		}
		t.Fatalf("requests %v, want one %s", ops, op)
	}
	return calls[0]
}

func wantEntry(t *testing.T, got map[string]driver.LedgerEntry, key string, rev int64, body []byte) {
	t.Helper()
	e, ok := got[key]
	if !ok || e.Rev != rev || !bytes.Equal(e.Body, body) {
		t.Errorf("ledger %q = %+v (present %v), want rev %d body %q", key, e, ok, rev, body)
	}
}

func getItem(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	res, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Item
}

// ---- tests

// TestIntegrationSingleLedgerPut checks the single-write path: a Tx of one
// ledger put is one conditional PutItem, and a failed condition reports the
// stored entry from the ConditionalCheckFailedException's item.
func TestIntegrationSingleLedgerPut(t *testing.T) {
	s, w, client := newWireStore(t)
	ctx := t.Context()
	table := s.Table()
	put := func(l driver.LedgerPut) (any, error) {
		t.Helper()
		w.Reset()
		err := s.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{l}})
		c := only(t, w, "PutItem")
		return decode(t, c.Req), err
	}

	// Create.
	req, err := put(driver.LedgerPut{Key: "ORDER#1", ExpectRev: 0, Body: []byte{0, 1, 0xff}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	wantJSON(t, req, "TableName", strconv.Quote(table))
	wantJSON(t, req, "ConditionExpression", `"attribute_not_exists(#pk)"`)
	wantJSON(t, req, "ExpressionAttributeNames", `{"#pk":"PK"}`)
	wantJSON(t, req, "ExpressionAttributeValues", "")
	wantJSON(t, req, "ReturnValuesOnConditionCheckFailure", `"ALL_OLD"`)
	wantJSON(t, req, "Item", `{"PK":{"S":"L#ORDER#1"},"SK":{"S":"L"},"rev":{"N":"1"},"ledger":{"B":"AAH/"}}`)
	got, err := s.ReadLedgers(ctx, []string{"ORDER#1"})
	if err != nil {
		t.Fatal(err)
	}
	wantEntry(t, got, "ORDER#1", 1, []byte{0, 1, 0xff})

	// Update.
	req, err = put(driver.LedgerPut{Key: "ORDER#1", ExpectRev: 1, Body: []byte("v2"), ExpiresAt: 1900000000})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	wantJSON(t, req, "ConditionExpression", `"#rev = :rev"`)
	wantJSON(t, req, "ExpressionAttributeNames", `{"#rev":"rev"}`)
	wantJSON(t, req, "ExpressionAttributeValues", `{":rev":{"N":"1"}}`)
	wantJSON(t, req, "ReturnValuesOnConditionCheckFailure", `"ALL_OLD"`)
	wantJSON(t, req, "Item", `{"PK":{"S":"L#ORDER#1"},"SK":{"S":"L"},"rev":{"N":"2"},"ledger":{"B":"djI="},"ttl":{"N":"1900000000"}}`)
	item := getItem(t, client, table, ledgerKey("ORDER#1"))
	checkN(t, item, "rev", "2")
	checkN(t, item, "ttl", "1900000000")
	checkS(t, item, "SK", "L")

	// An empty body is no ledger attribute.
	if req, err = put(driver.LedgerPut{Key: "ORDER#empty"}); err != nil {
		t.Fatalf("create empty: %v", err)
	}
	wantJSON(t, req, "Item", `{"PK":{"S":"L#ORDER#empty"},"SK":{"S":"L"},"rev":{"N":"1"}}`)

	// Conflicts.
	for _, c := range []struct {
		name string
		put  driver.LedgerPut
		want driver.LedgerEntry
	}{
		{"CreateExisting", driver.LedgerPut{Key: "ORDER#1", ExpectRev: 0, Body: []byte("x")}, driver.LedgerEntry{Rev: 2, Body: []byte("v2")}},
		{"StaleRev", driver.LedgerPut{Key: "ORDER#1", ExpectRev: 1, Body: []byte("x")}, driver.LedgerEntry{Rev: 2, Body: []byte("v2")}},
		{"RevAhead", driver.LedgerPut{Key: "ORDER#1", ExpectRev: 3, Body: []byte("x")}, driver.LedgerEntry{Rev: 2, Body: []byte("v2")}},
		{"EmptyBody", driver.LedgerPut{Key: "ORDER#empty", ExpectRev: 0, Body: []byte("x")}, driver.LedgerEntry{Rev: 1}},
		{"UpdateMissing", driver.LedgerPut{Key: "ORDER#absent", ExpectRev: 5, Body: []byte("x")}, driver.LedgerEntry{}},
	} {
		t.Run("Conflict/"+c.name, func(t *testing.T) {
			_, err := put(c.put)
			var ce *driver.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Commit = %v, want *projections.ConflictError", err)
			}
			if errors.Is(err, driver.ErrContention) {
				t.Errorf("conflict also matches ErrContention: %v", err)
			}
			if len(ce.Current) != 1 {
				t.Errorf("Current = %v, want only %q", ce.Current, c.put.Key)
			}
			wantEntry(t, ce.Current, c.put.Key, c.want.Rev, c.want.Body)
			resp := decode(t, w.Recorded()[0].Resp)
			wantJSON(t, resp, "__type", `"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"`)
		})
	}
	got, err = s.ReadLedgers(ctx, []string{"ORDER#1", "ORDER#empty", "ORDER#absent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("after the conflicts: %v, want ORDER#1 and ORDER#empty only", got)
	}
	wantEntry(t, got, "ORDER#1", 2, []byte("v2"))
	wantEntry(t, got, "ORDER#empty", 1, nil)

	// Any other single action, and a ledger put with anything else, is a
	// transaction.
	for name, tx := range map[string]*driver.Tx{
		"ledger and add": {
			Ledgers: []driver.LedgerPut{{Key: "ORDER#3", Body: []byte("b")}},
			Adds:    []driver.Add{{Ref: driver.AggregateRef{Projection: "p", Key: "k"}, Values: map[string]decimal.Decimal{"n": decimal.FromInt(1)}}},
		},
		"two ledgers": {Ledgers: []driver.LedgerPut{{Key: "ORDER#4"}, {Key: "ORDER#5"}}},
		"add":         {Adds: []driver.Add{{Ref: driver.AggregateRef{Projection: "p", Key: "k"}, Values: map[string]decimal.Decimal{"n": decimal.FromInt(1)}}}},
		"row put":     {Puts: []driver.RowPut{{Ref: driver.RowRef{Projection: "p", Partition: "a", Sort: "b"}}}},
		"row delete":  {Deletes: []driver.RowDelete{{Ref: driver.RowRef{Projection: "p", Partition: "a", Sort: "b"}}}},
	} {
		t.Run("Transaction/"+name, func(t *testing.T) {
			w.Reset()
			if err := s.Commit(ctx, tx); err != nil {
				t.Fatal(err)
			}
			only(t, w, "TransactWriteItems")
		})
	}
}

// TestIntegrationTransactWriteRequest checks the TransactWriteItems request of
// a Tx with every kind of action.
func TestIntegrationTransactWriteRequest(t *testing.T) {
	s, w, _ := newWireStore(t)
	ctx := t.Context()
	if err := s.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "ORDER#2", Body: []byte("old")}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &driver.Tx{Puts: []driver.RowPut{{
		Ref: driver.RowRef{Projection: "board", Partition: "S#1", Sort: "R#8"}, Attrs: pipeline.Item{"player": &types.AttributeValueMemberS{Value: "u0"}},
	}}}); err != nil {
		t.Fatal(err)
	}
	tx := &driver.Tx{
		Ledgers: []driver.LedgerPut{
			{Key: "ORDER#1", ExpectRev: 0, Body: []byte{1, 2}},
			{Key: "ORDER#2", ExpectRev: 1, Body: []byte{3}, ExpiresAt: 1900000000},
		},
		Adds: []driver.Add{{
			Ref: driver.AggregateRef{Projection: "totals", Key: "DAY#2026-11-30", Shard: 3},
			Values: map[string]decimal.Decimal{
				"count":  decimal.FromInt(2),
				"amount": decimal.MustParse("-10.50"),
			},
		}},
		Puts: []driver.RowPut{{
			Ref:   driver.RowRef{Projection: "board", Partition: "S#1", Sort: "R#9"},
			Attrs: pipeline.Item{"player": &types.AttributeValueMemberS{Value: "u1"}},
		}},
		Deletes: []driver.RowDelete{{Ref: driver.RowRef{Projection: "board", Partition: "S#1", Sort: "R#8"}}},
	}
	w.Reset()
	if err := s.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	first := only(t, w, "TransactWriteItems")
	req := decode(t, first.Req)
	table := strconv.Quote(s.Table())

	token, _ := at(req, "ClientRequestToken")
	if tok, _ := token.(string); tok == "" {
		t.Errorf("ClientRequestToken = %v, want the SDK's random token", token)
	}
	if items, _ := at(req, "TransactItems"); len(items.([]any)) != 5 {
		t.Fatalf("TransactItems = %s, want 5 actions", canon(t, items))
	}

	wantJSON(t, req, "TransactItems/0/Put/TableName", table)
	wantJSON(t, req, "TransactItems/0/Put/ConditionExpression", `"attribute_not_exists(#pk)"`)
	wantJSON(t, req, "TransactItems/0/Put/ExpressionAttributeNames", `{"#pk":"PK"}`)
	wantJSON(t, req, "TransactItems/0/Put/ExpressionAttributeValues", "")
	wantJSON(t, req, "TransactItems/0/Put/ReturnValuesOnConditionCheckFailure", `"ALL_OLD"`)
	wantJSON(t, req, "TransactItems/0/Put/Item", `{"PK":{"S":"L#ORDER#1"},"SK":{"S":"L"},"rev":{"N":"1"},"ledger":{"B":"AQI="}}`)

	wantJSON(t, req, "TransactItems/1/Put/ConditionExpression", `"#rev = :rev"`)
	wantJSON(t, req, "TransactItems/1/Put/ExpressionAttributeNames", `{"#rev":"rev"}`)
	wantJSON(t, req, "TransactItems/1/Put/ExpressionAttributeValues", `{":rev":{"N":"1"}}`)
	wantJSON(t, req, "TransactItems/1/Put/ReturnValuesOnConditionCheckFailure", `"ALL_OLD"`)
	wantJSON(t, req, "TransactItems/1/Put/Item", `{"PK":{"S":"L#ORDER#2"},"SK":{"S":"L"},"rev":{"N":"2"},"ledger":{"B":"Aw=="},"ttl":{"N":"1900000000"}}`)

	wantJSON(t, req, "TransactItems/2/Update/TableName", table)
	wantJSON(t, req, "TransactItems/2/Update/Key", `{"PK":{"S":"A#totals#DAY#2026-11-30#3"},"SK":{"S":"A"}}`)
	wantJSON(t, req, "TransactItems/2/Update/UpdateExpression", `"ADD #v0 :v0, #v1 :v1 SET #p = :p, #k = :k, #s = :s"`)
	wantJSON(t, req, "TransactItems/2/Update/ExpressionAttributeNames",
		`{"#p":"projection","#k":"key","#s":"shard","#v0":"amount","#v1":"count"}`)
	wantJSON(t, req, "TransactItems/2/Update/ExpressionAttributeValues",
		`{":p":{"S":"totals"},":k":{"S":"DAY#2026-11-30"},":s":{"N":"3"},":v0":{"N":"-10.50"},":v1":{"N":"2"}}`)
	wantJSON(t, req, "TransactItems/2/Update/ConditionExpression", "")

	wantJSON(t, req, "TransactItems/3/Put/TableName", table)
	wantJSON(t, req, "TransactItems/3/Put/Item",
		`{"PK":{"S":"R#board#S#1"},"SK":{"S":"R#9"},"projection":{"S":"board"},"partition":{"S":"S#1"},"sort":{"S":"R#9"},"player":{"S":"u1"}}`)
	wantJSON(t, req, "TransactItems/3/Put/ConditionExpression", "")

	wantJSON(t, req, "TransactItems/4/Delete/TableName", table)
	wantJSON(t, req, "TransactItems/4/Delete/Key", `{"PK":{"S":"R#board#S#1"},"SK":{"S":"R#8"}}`)
	wantJSON(t, req, "TransactItems/4/Delete/ConditionExpression", "")

	// The server applied it.
	got, err := s.ReadLedgers(ctx, []string{"ORDER#1", "ORDER#2"})
	if err != nil {
		t.Fatal(err)
	}
	wantEntry(t, got, "ORDER#1", 1, []byte{1, 2})
	wantEntry(t, got, "ORDER#2", 2, []byte{3})
	var aggs []string
	if err := s.ScanAggregates(ctx, func(ref driver.AggregateRef, v map[string]decimal.Decimal) error {
		aggs = append(aggs, fmt.Sprintf("%s/%s/%d", ref.Projection, ref.Key, ref.Shard))
		if len(v) != 2 || v["amount"].Cmp(decimal.MustParse("-10.5")) != 0 || v["count"].Cmp(decimal.FromInt(2)) != 0 {
			t.Errorf("aggregate %+v = %v, want amount -10.5 count 2", ref, v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(aggs) != "[totals/DAY#2026-11-30/3]" {
		t.Errorf("aggregates %v", aggs)
	}
	rows, err := s.QueryRows(ctx, "board", "S#1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Ref.Sort != "R#9" {
		t.Errorf("rows %+v, want only R#9", rows)
	}

	// The same batch again fails its ledger conditions, and its request
	// carries a new token: the store does not derive one from the batch.
	w.Reset()
	err = s.Commit(ctx, tx)
	var ce *driver.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("second Commit = %v, want *projections.ConflictError", err)
	}
	wantEntry(t, ce.Current, "ORDER#1", 1, []byte{1, 2})
	wantEntry(t, ce.Current, "ORDER#2", 2, []byte{3})
	second := decode(t, only(t, w, "TransactWriteItems").Req)
	if token2, _ := at(second, "ClientRequestToken"); canon(t, token2) == canon(t, token) {
		t.Errorf("both commits of the batch used ClientRequestToken %v", token)
	}
}

// TestIntegrationCommitErrors checks how Commit maps DynamoDB errors, which
// the wire returns in place of the server's answer, with SDK retries off.
func TestIntegrationCommitErrors(t *testing.T) {
	s, w, _ := newWireStore(t)
	ctx := t.Context()

	multi := func() *driver.Tx {
		return &driver.Tx{
			Ledgers: []driver.LedgerPut{{Key: "a", Body: []byte("A")}},
			Adds:    []driver.Add{{Ref: driver.AggregateRef{Projection: "p", Key: "k"}, Values: map[string]decimal.Decimal{"n": decimal.FromInt(1)}}},
		}
	}
	single := func() *driver.Tx {
		return &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "a", Body: []byte("A")}}}
	}
	canceled := func(reasons string) string {
		return awstest.DynamoDBErrorBody("TransactionCanceledException", "Transaction cancelled", `"CancellationReasons":`+reasons)
	}
	const (
		transact = "TransactWriteItems"
		putItem  = "PutItem"
		storedA  = `{"PK":{"S":"L#a"},"SK":{"S":"L"},"rev":{"N":"4"},"ledger":{"B":"Ym9keS1h"}}` // body-a
	)
	tests := []struct {
		name         string
		tx           func() *driver.Tx
		op           string
		body         string
		code         string // the SDK error's code, when not a conflict
		wantContend  bool
		wantRange    bool // a *projections.RangeError on the aggregate
		wantConflict map[string]driver.LedgerEntry
	}{
		{name: "TransactWriteItems/Throttling", tx: multi, op: transact,
			body: `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}`,
			code: "ThrottlingException", wantContend: true},
		{name: "PutItem/Throttling", tx: single, op: putItem,
			body: `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}`,
			code: "ThrottlingException", wantContend: true},
		{name: "TransactWriteItems/CanceledTransactionConflict", tx: multi, op: transact,
			body: `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"Transaction cancelled","CancellationReasons":[{"Code":"TransactionConflict"},{"Code":"None"}]}`,
			code: "TransactionCanceledException", wantContend: true},
		{name: "TransactWriteItems/CanceledThrottlingError", tx: multi, op: transact,
			body: canceled(`[{"Code":"None"},{"Code":"ThrottlingError","Message":"Throughput exceeds the current capacity for one or more global secondary indexes."}]`),
			code: "TransactionCanceledException", wantContend: true},
		{name: "TransactWriteItems/CanceledProvisionedThroughputExceeded", tx: multi, op: transact,
			body: canceled(`[{"Code":"ProvisionedThroughputExceeded"},{"Code":"None"}]`),
			code: "TransactionCanceledException", wantContend: true},
		{name: "TransactWriteItems/CanceledValidationError", tx: multi, op: transact,
			body: canceled(`[{"Code":"ValidationError","Message":"Item size has exceeded the maximum allowed size"},{"Code":"None"}]`),
			code: "TransactionCanceledException"},
		{name: "TransactWriteItems/CanceledNumberOverflow", tx: multi, op: transact,
			body: canceled(`[{"Code":"None"},{"Code":"ValidationError","Message":"Number overflow. Attempting to store a number with magnitude larger than supported range"}]`),
			code: "TransactionCanceledException", wantRange: true},
		{name: "TransactWriteItems/CanceledConditionBesideConflict", tx: multi, op: transact,
			body:         canceled(`[{"Code":"ConditionalCheckFailed","Message":"The conditional request failed","Item":` + storedA + `},{"Code":"TransactionConflict"}]`),
			wantConflict: map[string]driver.LedgerEntry{"a": {Rev: 4, Body: []byte("body-a")}}},
		{name: "TransactWriteItems/CanceledConditionWithoutItem", tx: multi, op: transact,
			body:         canceled(`[{"Code":"ConditionalCheckFailed"},{"Code":"None"}]`),
			wantConflict: map[string]driver.LedgerEntry{"a": {}}},
		{name: "TransactWriteItems/CanceledConditionOnUnconditionedAction", tx: multi, op: transact,
			body: canceled(`[{"Code":"None"},{"Code":"ConditionalCheckFailed"}]`),
			code: "TransactionCanceledException"},
		{name: "TransactWriteItems/TransactionConflictException", tx: multi, op: transact,
			body: awstest.DynamoDBErrorBody("TransactionConflictException", "Transaction is ongoing for the item", ""),
			code: "TransactionConflictException", wantContend: true},
		{name: "TransactWriteItems/ProvisionedThroughputExceeded", tx: multi, op: transact,
			body: awstest.DynamoDBErrorBody("ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded.", ""),
			code: "ProvisionedThroughputExceededException", wantContend: true},
		{name: "TransactWriteItems/RequestLimitExceeded", tx: multi, op: transact,
			body: awstest.DynamoDBErrorBody("RequestLimitExceeded", "Throughput exceeds the current throughput limit for your account.", ""),
			code: "RequestLimitExceeded", wantContend: true},
		{name: "TransactWriteItems/Validation", tx: multi, op: transact,
			body: awstest.DynamoDBErrorBody("ValidationException", "One or more parameter values were invalid", ""),
			code: "ValidationException"},
		{name: "PutItem/TransactionConflictException", tx: single, op: putItem,
			body: awstest.DynamoDBErrorBody("TransactionConflictException", "Transaction is ongoing for the item", ""),
			code: "TransactionConflictException", wantContend: true},
		{name: "PutItem/ProvisionedThroughputExceeded", tx: single, op: putItem,
			body: awstest.DynamoDBErrorBody("ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded.", ""),
			code: "ProvisionedThroughputExceededException", wantContend: true},
		{name: "PutItem/RequestLimitExceeded", tx: single, op: putItem,
			body: awstest.DynamoDBErrorBody("RequestLimitExceeded", "Throughput exceeds the current throughput limit for your account.", ""),
			code: "RequestLimitExceeded", wantContend: true},
		{name: "PutItem/ConditionalCheckFailedWithItem", tx: single, op: putItem,
			body:         awstest.DynamoDBErrorBody("ConditionalCheckFailedException", "The conditional request failed", `"Item":`+storedA),
			wantConflict: map[string]driver.LedgerEntry{"a": {Rev: 4, Body: []byte("body-a")}}},
		{name: "PutItem/Validation", tx: single, op: putItem,
			body: awstest.DynamoDBErrorBody("ValidationException", "One or more parameter values were invalid", ""),
			code: "ValidationException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w.Reset()
			w.On(tt.op, awstest.Fail(tt.body))
			err := s.Commit(ctx, tt.tx())
			if err == nil {
				t.Fatal("Commit succeeded")
			}
			c := only(t, w, tt.op) // one attempt: the store sees the error
			if !c.Injected || c.Status != http.StatusBadRequest {
				t.Errorf("request answered by the server (status %d), want the injected error", c.Status)
			}
			w.Reset()

			var ce *driver.ConflictError
			gotConflict := errors.As(err, &ce)
			if gotConflict != (tt.wantConflict != nil) {
				t.Fatalf("conflict = %v, want %v: %v", gotConflict, tt.wantConflict != nil, err)
			}
			if gotConflict {
				if len(ce.Current) != len(tt.wantConflict) {
					t.Errorf("Current = %v, want %v", ce.Current, tt.wantConflict)
				}
				for k, want := range tt.wantConflict {
					wantEntry(t, ce.Current, k, want.Rev, want.Body)
				}
			} else {
				if apiErr, ok := errors.AsType[smithy.APIError](err); !ok || apiErr.ErrorCode() != tt.code {
					t.Errorf("error %v does not wrap the SDK's %s", err, tt.code)
				}
				if !strings.Contains(err.Error(), strconv.Quote(s.Table())) {
					t.Errorf("error does not name the table: %v", err)
				}
			}
			if re, ok := errors.AsType[*driver.RangeError](err); ok != tt.wantRange || (ok && (re.Ref != tt.tx().Adds[0].Ref || re.Name != "n")) {
				t.Errorf("RangeError %v, want one: %v: %v", re, tt.wantRange, err)
			}
			if got := errors.Is(err, driver.ErrContention); got != tt.wantContend {
				t.Errorf("errors.Is(err, ErrContention) = %v, want %v: %v", got, tt.wantContend, err)
			}

			// Nothing was written.
			got, err := s.ReadLedgers(ctx, []string{"a"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 {
				t.Errorf("ledger entries after a failed commit: %v", got)
			}
			if err := s.ScanAggregates(ctx, func(ref driver.AggregateRef, _ map[string]decimal.Decimal) error {
				t.Errorf("aggregate %+v after a failed commit", ref)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestIntegrationCommitSendsNothing checks the Txs that Commit handles or
// refuses without a request.
func TestIntegrationCommitSendsNothing(t *testing.T) {
	s, w, _ := newWireStore(t)
	for _, tx := range []*driver.Tx{nil, {}, {Ledgers: []driver.LedgerPut{}, Adds: []driver.Add{}}} {
		if err := s.Commit(t.Context(), tx); err != nil {
			t.Errorf("Commit(%+v) = %v, want nil", tx, err)
		}
	}
	big := &driver.Tx{}
	for i := range 60 {
		big.Ledgers = append(big.Ledgers, driver.LedgerPut{Key: fmt.Sprintf("k%03d", i), Body: []byte("b")})
	}
	for i := range 41 {
		big.Adds = append(big.Adds, driver.Add{
			Ref:    driver.AggregateRef{Projection: "p", Key: "k" + strconv.Itoa(i)},
			Values: map[string]decimal.Decimal{"n": decimal.FromInt(1)},
		})
	}
	for name, c := range map[string]struct {
		tx   *driver.Tx
		want string
	}{
		"101 actions": {big, "101 actions"},
		"reserved value name": {&driver.Tx{Adds: []driver.Add{{
			Ref: driver.AggregateRef{Projection: "p", Key: "k"}, Values: map[string]decimal.Decimal{"shard": decimal.FromInt(1)},
		}}}, `"shard" is reserved`},
		"reserved row attribute": {&driver.Tx{Puts: []driver.RowPut{{
			Ref: driver.RowRef{Projection: "p", Partition: "a", Sort: "b"}, Attrs: pipeline.Item{"PK": &types.AttributeValueMemberS{Value: "x"}},
		}}}, `"PK" is reserved`},
		"negative ExpectRev": {&driver.Tx{Ledgers: []driver.LedgerPut{{Key: "a", ExpectRev: -1}}}, "negative ExpectRev"},
	} {
		t.Run(name, func(t *testing.T) {
			err := s.Commit(t.Context(), c.tx)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Commit = %v, want an error mentioning %s", err, c.want)
			}
			if errors.Is(err, driver.ErrContention) {
				t.Errorf("refusal matches ErrContention: %v", err)
			}
		})
	}
	if calls := w.Recorded(); len(calls) != 0 {
		t.Errorf("%d requests, want none", len(calls))
	}
}

// TestIntegrationReadLedgersRetriesUnprocessedKeys reads 250 keys (three
// BatchGetItem chunks) while the server leaves two keys of every request
// unprocessed.
func TestIntegrationReadLedgersRetriesUnprocessedKeys(t *testing.T) {
	s, w, _ := newWireStore(t)
	s.retryBase = time.Microsecond
	ctx := t.Context()
	stored := map[string]driver.LedgerEntry{}
	var keys []string
	tx := &driver.Tx{}
	for i := range 250 {
		k := fmt.Sprintf("k%03d", i)
		keys = append(keys, k)
		if i%3 == 0 {
			continue
		}
		stored[k] = driver.LedgerEntry{Rev: 1, Body: []byte("body " + k)}
		tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: k, Body: []byte("body " + k)})
		if len(tx.Ledgers) == driver.MaxTxActions {
			if err := s.Commit(ctx, tx); err != nil {
				t.Fatal(err)
			}
			tx = &driver.Tx{}
		}
	}
	if err := s.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, "k001") // duplicate

	w.Reset()
	w.On("BatchGetItem", holdBack(2))
	got, err := s.ReadLedgers(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(stored) {
		t.Errorf("%d entries, want %d", len(got), len(stored))
	}
	for k, want := range stored {
		wantEntry(t, got, k, want.Rev, want.Body)
	}

	calls := w.Recorded()
	var sizes []int
	for _, c := range calls {
		if c.Op != "BatchGetItem" {
			t.Fatalf("unexpected %s request", c.Op)
		}
		req := decode(t, c.Req)
		ka, ok := at(req, "RequestItems/"+s.Table())
		if !ok {
			t.Fatalf("request without table %s: %s", s.Table(), c.Req)
		}
		sizes = append(sizes, len(ka.(map[string]any)["Keys"].([]any)))
		path := "RequestItems/" + s.Table() + "/"
		wantJSON(t, req, path+"ConsistentRead", "false")
		wantJSON(t, req, path+"ProjectionExpression", `"#pk, #rev, #ledger"`)
		wantJSON(t, req, path+"ExpressionAttributeNames", `{"#pk":"PK","#rev":"rev","#ledger":"ledger"}`)
	}
	if want := []int{100, 2, 100, 2, 50, 2}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("request sizes %v, want %v", sizes, want)
	}
}

// TestIntegrationReadLedgersGivesUp checks that keys the server never
// processes end in ErrContention after the store's retries, and that the
// backoff honours the context.
func TestIntegrationReadLedgersGivesUp(t *testing.T) {
	s, w, _ := newWireStore(t)
	s.retryBase = time.Microsecond
	w.On("BatchGetItem", processNothing)
	_, err := s.ReadLedgers(t.Context(), []string{"a", "b"})
	if !errors.Is(err, driver.ErrContention) {
		t.Fatalf("ReadLedgers = %v, want ErrContention", err)
	}
	if n := len(w.Recorded("BatchGetItem")); n != s.retryAttempts {
		t.Errorf("%d attempts, want %d", n, s.retryAttempts)
	}

	s.retryBase, s.retryMax = time.Hour, time.Hour
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.ReadLedgers(ctx, []string{"a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadLedgers = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("ReadLedgers returned after %v", d)
	}
}

// TestIntegrationQueryAndScanRequests checks the Query and Scan requests of
// the Reader and how they page: 15 rows of 150 KB are more than two 1 MB pages.
func TestIntegrationQueryAndScanRequests(t *testing.T) {
	s, w, _ := newWireStore(t)
	ctx := t.Context()
	pad := &types.AttributeValueMemberS{Value: strings.Repeat("x", 150_000)}
	const rows = 15
	for i := 0; i < rows; i += 5 {
		tx := &driver.Tx{}
		for j := i; j < i+5; j++ {
			tx.Puts = append(tx.Puts, driver.RowPut{
				Ref:   driver.RowRef{Projection: "big", Partition: "P", Sort: fmt.Sprintf("S%03d", j)},
				Attrs: pipeline.Item{"pad": pad},
			})
		}
		if err := s.Commit(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, &driver.Tx{Adds: []driver.Add{{
		Ref:    driver.AggregateRef{Projection: "p", Key: "k", Shard: 2},
		Values: map[string]decimal.Decimal{"amount": decimal.MustParse("12.5"), "count": decimal.FromInt(3)},
	}}}); err != nil {
		t.Fatal(err)
	}

	// QueryRows asks for what it still needs, page after page.
	w.Reset()
	got, err := s.QueryRows(ctx, "big", "P", 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 || got[0].Ref.Sort != "S014" || got[8].Ref.Sort != "S006" {
		t.Fatalf("QueryRows limit 9: %d rows", len(got))
	}
	if r := got[0]; r.Ref != (driver.RowRef{Projection: "big", Partition: "P", Sort: "S014"}) || len(r.Attrs) != 1 {
		t.Errorf("row = %v %d attributes, want only pad", r.Ref, len(r.Attrs))
	}
	calls := w.Recorded()
	if len(calls) < 2 {
		t.Errorf("QueryRows took %d requests, want a short first page and more", len(calls))
	}
	need := 9
	var lastKey any
	for i, c := range calls {
		if c.Op != "Query" {
			t.Fatalf("unexpected %s request", c.Op)
		}
		req, resp := decode(t, c.Req), decode(t, c.Resp)
		wantJSON(t, req, "TableName", strconv.Quote(s.Table()))
		wantJSON(t, req, "KeyConditionExpression", `"#pk = :pk"`)
		wantJSON(t, req, "ExpressionAttributeNames", `{"#pk":"PK"}`)
		wantJSON(t, req, "ExpressionAttributeValues", `{":pk":{"S":"R#big#P"}}`)
		wantJSON(t, req, "ScanIndexForward", "false")
		wantJSON(t, req, "ConsistentRead", "true")
		wantJSON(t, req, "Limit", strconv.Itoa(need))
		if i == 0 {
			wantJSON(t, req, "ExclusiveStartKey", "")
		} else {
			wantJSON(t, req, "ExclusiveStartKey", canon(t, lastKey))
		}
		count, _ := at(resp, "Count")
		n, err := strconv.Atoi(fmt.Sprint(count))
		if err != nil || n <= 0 {
			t.Fatalf("Query response Count = %v", count)
		}
		need -= n
		lastKey, _ = at(resp, "LastEvaluatedKey")
	}
	if need != 0 {
		t.Errorf("the pages returned %d rows too few", need)
	}

	// Scans filter on the prefix and follow LastEvaluatedKey.
	for _, c := range []struct {
		prefix string
		scan   func() (int, error)
		want   int
	}{
		{"R#", func() (int, error) {
			n := 0
			err := s.ScanRows(ctx, func(driver.StoredRow) error { n++; return nil })
			return n, err
		}, rows},
		{"A#", func() (int, error) {
			var seen []string
			err := s.ScanAggregates(ctx, func(ref driver.AggregateRef, v map[string]decimal.Decimal) error {
				seen = append(seen, fmt.Sprintf("%s/%s/%d amount=%s count=%s n=%d", ref.Projection, ref.Key, ref.Shard, v["amount"], v["count"], len(v)))
				return nil
			})
			if fmt.Sprint(seen) != "[p/k/2 amount=12.5 count=3 n=2]" {
				t.Errorf("ScanAggregates saw %v", seen)
			}
			return len(seen), err
		}, 1},
	} {
		w.Reset()
		n, err := c.scan()
		if err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("scan of %s saw %d items, want %d", c.prefix, n, c.want)
		}
		lastKey = nil
		for i, call := range w.Recorded() {
			if call.Op != "Scan" {
				t.Fatalf("unexpected %s request", call.Op)
			}
			req, resp := decode(t, call.Req), decode(t, call.Resp)
			wantJSON(t, req, "FilterExpression", `"begins_with(#pk, :prefix)"`)
			wantJSON(t, req, "ExpressionAttributeNames", `{"#pk":"PK"}`)
			wantJSON(t, req, "ExpressionAttributeValues", `{":prefix":{"S":"`+c.prefix+`"}}`)
			wantJSON(t, req, "ConsistentRead", "true")
			if i == 0 {
				wantJSON(t, req, "ExclusiveStartKey", "")
			} else {
				wantJSON(t, req, "ExclusiveStartKey", canon(t, lastKey))
			}
			lastKey, _ = at(resp, "LastEvaluatedKey")
		}
		if lastKey != nil {
			t.Errorf("scan of %s stopped before the last page", c.prefix)
		}
	}
}

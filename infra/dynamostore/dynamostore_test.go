package dynamostore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/drivertest"
)

// newTable creates a fresh table with CreateTable on the test server and
// deletes it when the test ends.
func newTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	client := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "dynamostore")
	if err := dynamostore.CreateTable(t.Context(), client, table); err != nil {
		t.Fatal(err)
	}
	// A table already gone is no error: the SDK retries a DeleteTable
	// whose answer was lost, and the retry finds it deleted.
	awstest.DeleteTableAtEnd(t, client, table)
	return client, table
}

func TestIntegrationConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) drivertest.Store {
		client, table := newTable(t)
		return dynamostore.New(&serialAPI{api: client}, table)
	})
}

// serialAPI makes one call at a time. moto's TransactWriteItems is not
// isolated from concurrent requests: it checks conditions and applies writes
// one action at a time without a lock, and a cancelled transaction restores a
// copy of the whole table taken when it started, discarding what other
// requests (PutItem included) wrote meanwhile. DynamoDB serialises
// transactions itself.
type serialAPI struct {
	mu  sync.Mutex
	api dynamostore.API
}

func (s *serialAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api.TransactWriteItems(ctx, in, opts...)
}

func (s *serialAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api.BatchGetItem(ctx, in, opts...)
}

func (s *serialAPI) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api.Query(ctx, in, opts...)
}

func (s *serialAPI) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api.Scan(ctx, in, opts...)
}

func (s *serialAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api.PutItem(ctx, in, opts...)
}

// countingAPI counts the calls made through it.
type countingAPI struct {
	dynamostore.API
	transacts, reads atomic.Int32
}

func (c *countingAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.transacts.Add(1)
	return c.API.TransactWriteItems(ctx, in, opts...)
}

func (c *countingAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.reads.Add(1)
	return c.API.BatchGetItem(ctx, in, opts...)
}

func (c *countingAPI) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.reads.Add(1)
	return c.API.Query(ctx, in, opts...)
}

func (c *countingAPI) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.reads.Add(1)
	return c.API.Scan(ctx, in, opts...)
}

// TestIntegrationConflictReturnsCurrent checks that a failed ledger condition
// reports the stored entries from the cancellation reasons' ALL_OLD items,
// with no read of its own.
func TestIntegrationConflictReturnsCurrent(t *testing.T) {
	client, table := newTable(t)
	api := &countingAPI{API: client}
	s := dynamostore.New(api, table)
	ctx := t.Context()

	body := []byte{0, 1, 2, 0xff}
	if err := s.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "ORDER#1", Body: body}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "ORDER#1", ExpectRev: 1, Body: body}}}); err != nil {
		t.Fatal(err)
	}
	api.reads.Store(0)
	api.transacts.Store(0)

	err := s.Commit(ctx, &driver.Tx{
		Ledgers: []driver.LedgerPut{
			{Key: "ORDER#new", Body: []byte("n")},                // would succeed
			{Key: "ORDER#1", ExpectRev: 0, Body: []byte("x")},    // exists: rev 2
			{Key: "ORDER#gone", ExpectRev: 3, Body: []byte("y")}, // absent
		},
		Adds: []driver.Add{{
			Ref:    driver.AggregateRef{Projection: "totals", Key: "ALL"},
			Values: map[string]decimal.Decimal{"count": decimal.FromInt(1)},
		}},
	})
	var ce *driver.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Commit = %v, want *projections.ConflictError", err)
	}
	if n := api.reads.Load(); n != 0 {
		t.Errorf("conflict handling made %d reads, want 0", n)
	}
	if n := api.transacts.Load(); n != 1 {
		t.Errorf("%d TransactWriteItems calls, want 1", n)
	}
	if len(ce.Current) != 2 {
		t.Errorf("Current = %v, want ORDER#1 and ORDER#gone", ce.Current)
	}
	if got := ce.Current["ORDER#1"]; got.Rev != 2 || !bytes.Equal(got.Body, body) {
		t.Errorf("Current[ORDER#1] = %+v, want rev 2 body %v", got, body)
	}
	if got, ok := ce.Current["ORDER#gone"]; !ok || got.Rev != 0 || got.Body != nil {
		t.Errorf("Current[ORDER#gone] = %+v, %v; want the zero entry", got, ok)
	}
	// Nothing was written.
	got, err := s.ReadLedgers(ctx, []string{"ORDER#new", "ORDER#1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["ORDER#new"]; ok || got["ORDER#1"].Rev != 2 {
		t.Errorf("after the failed commit: %v", got)
	}
}

func TestIntegrationRefuses101Actions(t *testing.T) {
	client, table := newTable(t)
	api := &countingAPI{API: client}
	s := dynamostore.New(api, table)
	tx := &driver.Tx{}
	for i := range 101 {
		tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: fmt.Sprintf("k%03d", i), Body: []byte("b")})
	}
	err := s.Commit(t.Context(), tx)
	if err == nil || errors.Is(err, driver.ErrContention) {
		t.Fatalf("Commit(101 actions) = %v, want a refusal", err)
	}
	if n := api.transacts.Load(); n != 0 {
		t.Errorf("%d TransactWriteItems calls, want 0", n)
	}
	tx.Ledgers = tx.Ledgers[:100]
	if err := s.Commit(t.Context(), tx); err != nil {
		t.Fatalf("Commit(100 actions) = %v", err)
	}
}

// TestIntegrationLayout reads the table directly, the way users read their
// aggregates, and checks it against the layout in the package comment.
func TestIntegrationLayout(t *testing.T) {
	client, table := newTable(t)
	s := dynamostore.New(client, table)
	ctx := t.Context()
	err := s.Commit(ctx, &driver.Tx{
		Ledgers: []driver.LedgerPut{{Key: "ORDER#9", Body: []byte("body"), ExpiresAt: 4102444800}},
		Adds: []driver.Add{{
			Ref:    driver.AggregateRef{Projection: "totals", Key: "DAY#2026-11-30", Shard: 2},
			Values: map[string]decimal.Decimal{"count": decimal.FromInt(1), "amount": decimal.MustParse("120.50")},
		}},
		Puts: []driver.RowPut{{
			Ref:   driver.RowRef{Projection: "board", Partition: "SEASON#Q2", Sort: "RATING#0001842"},
			Attrs: pipeline.Item{"player": &types.AttributeValueMemberS{Value: "u8231"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}

	get := func(pk, sk string) map[string]types.AttributeValue {
		t.Helper()
		res, err := client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(table),
			Key:            map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Item == nil {
			t.Fatalf("no item %s/%s", pk, sk)
		}
		return res.Item
	}
	want := func(item map[string]types.AttributeValue, name, av string) {
		t.Helper()
		var got string
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			got = "S:" + v.Value
		case *types.AttributeValueMemberN:
			got = "N:" + v.Value
		case *types.AttributeValueMemberB:
			got = "B:" + string(v.Value)
		default:
			got = fmt.Sprintf("%T", v)
		}
		if got != av {
			t.Errorf("%s = %s, want %s", name, got, av)
		}
	}

	l := get("L#ORDER#9", "L")
	want(l, "rev", "N:1")
	want(l, "ledger", "B:body")
	want(l, "ttl", "N:4102444800")

	a := get("A#totals#DAY#2026-11-30#2", "A")
	want(a, "projection", "S:totals")
	want(a, "key", "S:DAY#2026-11-30")
	want(a, "shard", "N:2")
	want(a, "count", "N:1")
	if v, ok := a["amount"].(*types.AttributeValueMemberN); !ok || decimal.MustParse(v.Value).Cmp(decimal.MustParse("120.5")) != 0 {
		t.Errorf("amount = %#v", a["amount"])
	}
	if len(a) != 7 {
		t.Errorf("aggregate has %d attributes, want 7: %v", len(a), a)
	}

	r := get("R#board#SEASON#Q2", "RATING#0001842")
	want(r, "projection", "S:board")
	want(r, "partition", "S:SEASON#Q2")
	want(r, "sort", "S:RATING#0001842")
	want(r, "player", "S:u8231")

	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "ttl" || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("TTL = %+v, want enabled on ttl", d)
	}
}

func TestIntegrationCreateTableTwice(t *testing.T) {
	client, table := newTable(t)
	if err := dynamostore.CreateTable(t.Context(), client, table); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
}

// TestIntegrationPagination writes more than one page of aggregates and rows
// with large attributes (Scan and Query pages stop at 1 MB).
func TestIntegrationPagination(t *testing.T) {
	client, table := newTable(t)
	api := &countingAPI{API: client}
	s := dynamostore.New(api, table)
	ctx := t.Context()
	pad := &types.AttributeValueMemberS{Value: strings.Repeat("x", 100_000)}
	const rows = 25 // 2.5 MB
	for i := 0; i < rows; i += 5 {
		tx := &driver.Tx{}
		for j := i; j < i+5; j++ {
			tx.Puts = append(tx.Puts, driver.RowPut{
				Ref:   driver.RowRef{Projection: "big", Partition: "P", Sort: fmt.Sprintf("S%03d", j)},
				Attrs: pipeline.Item{"pad": pad},
			})
			tx.Adds = append(tx.Adds, driver.Add{
				Ref:    driver.AggregateRef{Projection: "big", Key: "K", Shard: j},
				Values: map[string]decimal.Decimal{"n": decimal.FromInt(int64(j))},
			})
		}
		if err := s.Commit(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	api.reads.Store(0)
	got, err := s.QueryRows(ctx, "big", "P", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := api.reads.Load(); n < 3 {
		t.Errorf("QueryRows of 2.5 MB took %d pages, want at least 3", n)
	}
	if len(got) != rows || got[0].Ref.Sort != "S024" || got[rows-1].Ref.Sort != "S000" {
		t.Fatalf("QueryRows: %d rows", len(got))
	}
	got, err = s.QueryRows(ctx, "big", "P", 17)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 17 || got[16].Ref.Sort != "S008" {
		t.Fatalf("QueryRows limit 17: %d rows", len(got))
	}
	n := 0
	if err := s.ScanRows(ctx, func(driver.StoredRow) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Errorf("ScanRows saw %d rows, want %d", n, rows)
	}
	sum := decimal.FromInt(0)
	if err := s.ScanAggregates(ctx, func(_ driver.AggregateRef, v map[string]decimal.Decimal) error {
		sum = sum.Add(v["n"])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if sum.Cmp(decimal.FromInt(rows*(rows-1)/2)) != 0 {
		t.Errorf("sum of shards = %s", sum)
	}
}

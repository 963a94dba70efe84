// Package dynamostore implements driver.Store and driver.Reader over one
// DynamoDB table, using TransactWriteItems for atomic commits.
//
// The table's layout is the aggregate table's (driver: its prefixes,
// attribute names and key limits; docs/engine.md).
//
// Time to live is enabled on the attribute ttl. DynamoDB deletes expired
// entries in the background, days later; until then they are read like any
// other entry, which is what the engine expects of a tombstone.
//
// In production the table is created by the SAM template; CreateTable creates
// it for local runs and tests.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/retry"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
)

// Attribute names and key prefixes of the table layout (driver's).
const (
	attrPK         = layout.AttrPK
	attrSK         = layout.AttrSK
	attrRev        = layout.AttrRev
	attrLedger     = layout.AttrLedger
	attrTTL        = layout.AttrTTL
	attrProjection = layout.AttrProjection
	attrKey        = layout.AttrKey
	attrShard      = layout.AttrShard
	attrPartition  = layout.AttrPartition
	attrSort       = layout.AttrSort
	attrOwner      = layout.AttrOwner

	prefixLedger    = layout.PrefixLedger
	prefixAggregate = layout.PrefixAggregate
	prefixRow       = layout.PrefixRow
	skLedger        = layout.SortLedger
	skAggregate     = layout.SortAggregate
)

// maxBatchGetKeys is BatchGetItem's limit on keys per request.
const maxBatchGetKeys = 100

// API is the part of *dynamodb.Client that Store uses. *dynamodb.Client
// satisfies it; tests may provide a fake.
type API interface {
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchGetItem(ctx context.Context, params *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Store is a projections.Store and projections.Reader over one DynamoDB
// table. It is safe for concurrent use.
type Store struct {
	client API
	table  string

	// Backoff for BatchGetItem's UnprocessedKeys: attempt i (from 0) waits a
	// random duration in [0, min(retryBase·2^i, retryMax)).
	retryBase     time.Duration
	retryMax      time.Duration
	retryAttempts int

	// segment and segments, when segments > 0, make every scan one
	// segment of a parallel scan (Segment).
	segment, segments int
}

// Segment returns the store read as segment i of n of a parallel scan:
// its ScanAggregates, ScanRows and ScanLedgers read that segment alone
// (DynamoDB's Segment and TotalSegments), so that n readers, one a
// segment, read the table once between them. n is at most 1,000,000
// (DynamoDB's limit) and i below n.
func (s *Store) Segment(i, n int) (*Store, error) {
	if n < 1 || n > 1_000_000 || i < 0 || i >= n {
		return nil, fmt.Errorf("dynamostore: table %q: segment %d of %d: want 0 <= segment < segments <= 1000000", s.table, i, n)
	}
	c := *s
	c.segment, c.segments = i, n
	return &c, nil
}

var (
	_ driver.Store              = (*Store)(nil)
	_ driver.Reader             = (*Store)(nil)
	_ driver.WriteUnitEstimator = (*Store)(nil)
)

// New returns a Store over table, reached through client.
func New(client API, table string) *Store {
	return &Store{
		client:        client,
		table:         table,
		retryBase:     50 * time.Millisecond,
		retryMax:      2 * time.Second,
		retryAttempts: 10,
	}
}

// Table is the name of the table the store uses.
func (s *Store) Table() string { return s.table }

// ---- ReadLedgers

// ReadLedgers reads the ledger entries of keys with eventually consistent
// BatchGetItem requests of at most 100 keys, retrying unprocessed keys with
// capped exponential backoff and jitter.
func (s *Store) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	out := make(map[string]driver.LedgerEntry, len(keys))
	uniq := make([]string, 0, len(keys))
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		uniq = append(uniq, k)
	}
	for start := 0; start < len(uniq); start += maxBatchGetKeys {
		chunk := uniq[start:min(start+maxBatchGetKeys, len(uniq))]
		if err := s.readLedgerChunk(ctx, chunk, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) readLedgerChunk(ctx context.Context, chunk []string, out map[string]driver.LedgerEntry) error {
	avKeys := make([]map[string]types.AttributeValue, len(chunk))
	for i, k := range chunk {
		avKeys[i] = ledgerKey(k)
	}
	request := map[string]types.KeysAndAttributes{
		s.table: {
			Keys:                     avKeys,
			ProjectionExpression:     aws.String("#pk, #rev, #ledger"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#rev": attrRev, "#ledger": attrLedger},
			ConsistentRead:           aws.Bool(false),
		},
	}
	for attempt := 0; ; attempt++ {
		res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: request})
		if err != nil {
			return s.wrapErr(err, "read ledgers", keyRange(chunk))
		}
		for _, item := range res.Responses[s.table] {
			key, entry, err := decodeLedger(item)
			if err != nil {
				return fmt.Errorf("dynamostore: read ledgers from table %q: %w", s.table, err)
			}
			out[key] = entry
		}
		left, ok := res.UnprocessedKeys[s.table]
		if !ok || len(left.Keys) == 0 {
			return nil
		}
		if attempt+1 >= s.retryAttempts {
			return fmt.Errorf("dynamostore: read ledgers from table %q: %d of keys %s still unprocessed after %d attempts: %w",
				s.table, len(left.Keys), keyRange(chunk), attempt+1, driver.ErrContention)
		}
		request = map[string]types.KeysAndAttributes{s.table: left}
		if err := retry.Sleep(ctx, retry.Backoff(attempt, s.retryBase, s.retryMax)); err != nil {
			return fmt.Errorf("dynamostore: read ledgers from table %q, keys %s: %w", s.table, keyRange(chunk), err)
		}
	}
}

// ---- Commit

// Commit writes tx with one TransactWriteItems call: ledger puts first (in
// order, so that cancellation reasons map back to them), then aggregate adds,
// row puts and row deletes. More than driver.MaxTxActions actions is an error.
//
// The request carries no ClientRequestToken of ours: the SDK fills in a
// random one, reused across its own retries of this call. A token derived from
// the batch would not make redeliveries idempotent anyway: DynamoDB honours a
// token for only 10 minutes and only for identical parameters, while a
// redelivered batch may come hours later with recomputed deltas. Idempotence
// comes from the ledger conditions: a transaction whose ledger entries were
// already written fails its conditions and writes nothing.
func (s *Store) Commit(ctx context.Context, tx *driver.Tx) error {
	if tx == nil || tx.Len() == 0 {
		return nil
	}
	if n := driver.Actions(s, tx); n > driver.MaxTxActions {
		return fmt.Errorf("dynamostore: commit to table %q: %d actions, more than the %d TransactWriteItems allows", s.table, n, driver.MaxTxActions)
	}
	if tx.Len() == 1 && len(tx.Ledgers) == 1 {
		return s.putLedger(ctx, tx.Ledgers[0])
	}
	items, err := s.transactItems(tx)
	if err != nil {
		return err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	return s.commitErr(tx, err)
}

// putLedger writes a transaction of one ledger entry as a single
// conditional PutItem: the same atomicity at half the write units of a
// transaction.
func (s *Store) putLedger(ctx context.Context, l driver.LedgerPut) error {
	put, err := s.ledgerPut(l)
	if err != nil {
		return err
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           put.TableName,
		Item:                                put.Item,
		ConditionExpression:                 put.ConditionExpression,
		ExpressionAttributeNames:            put.ExpressionAttributeNames,
		ExpressionAttributeValues:           put.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: put.ReturnValuesOnConditionCheckFailure,
	})
	if err == nil {
		return nil
	}
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		entry, derr := decodeLedgerEntry(ccf.Item)
		if derr != nil {
			return fmt.Errorf("dynamostore: put to table %q: decode current ledger entry %q: %w", s.table, l.Key, derr)
		}
		return &driver.ConflictError{Current: map[string]driver.LedgerEntry{l.Key: entry}}
	}
	if isContention(err) {
		return fmt.Errorf("dynamostore: put ledger entry %q to table %q: %w: %w", l.Key, s.table, driver.ErrContention, err)
	}
	return s.wrapErr(err, "put ledger entry", l.Key)
}

func (s *Store) transactItems(tx *driver.Tx) ([]types.TransactWriteItem, error) {
	items := make([]types.TransactWriteItem, 0, tx.Len())
	for _, l := range tx.Ledgers {
		put, err := s.ledgerPut(l)
		if err != nil {
			return nil, err
		}
		items = append(items, types.TransactWriteItem{Put: put})
	}
	for _, a := range tx.Adds {
		upd, err := s.aggregateUpdate(a)
		if err != nil {
			return nil, err
		}
		items = append(items, types.TransactWriteItem{Update: upd})
	}
	for _, p := range tx.Puts {
		put, err := s.rowPut(p)
		if err != nil {
			return nil, err
		}
		items = append(items, types.TransactWriteItem{Put: put})
	}
	for _, d := range tx.Deletes {
		items = append(items, types.TransactWriteItem{Delete: s.rowDelete(d)})
	}
	for _, p := range tx.Puts {
		if p.CheckFrom {
			items = append(items, types.TransactWriteItem{ConditionCheck: s.ledgerCheck(p.From, p.FromRev)})
		}
	}
	return items, nil
}

// ledgerCheck is the condition that the ledger entry of key is still at
// revision rev (0: that there is none): what a row's takeover rests on
// (driver.RowPut.CheckFrom).
func (s *Store) ledgerCheck(key string, rev int64) *types.ConditionCheck {
	c := &types.ConditionCheck{TableName: aws.String(s.table), Key: itemKeyAV(prefixLedger+key, skLedger)}
	if rev == 0 {
		c.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		c.ExpressionAttributeNames = map[string]string{"#pk": attrPK}
		return c
	}
	c.ConditionExpression = aws.String("#rev = :rev")
	c.ExpressionAttributeNames = map[string]string{"#rev": attrRev}
	c.ExpressionAttributeValues = map[string]types.AttributeValue{":rev": &types.AttributeValueMemberN{Value: strconv.FormatInt(rev, 10)}}
	return c
}

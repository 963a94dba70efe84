// Package dynamostore implements projections.Store and projections.Reader over
// one DynamoDB table, using TransactWriteItems for atomic commits.
//
// # Table layout
//
// The table has a string partition key PK and a string sort key SK and holds
// three kinds of item, told apart by the prefix of PK:
//
//	ledger entry  PK = "L#" + itemKey                               SK = "L"
//	              rev (N)      revision, 1 for the first write
//	              ledger (B)   the engine's encoded entry (absent when empty)
//	              ttl (N)      epoch seconds; only on entries that may expire
//
//	aggregate     PK = "A#" + projection + "#" + key + "#" + shard   SK = "A"
//	              projection (S), key (S), shard (N, decimal)
//	              one N attribute per value name, e.g. count, amount
//
//	row           PK = "R#" + projection + "#" + partition          SK = sort
//	              projection (S), partition (S), sort (S)
//	              plus the row's own attributes
//
// An aggregate's logical value is the sum of its shards: read every
// "A#<projection>#<key>#<n>" item (n from 0 to Shards-1, missing items count
// as zero) and add the values of the same name. A partition's rows are one
// Query on PK = "R#<projection>#<partition>", in sort-key order.
//
// Logical keys, partitions and sort keys are used as they are, '#' and all.
// So that PK stays unambiguous, a projection name is escaped in PK: '%'
// becomes "%25" and '#' becomes "%23" (names without either, the usual kind,
// appear unchanged); the projection attribute holds the name itself. The
// names PK, SK, projection, key, shard, partition, sort, rev, ledger and ttl
// are reserved (projections.ReservedName) and cannot name values or row
// attributes.
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
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/internal/retry"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// Attribute names and key prefixes of the table layout.
const (
	attrPK         = "PK"
	attrSK         = "SK"
	attrRev        = "rev"
	attrLedger     = "ledger"
	attrTTL        = "ttl"
	attrProjection = "projection"
	attrKey        = "key"
	attrShard      = "shard"
	attrPartition  = "partition"
	attrSort       = "sort"

	prefixLedger    = "L#"
	prefixAggregate = "A#"
	prefixRow       = "R#"
	skLedger        = "L"
	skAggregate     = "A"
)

// MaxTxActions is the most write actions one Commit accepts: DynamoDB's limit
// for TransactWriteItems. The engine splits larger batches itself.
const MaxTxActions = 100

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
}

var (
	_ projections.Store  = (*Store)(nil)
	_ projections.Reader = (*Store)(nil)
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

// LedgerKey is the primary key of the ledger entry of itemKey.
func LedgerKey(itemKey string) map[string]types.AttributeValue {
	return itemKeyAV(prefixLedger+itemKey, skLedger)
}

// AggregateKey is the primary key of one stored aggregate item.
func AggregateKey(ref projections.AggregateRef) map[string]types.AttributeValue {
	return itemKeyAV(aggregatePK(ref), skAggregate)
}

// RowKey is the primary key of one stored row.
func RowKey(ref projections.RowRef) map[string]types.AttributeValue {
	return itemKeyAV(rowPK(ref.Projection, ref.Partition), ref.Sort)
}

func aggregatePK(ref projections.AggregateRef) string {
	return prefixAggregate + escapeProjection(ref.Projection) + "#" + ref.Key + "#" + strconv.Itoa(ref.Shard)
}

func rowPK(projection, partition string) string {
	return prefixRow + escapeProjection(projection) + "#" + partition
}

// projectionEscaper escapes a projection name for PK, so that the first '#'
// after the prefix ends it.
var projectionEscaper = strings.NewReplacer("%", "%25", "#", "%23")

func escapeProjection(name string) string {
	if !strings.ContainsAny(name, "%#") {
		return name
	}
	return projectionEscaper.Replace(name)
}

func itemKeyAV(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberS{Value: sk},
	}
}

// ---- ReadLedgers

// ReadLedgers reads the ledger entries of keys with eventually consistent
// BatchGetItem requests of at most 100 keys, retrying unprocessed keys with
// capped exponential backoff and jitter.
func (s *Store) ReadLedgers(ctx context.Context, keys []string) (map[string]projections.LedgerEntry, error) {
	out := make(map[string]projections.LedgerEntry, len(keys))
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

func (s *Store) readLedgerChunk(ctx context.Context, chunk []string, out map[string]projections.LedgerEntry) error {
	avKeys := make([]map[string]types.AttributeValue, len(chunk))
	for i, k := range chunk {
		avKeys[i] = LedgerKey(k)
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
				s.table, len(left.Keys), keyRange(chunk), attempt+1, projections.ErrContention)
		}
		request = map[string]types.KeysAndAttributes{s.table: left}
		if err := retry.SleepCause(ctx, retry.Backoff(attempt, s.retryBase, s.retryMax)); err != nil {
			return fmt.Errorf("dynamostore: read ledgers from table %q, keys %s: %w", s.table, keyRange(chunk), err)
		}
	}
}

// keyRange describes a list of keys in an error message.
func keyRange(keys []string) string {
	switch len(keys) {
	case 0:
		return "[]"
	case 1:
		return strconv.Quote(keys[0])
	default:
		return fmt.Sprintf("[%q … %q] (%d keys)", keys[0], keys[len(keys)-1], len(keys))
	}
}

// decodeLedger decodes a ledger item (at least PK, rev and ledger).
func decodeLedger(item map[string]types.AttributeValue) (string, projections.LedgerEntry, error) {
	pk, err := stringAttr(item, attrPK)
	if err != nil {
		return "", projections.LedgerEntry{}, err
	}
	key, ok := strings.CutPrefix(pk, prefixLedger)
	if !ok {
		return "", projections.LedgerEntry{}, fmt.Errorf("item %q is not a ledger entry", pk)
	}
	entry, err := decodeLedgerEntry(item)
	if err != nil {
		return "", projections.LedgerEntry{}, fmt.Errorf("ledger entry %q: %w", key, err)
	}
	return key, entry, nil
}

// decodeLedgerEntry decodes rev and ledger; an item with neither (no item)
// is the zero entry.
func decodeLedgerEntry(item map[string]types.AttributeValue) (projections.LedgerEntry, error) {
	var entry projections.LedgerEntry
	if av, ok := item[attrRev]; ok {
		n, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return entry, fmt.Errorf("attribute %s: want N, got %T", attrRev, av)
		}
		rev, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return entry, fmt.Errorf("attribute %s: %w", attrRev, err)
		}
		entry.Rev = rev
	} else if len(item) > 0 {
		return entry, fmt.Errorf("attribute %s missing", attrRev)
	}
	if av, ok := item[attrLedger]; ok {
		b, ok := av.(*types.AttributeValueMemberB)
		if !ok {
			return entry, fmt.Errorf("attribute %s: want B, got %T", attrLedger, av)
		}
		if len(b.Value) > 0 {
			entry.Body = b.Value
		}
	}
	return entry, nil
}

// ---- Commit

// Commit writes tx with one TransactWriteItems call: ledger puts first (in
// order, so that cancellation reasons map back to them), then aggregate adds,
// row puts and row deletes. More than MaxTxActions actions is an error.
//
// The request carries no ClientRequestToken of ours: the SDK fills in a
// random one, reused across its own retries of this call. A token derived from
// the batch would not make redeliveries idempotent anyway: DynamoDB honours a
// token for only 10 minutes and only for identical parameters, while a
// redelivered batch may come hours later with recomputed deltas. Idempotence
// comes from the ledger conditions: a transaction whose ledger entries were
// already written fails its conditions and writes nothing.
func (s *Store) Commit(ctx context.Context, tx *projections.Tx) error {
	if tx == nil || tx.Len() == 0 {
		return nil
	}
	if n := tx.Len(); n > MaxTxActions {
		return fmt.Errorf("dynamostore: commit to table %q: %d actions, more than the %d TransactWriteItems allows", s.table, n, MaxTxActions)
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
func (s *Store) putLedger(ctx context.Context, l projections.LedgerPut) error {
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
		return &projections.ConflictError{Current: map[string]projections.LedgerEntry{l.Key: entry}}
	}
	if isContention(err) {
		return fmt.Errorf("dynamostore: put ledger entry %q to table %q: %w: %w", l.Key, s.table, projections.ErrContention, err)
	}
	return s.wrapErr(err, "put ledger entry", l.Key)
}

func (s *Store) transactItems(tx *projections.Tx) ([]types.TransactWriteItem, error) {
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
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(s.table),
			Key:       RowKey(d),
		}})
	}
	return items, nil
}

func (s *Store) ledgerPut(l projections.LedgerPut) (*types.Put, error) {
	if l.ExpectRev < 0 {
		return nil, fmt.Errorf("dynamostore: commit to table %q, ledger entry %q: negative ExpectRev %d", s.table, l.Key, l.ExpectRev)
	}
	item := LedgerKey(l.Key)
	item[attrRev] = &types.AttributeValueMemberN{Value: strconv.FormatInt(l.ExpectRev+1, 10)}
	if len(l.Body) > 0 {
		item[attrLedger] = &types.AttributeValueMemberB{Value: l.Body}
	}
	if l.ExpiresAt != 0 {
		item[attrTTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(l.ExpiresAt, 10)}
	}
	put := &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if l.ExpectRev == 0 {
		put.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		put.ExpressionAttributeNames = map[string]string{"#pk": attrPK}
	} else {
		put.ConditionExpression = aws.String("#rev = :rev")
		put.ExpressionAttributeNames = map[string]string{"#rev": attrRev}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{
			":rev": &types.AttributeValueMemberN{Value: strconv.FormatInt(l.ExpectRev, 10)},
		}
	}
	return put, nil
}

func (s *Store) aggregateUpdate(a projections.Add) (*types.Update, error) {
	names := map[string]string{"#p": attrProjection, "#k": attrKey, "#s": attrShard}
	values := map[string]types.AttributeValue{
		":p": &types.AttributeValueMemberS{Value: a.Ref.Projection},
		":k": &types.AttributeValueMemberS{Value: a.Ref.Key},
		":s": &types.AttributeValueMemberN{Value: strconv.Itoa(a.Ref.Shard)},
	}
	valueNames := make([]string, 0, len(a.Values))
	for name := range a.Values {
		if projections.ReservedName(name) {
			return nil, s.aggregateErr(a.Ref, fmt.Errorf("value name %q is reserved", name))
		}
		valueNames = append(valueNames, name)
	}
	sort.Strings(valueNames)
	var expr strings.Builder
	for i, name := range valueNames {
		if i == 0 {
			expr.WriteString("ADD ")
		} else {
			expr.WriteString(", ")
		}
		n, v := "#v"+strconv.Itoa(i), ":v"+strconv.Itoa(i)
		fmt.Fprintf(&expr, "%s %s", n, v)
		names[n] = name
		values[v] = &types.AttributeValueMemberN{Value: a.Values[name].String()}
	}
	if expr.Len() > 0 {
		expr.WriteString(" ")
	}
	expr.WriteString("SET #p = :p, #k = :k, #s = :s")
	return &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       AggregateKey(a.Ref),
		UpdateExpression:          aws.String(expr.String()),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}, nil
}

func (s *Store) rowPut(p projections.RowPut) (*types.Put, error) {
	item := make(map[string]types.AttributeValue, len(p.Attrs)+5)
	for name, av := range p.Attrs {
		if projections.ReservedName(name) {
			return nil, s.rowErr(p.Ref, fmt.Errorf("attribute name %q is reserved", name))
		}
		item[name] = av
	}
	item[attrPK] = &types.AttributeValueMemberS{Value: rowPK(p.Ref.Projection, p.Ref.Partition)}
	item[attrSK] = &types.AttributeValueMemberS{Value: p.Ref.Sort}
	item[attrProjection] = &types.AttributeValueMemberS{Value: p.Ref.Projection}
	item[attrPartition] = &types.AttributeValueMemberS{Value: p.Ref.Partition}
	item[attrSort] = &types.AttributeValueMemberS{Value: p.Ref.Sort}
	return &types.Put{TableName: aws.String(s.table), Item: item}, nil
}

func (s *Store) aggregateErr(ref projections.AggregateRef, err error) error {
	return fmt.Errorf("dynamostore: commit to table %q, aggregate %q: %w", s.table, aggregatePK(ref), err)
}

func (s *Store) rowErr(ref projections.RowRef, err error) error {
	return fmt.Errorf("dynamostore: commit to table %q, row %q/%q: %w", s.table, rowPK(ref.Projection, ref.Partition), ref.Sort, err)
}

// Cancellation reason codes of TransactionCanceledException.
const (
	reasonConditionalCheckFailed        = "ConditionalCheckFailed"
	reasonTransactionConflict           = "TransactionConflict"
	reasonThrottlingError               = "ThrottlingError"
	reasonProvisionedThroughputExceeded = "ProvisionedThroughputExceeded"
	reasonValidationError               = "ValidationError"
)

// commitErr maps a TransactWriteItems error to the Store contract.
func (s *Store) commitErr(tx *projections.Tx, err error) error {
	if canceled, ok := errors.AsType[*types.TransactionCanceledException](err); ok {
		return s.canceledErr(tx, canceled, err)
	}
	return s.wrapErr(err, "commit", txDescription(tx))
}

func (s *Store) canceledErr(tx *projections.Tx, canceled *types.TransactionCanceledException, err error) error {
	var conflict *projections.ConflictError
	contention := false
	for i, reason := range canceled.CancellationReasons {
		switch aws.ToString(reason.Code) {
		case reasonConditionalCheckFailed:
			if i >= len(tx.Ledgers) {
				// Only ledger puts carry conditions; anything else is a bug.
				return fmt.Errorf("dynamostore: commit to table %q: condition failed on unconditioned action %d of %s: %w", s.table, i, txDescription(tx), err)
			}
			key := tx.Ledgers[i].Key
			entry, derr := decodeLedgerEntry(reason.Item)
			if derr != nil {
				return fmt.Errorf("dynamostore: commit to table %q: decode current ledger entry %q from cancellation reason: %w", s.table, key, derr)
			}
			if conflict == nil {
				conflict = &projections.ConflictError{Current: make(map[string]projections.LedgerEntry)}
			}
			conflict.Current[key] = entry
		case reasonTransactionConflict, reasonThrottlingError, reasonProvisionedThroughputExceeded:
			contention = true
		case reasonValidationError:
			// On an aggregate's ADD, the only value that can be invalid is
			// the sum ("Number overflow", "more than 38 significant
			// digits"): the values sent are valid numbers.
			if a := i - len(tx.Ledgers); a >= 0 && a < len(tx.Adds) {
				add := tx.Adds[a]
				names := make([]string, 0, len(add.Values))
				for n := range add.Values {
					names = append(names, n)
				}
				sort.Strings(names)
				return &projections.RangeError{Ref: add.Ref, Name: strings.Join(names, ", "),
					Err: fmt.Errorf("dynamostore: commit to table %q, %s: %s: %w", s.table, txDescription(tx), aws.ToString(reason.Message), err)}
			}
		}
	}
	switch {
	case conflict != nil:
		return conflict
	case contention:
		return fmt.Errorf("dynamostore: commit to table %q, %s: %w: %w", s.table, txDescription(tx), projections.ErrContention, err)
	default:
		return fmt.Errorf("dynamostore: commit to table %q, %s: %w", s.table, txDescription(tx), err)
	}
}

// txDescription names a transaction in an error message by its ledger keys.
func txDescription(tx *projections.Tx) string {
	keys := make([]string, len(tx.Ledgers))
	for i, l := range tx.Ledgers {
		keys[i] = l.Key
	}
	return fmt.Sprintf("%d actions, ledger keys %s", tx.Len(), keyRange(keys))
}

// contentionCodes are the error codes of failures that a later retry can
// resolve (the SDK has already retried the throttling ones).
var contentionCodes = map[string]bool{
	"TransactionConflictException":           true,
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

func isContention(err error) bool {
	var (
		conflict   *types.TransactionConflictException
		throughput *types.ProvisionedThroughputExceededException
		throttling *types.ThrottlingException
		limit      *types.RequestLimitExceeded
	)
	if errors.As(err, &conflict) || errors.As(err, &throughput) || errors.As(err, &throttling) || errors.As(err, &limit) {
		return true
	}
	// Servers may answer with a code the SDK has no type for.
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return contentionCodes[apiErr.ErrorCode()]
	}
	return false
}

// wrapErr wraps an SDK error with the operation, the table and the keys, and
// marks contention with projections.ErrContention.
func (s *Store) wrapErr(err error, op, keys string) error {
	if isContention(err) {
		return fmt.Errorf("dynamostore: %s on table %q, %s: %w: %w", op, s.table, keys, projections.ErrContention, err)
	}
	return fmt.Errorf("dynamostore: %s on table %q, %s: %w", op, s.table, keys, err)
}

// ---- Reader

// ScanAggregates scans the table for aggregate items. Reads are strongly
// consistent, so a verification right after the writes sees all of them.
func (s *Store) ScanAggregates(ctx context.Context, fn func(ref projections.AggregateRef, values map[string]decimal.Decimal) error) error {
	return s.scan(ctx, prefixAggregate, func(item map[string]types.AttributeValue) error {
		ref, values, err := decodeAggregate(item)
		if err != nil {
			return fmt.Errorf("dynamostore: scan aggregates of table %q, item %s: %w", s.table, describePK(item), err)
		}
		return fn(ref, values)
	})
}

// ScanRows scans the table for rows, strongly consistent.
func (s *Store) ScanRows(ctx context.Context, fn func(row projections.StoredRow) error) error {
	return s.scan(ctx, prefixRow, func(item map[string]types.AttributeValue) error {
		row, err := decodeRow(item)
		if err != nil {
			return fmt.Errorf("dynamostore: scan rows of table %q, item %s: %w", s.table, describePK(item), err)
		}
		return fn(row)
	})
}

func (s *Store) scan(ctx context.Context, prefix string, fn func(map[string]types.AttributeValue) error) error {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		FilterExpression:          aws.String("begins_with(#pk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: prefix}},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		res, err := s.client.Scan(ctx, in)
		if err != nil {
			return s.wrapErr(err, "scan", "prefix "+strconv.Quote(prefix))
		}
		for _, item := range res.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// QueryRows queries one partition's rows in descending sort-key order,
// strongly consistent.
func (s *Store) QueryRows(ctx context.Context, projection, partition string, limit int) ([]projections.StoredRow, error) {
	pk := rowPK(projection, partition)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}
	var rows []projections.StoredRow
	for limit <= 0 || len(rows) < limit {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(rows), 1<<30)))
		}
		res, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, s.wrapErr(err, "query rows", "partition key "+strconv.Quote(pk))
		}
		for _, item := range res.Items {
			row, err := decodeRow(item)
			if err != nil {
				return nil, fmt.Errorf("dynamostore: query rows of table %q, partition key %q: %w", s.table, pk, err)
			}
			rows = append(rows, row)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

func describePK(item map[string]types.AttributeValue) string {
	pk, _ := item[attrPK].(*types.AttributeValueMemberS)
	sk, _ := item[attrSK].(*types.AttributeValueMemberS)
	if pk == nil {
		return "(no PK)"
	}
	if sk == nil {
		return strconv.Quote(pk.Value)
	}
	return strconv.Quote(pk.Value) + "/" + strconv.Quote(sk.Value)
}

func decodeAggregate(item map[string]types.AttributeValue) (projections.AggregateRef, map[string]decimal.Decimal, error) {
	var ref projections.AggregateRef
	var err error
	if ref.Projection, err = stringAttr(item, attrProjection); err != nil {
		return ref, nil, err
	}
	if ref.Key, err = stringAttr(item, attrKey); err != nil {
		return ref, nil, err
	}
	shard, ok := item[attrShard].(*types.AttributeValueMemberN)
	if !ok {
		return ref, nil, fmt.Errorf("attribute %s: want N, got %T", attrShard, item[attrShard])
	}
	if ref.Shard, err = strconv.Atoi(shard.Value); err != nil {
		return ref, nil, fmt.Errorf("attribute %s: %w", attrShard, err)
	}
	values := make(map[string]decimal.Decimal, len(item))
	for name, av := range item {
		switch name {
		case attrPK, attrSK, attrProjection, attrKey, attrShard:
			continue
		}
		n, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return ref, nil, fmt.Errorf("value %s: want N, got %T", name, av)
		}
		d, err := decimal.Parse(n.Value)
		if err != nil {
			return ref, nil, fmt.Errorf("value %s: %w", name, err)
		}
		values[name] = d
	}
	return ref, values, nil
}

func decodeRow(item map[string]types.AttributeValue) (projections.StoredRow, error) {
	var row projections.StoredRow
	var err error
	if row.Ref.Projection, err = stringAttr(item, attrProjection); err != nil {
		return row, err
	}
	if row.Ref.Partition, err = stringAttr(item, attrPartition); err != nil {
		return row, err
	}
	if row.Ref.Sort, err = stringAttr(item, attrSort); err != nil {
		return row, err
	}
	row.Attrs = make(pipeline.Item, len(item))
	for name, av := range item {
		switch name {
		case attrPK, attrSK, attrProjection, attrPartition, attrSort:
			continue
		}
		row.Attrs[name] = av
	}
	return row, nil
}

func stringAttr(item map[string]types.AttributeValue, name string) (string, error) {
	av, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("attribute %s: want S, got %T", name, item[name])
	}
	return av.Value, nil
}

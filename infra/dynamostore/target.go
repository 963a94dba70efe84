package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
	"github.com/tributary/tributary/projections/driver/target"
)

// LedgerSuffix names a remodel's ledger table after its target:
// <target>-ledger.
const LedgerSuffix = "-ledger"

// LedgerTable is the name of the ledger table of a remodel's target table:
// the target's name and LedgerSuffix.
func LedgerTable(target string) string { return target + LedgerSuffix }

// A TargetStore is a remodel's target in DynamoDB (driver's target store;
// docs/remodel.md): the target table, a team's table of the new key design
// whose items are exactly what the transform made of the source's, and a
// ledger table of its own (LedgerTable) in the aggregate table's layout,
// holding the source items' ledger entries, the markers, and per target
// key a claim naming the source item that owns it (layout.ClaimRef: a row
// with an owner and no attributes). Every commit is one
// TransactWriteItems across both tables: the ledger entries, each target
// item put or deleted, and its claim. The target table gets no attribute
// of Tributary's.
//
// It is safe for concurrent use.
type TargetStore struct {
	target.Base
	ledger *Store
	client API
	table  string
	name   string
}

var (
	_ driver.Table              = (*TargetStore)(nil)
	_ driver.KeyLimiter         = (*TargetStore)(nil)
	_ driver.NameReserver       = (*TargetStore)(nil)
	_ driver.ActionCounter      = (*TargetStore)(nil)
	_ driver.WriteUnitEstimator = (*TargetStore)(nil)
)

// NewTarget returns the target store of the remodel name over the target
// table, keyed by key, with its ledger table ledgerTable, reached through
// client.
func NewTarget(client API, table, ledgerTable, name string, key target.Key) *TargetStore {
	return &TargetStore{Base: target.Base{Key: key}, ledger: New(client, ledgerTable), client: client, table: table, name: name}
}

// Table is the target table's name.
func (s *TargetStore) Table() string { return s.table }

// TargetKeyOf reads a table's key schema (DescribeTable): the names and
// types of its partition key and sort key.
func TargetKeyOf(ctx context.Context, client tableAPI, table string) (target.Key, error) {
	res, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return target.Key{}, fmt.Errorf("dynamostore: describe table %q: %w", table, err)
	}
	types := map[string]string{}
	for _, d := range res.Table.AttributeDefinitions {
		types[aws.ToString(d.AttributeName)] = string(d.AttributeType)
	}
	var k target.Key
	for _, e := range res.Table.KeySchema {
		a := target.KeyAttr{Name: aws.ToString(e.AttributeName), Type: types[aws.ToString(e.AttributeName)]}
		if e.KeyType == "HASH" {
			k.Partition = a
		} else {
			k.Sort = a
		}
	}
	if err := k.Validate(); err != nil {
		return k, fmt.Errorf("dynamostore: table %q: %w", table, err)
	}
	return k, nil
}

// CreateTargetTables creates a target table keyed by key (on-demand
// capacity) and its ledger table (CreateTable), and waits until both are
// active; tables that exist are left as they are. Production tables come
// from the team (the target) and the SAM template (the ledger); this is
// for local runs and tests.
func CreateTargetTables(ctx context.Context, client tableAPI, table, ledgerTable string, key target.Key) error {
	if err := key.Validate(); err != nil {
		return fmt.Errorf("dynamostore: create table %q: %w", table, err)
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(key.Partition.Name), AttributeType: types.ScalarAttributeType(key.Partition.Type)},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(key.Partition.Name), KeyType: types.KeyTypeHash}},
	}
	if key.HasSort() {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(key.Sort.Name), AttributeType: types.ScalarAttributeType(key.Sort.Type)})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(key.Sort.Name), KeyType: types.KeyTypeRange})
	}
	if _, err := client.CreateTable(ctx, in); err != nil {
		if _, inUse := errors.AsType[*types.ResourceInUseException](err); !inUse {
			return fmt.Errorf("dynamostore: create table %q: %w", table, err)
		}
	}
	if err := waitActive(ctx, client, table); err != nil {
		return err
	}
	return CreateTable(ctx, client, ledgerTable)
}

// ReadLedgers reads the source items' ledger entries from the ledger
// table.
func (s *TargetStore) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	return s.ledger.ReadLedgers(ctx, keys)
}

// action is what one of a commit's TransactWriteItems is.
type action struct {
	ledger   int           // the index of its ledger put; -1: not one
	claim    bool          // a claim's put or delete, or a takeover's check
	ref      driver.RowRef // the target item of a claim or an item action
	claimant string
	from     string // a takeover's check: the owner checked
}

// Commit writes tx in one TransactWriteItems across the ledger table and
// the target table: the ledger puts, then for each row put its claim
// (unless its owner holds it already, RowPut.Held: conditioned on the
// owner, as the aggregate layout's rows are) and the target item, as it
// is; for each row delete, its claim (conditioned likewise) and the target
// item. A claim another source item owns fails the transaction with a
// *driver.ClaimError naming the target item. A Tx of ledger entries only
// goes to the ledger table alone (a single one as a conditional PutItem);
// a Tx with an Add is refused: a target holds no aggregates.
func (s *TargetStore) Commit(ctx context.Context, tx *driver.Tx) error {
	if tx == nil || tx.Len() == 0 {
		return nil
	}
	if len(tx.Adds) > 0 {
		return fmt.Errorf("dynamostore: commit to target %q: %d aggregate additions: a remodel's target holds no aggregates", s.table, len(tx.Adds))
	}
	if len(tx.Puts) == 0 && len(tx.Deletes) == 0 {
		return s.ledger.Commit(ctx, tx)
	}
	if n := driver.Actions(s, tx); n > driver.MaxTxActions {
		return fmt.Errorf("dynamostore: commit to target %q: %d actions, more than the %d TransactWriteItems allows", s.table, n, driver.MaxTxActions)
	}
	items := make([]types.TransactWriteItem, 0, driver.Actions(s, tx))
	acts := make([]action, 0, cap(items))
	for i, l := range tx.Ledgers {
		put, err := s.ledger.ledgerPut(l)
		if err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{Put: put})
		acts = append(acts, action{ledger: i})
	}
	for _, p := range tx.Puts {
		if err := s.check(p.Ref); err != nil {
			return err
		}
		if !p.Held {
			claim, err := s.ledger.rowPut(driver.RowPut{Ref: layout.ClaimRef(p.Ref), Owner: p.Owner, From: p.From})
			if err != nil {
				return err
			}
			items = append(items, types.TransactWriteItem{Put: claim})
			acts = append(acts, action{ledger: -1, claim: true, ref: p.Ref, claimant: p.Owner})
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: p.Attrs}})
		acts = append(acts, action{ledger: -1, ref: p.Ref})
		if p.CheckFrom {
			items = append(items, types.TransactWriteItem{ConditionCheck: s.ledger.ledgerCheck(p.From, p.FromRev)})
			acts = append(acts, action{ledger: -1, claim: true, ref: p.Ref, claimant: p.Owner, from: p.From})
		}
	}
	for _, d := range tx.Deletes {
		if err := s.check(d.Ref); err != nil {
			return err
		}
		key, err := s.Key.Key(d.Ref)
		if err != nil {
			return fmt.Errorf("dynamostore: commit to target %q: %w", s.table, err)
		}
		items = append(items,
			types.TransactWriteItem{Delete: s.ledger.rowDelete(driver.RowDelete{Ref: layout.ClaimRef(d.Ref), Owner: d.Owner})},
			types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key}})
		acts = append(acts, action{ledger: -1, claim: true, ref: d.Ref, claimant: d.Owner}, action{ledger: -1, ref: d.Ref})
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	if canceled, ok := errors.AsType[*types.TransactionCanceledException](err); ok {
		return s.canceled(tx, acts, canceled, err)
	}
	return s.wrapErr(err, "commit", txDescription(tx))
}

// check refuses a row of another remodel, or a key the target cannot hold.
func (s *TargetStore) check(ref driver.RowRef) error {
	if ref.Projection != s.name {
		return fmt.Errorf("dynamostore: commit to target %q of %s: a row of %s", s.table, s.name, ref.Projection)
	}
	if err := s.Key.CheckRef(ref); err != nil {
		return fmt.Errorf("dynamostore: commit to target %q: %w", s.table, err)
	}
	return nil
}

// canceled maps a cancelled transaction to the Store contract: a failed
// ledger condition to a *driver.ConflictError, a failed claim to a
// *driver.ClaimError, contention to driver.ErrContention.
func (s *TargetStore) canceled(tx *driver.Tx, acts []action, canceled *types.TransactionCanceledException, err error) error {
	var conflict *driver.ConflictError
	contention := false
	for i, reason := range canceled.CancellationReasons {
		if i >= len(acts) {
			break
		}
		a := acts[i]
		switch aws.ToString(reason.Code) {
		case reasonConditionalCheckFailed:
			switch {
			case a.ledger >= 0:
				key := tx.Ledgers[a.ledger].Key
				entry, derr := decodeLedgerEntry(reason.Item)
				if derr != nil {
					return fmt.Errorf("dynamostore: commit to target %q: decode current ledger entry %q from cancellation reason: %w", s.table, key, derr)
				}
				if conflict == nil {
					conflict = &driver.ConflictError{Current: map[string]driver.LedgerEntry{}}
				}
				conflict.Current[key] = entry
			case a.claim:
				owner := a.from // a takeover's check of the owner it takes from
				if o, isS := reason.Item[attrOwner].(*types.AttributeValueMemberS); isS && a.from == "" {
					owner = o.Value
				}
				return &driver.ClaimError{Ref: a.ref, Owner: owner, Claimant: a.claimant}
			default:
				return fmt.Errorf("dynamostore: commit to target %q: condition failed on the unconditioned write of target item %s/%s: %w", s.table, a.ref.Partition, a.ref.Sort, err)
			}
		case reasonTransactionConflict, reasonThrottlingError, reasonProvisionedThroughputExceeded:
			contention = true
		case reasonValidationError:
			if a.ledger < 0 && !a.claim {
				return fmt.Errorf("dynamostore: commit to target %q: DynamoDB refuses target item %s/%s: %s: %w", s.table, strconv.Quote(a.ref.Partition), strconv.Quote(a.ref.Sort), aws.ToString(reason.Message), err)
			}
		}
	}
	switch {
	case conflict != nil:
		return conflict
	case contention:
		return fmt.Errorf("dynamostore: commit to target %q, %s: %w: %w", s.table, txDescription(tx), driver.ErrContention, err)
	}
	return fmt.Errorf("dynamostore: commit to target %q, %s: %w", s.table, txDescription(tx), err)
}

func (s *TargetStore) wrapErr(err error, op, keys string) error {
	return s.ledger.wrapErr(err, op+" (target table "+strconv.Quote(s.table)+")", keys)
}

// ScanRows scans the target table, strongly consistent, and calls fn with
// every item: its RowRef (target.Key.Ref) and attributes. Owner is
// not read (the claims are in the ledger table).
func (s *TargetStore) ScanRows(ctx context.Context, fn func(row driver.StoredRow) error) error {
	in := &dynamodb.ScanInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true)}
	for {
		res, err := s.client.Scan(ctx, in)
		if err != nil {
			return s.wrapErr(err, "scan", "the target")
		}
		for _, item := range res.Items {
			ref, err := s.Key.Ref(s.name, item)
			if err != nil {
				return fmt.Errorf("dynamostore: scan target %q: an item not keyed %s: %w", s.table, s.Key, err)
			}
			if err := fn(driver.StoredRow{Ref: ref, Attrs: item}); err != nil {
				return err
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// QueryRows queries one partition key's target items in descending
// sort-key order, strongly consistent.
func (s *TargetStore) QueryRows(ctx context.Context, projection, partition string, limit int) ([]driver.StoredRow, error) {
	if projection != s.name {
		return nil, nil
	}
	only := target.Key{Partition: s.Key.Partition}
	pk, err := only.Key(driver.RowRef{Partition: partition})
	if err != nil {
		return nil, fmt.Errorf("dynamostore: query target %q: %w", s.table, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": s.Key.Partition.Name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": pk[s.Key.Partition.Name]},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}
	return queryRows(ctx, s.client, in, limit, func(item map[string]types.AttributeValue) (driver.StoredRow, error) {
		ref, err := s.Key.Ref(s.name, item)
		if err != nil {
			return driver.StoredRow{}, fmt.Errorf("dynamostore: query target %q: %w", s.table, err)
		}
		return driver.StoredRow{Ref: ref, Attrs: item}, nil
	}, func(err error) error { return s.wrapErr(err, "query", "partition "+strconv.Quote(partition)) })
}

// ScanLedgers scans the ledger table's ledger entries (and markers).
func (s *TargetStore) ScanLedgers(ctx context.Context, fn func(key string, entry driver.LedgerEntry) error) error {
	return s.ledger.ScanLedgers(ctx, fn)
}

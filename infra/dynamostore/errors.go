package dynamostore

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/projections/driver"
)

func (s *Store) aggregateErr(ref driver.AggregateRef, err error) error {
	return fmt.Errorf("dynamostore: commit to table %q, aggregate %q: %w", s.table, aggregatePK(ref), err)
}

func (s *Store) rowErr(ref driver.RowRef, err error) error {
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
func (s *Store) commitErr(tx *driver.Tx, err error) error {
	if canceled, ok := errors.AsType[*types.TransactionCanceledException](err); ok {
		return s.canceledErr(tx, canceled, err)
	}
	return s.wrapErr(err, "commit", txDescription(tx))
}

func (s *Store) canceledErr(tx *driver.Tx, canceled *types.TransactionCanceledException, err error) error {
	var conflict *driver.ConflictError
	contention := false
	for i, reason := range canceled.CancellationReasons {
		switch aws.ToString(reason.Code) {
		case reasonConditionalCheckFailed:
			if i >= len(tx.Ledgers) {
				// Besides ledger puts, only rows with an owner carry
				// conditions: another item owns the row.
				if ref, claimant, from, ok := rowAt(tx, i); ok {
					owner := from // a takeover's check of the owner it takes from
					if o, isS := reason.Item[attrOwner].(*types.AttributeValueMemberS); isS && from == "" {
						owner = o.Value
					}
					return &driver.ClaimError{Ref: ref, Owner: owner, Claimant: claimant}
				}
				return fmt.Errorf("dynamostore: commit to table %q: condition failed on unconditioned action %d of %s: %w", s.table, i, txDescription(tx), err)
			}
			key := tx.Ledgers[i].Key
			entry, derr := decodeLedgerEntry(reason.Item)
			if derr != nil {
				return fmt.Errorf("dynamostore: commit to table %q: decode current ledger entry %q from cancellation reason: %w", s.table, key, derr)
			}
			if conflict == nil {
				conflict = &driver.ConflictError{Current: make(map[string]driver.LedgerEntry)}
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
				return &driver.RangeError{Ref: add.Ref, Name: strings.Join(names, ", "),
					Err: fmt.Errorf("dynamostore: commit to table %q, %s: %s: %w", s.table, txDescription(tx), aws.ToString(reason.Message), err)}
			}
		}
	}
	switch {
	case conflict != nil:
		return conflict
	case contention:
		return fmt.Errorf("dynamostore: commit to table %q, %s: %w: %w", s.table, txDescription(tx), driver.ErrContention, err)
	default:
		return fmt.Errorf("dynamostore: commit to table %q, %s: %w", s.table, txDescription(tx), err)
	}
}

// rowAt returns the row, and the owner claiming it, of the transaction's
// action i (ledger puts, adds, row puts, row deletes, then the checks of
// the owners puts take rows from, in that order); for a check, from is the
// owner checked.
func rowAt(tx *driver.Tx, i int) (ref driver.RowRef, claimant, from string, ok bool) {
	i -= len(tx.Ledgers) + len(tx.Adds)
	switch {
	case i >= 0 && i < len(tx.Puts):
		return tx.Puts[i].Ref, tx.Puts[i].Owner, "", tx.Puts[i].Owner != ""
	case i >= len(tx.Puts) && i-len(tx.Puts) < len(tx.Deletes):
		d := tx.Deletes[i-len(tx.Puts)]
		return d.Ref, d.Owner, "", d.Owner != ""
	}
	i -= len(tx.Puts) + len(tx.Deletes)
	for _, p := range tx.Puts {
		if !p.CheckFrom {
			continue
		}
		if i == 0 {
			return p.Ref, p.Owner, p.From, true
		}
		i--
	}
	return driver.RowRef{}, "", "", false
}

// txDescription names a transaction in an error message by its ledger keys.
func txDescription(tx *driver.Tx) string {
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
		return fmt.Errorf("dynamostore: %s on table %q, %s: %w: %w", op, s.table, keys, driver.ErrContention, err)
	}
	return fmt.Errorf("dynamostore: %s on table %q, %s: %w", op, s.table, keys, err)
}

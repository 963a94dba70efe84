package dynamostore

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
)

// ledgerKey is the primary key of the ledger entry of itemKey.
func ledgerKey(itemKey string) map[string]types.AttributeValue {
	return itemKeyAV(prefixLedger+itemKey, skLedger)
}

// aggregateKey is the primary key of one stored aggregate item.
func aggregateKey(ref driver.AggregateRef) map[string]types.AttributeValue {
	return itemKeyAV(aggregatePK(ref), skAggregate)
}

// rowKey is the primary key of one stored row.
func rowKey(ref driver.RowRef) map[string]types.AttributeValue {
	return itemKeyAV(rowPK(ref.Projection, ref.Partition), ref.Sort)
}

func aggregatePK(ref driver.AggregateRef) string { return layout.AggregatePartitionKey(ref) }

func rowPK(projection, partition string) string { return layout.RowPartitionKey(projection, partition) }

func itemKeyAV(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberS{Value: sk},
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

var _ driver.KeyLimiter = (*Store)(nil)

// CheckAggregate reports whether ref's aggregate item fits DynamoDB's keys
// (layout.CheckAggregate).
func (s *Store) CheckAggregate(ref driver.AggregateRef) error { return layout.CheckAggregate(ref) }

// CheckRow reports whether ref's row fits DynamoDB's keys
// (layout.CheckRow).
func (s *Store) CheckRow(ref driver.RowRef) error { return layout.CheckRow(ref) }

package dynamostore

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/projections"
)

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

// DynamoDB's limits on a key attribute's value, in bytes of UTF-8.
const (
	MaxPartitionKeyBytes = 2048
	MaxSortKeyBytes      = 1024
)

var _ projections.KeyLimiter = (*Store)(nil)

// CheckAggregate reports whether ref's aggregate item fits DynamoDB's
// keys: its partition key, A#<projection>#<key>#<shard>, at most 2,048
// bytes of valid UTF-8.
func (s *Store) CheckAggregate(ref projections.AggregateRef) error { return CheckAggregate(ref) }

// CheckRow reports whether ref's row fits DynamoDB's keys: its partition
// key, R#<projection>#<partition>, at most 2,048 bytes and its sort key at
// most 1,024, of valid UTF-8, neither empty.
func (s *Store) CheckRow(ref projections.RowRef) error { return CheckRow(ref) }

// CheckAggregate is Store.CheckAggregate, for a store that keeps DynamoDB's
// limits without being DynamoDB (the embedded store).
func CheckAggregate(ref projections.AggregateRef) error {
	return checkKey("aggregate partition key", aggregatePK(ref), MaxPartitionKeyBytes)
}

// CheckRow is Store.CheckRow, for a store that keeps DynamoDB's limits.
func CheckRow(ref projections.RowRef) error {
	if err := checkKey("row partition key", rowPK(ref.Projection, ref.Partition), MaxPartitionKeyBytes); err != nil {
		return err
	}
	return checkKey("row sort key", ref.Sort, MaxSortKeyBytes)
}

func checkKey(what, key string, limit int) error {
	switch {
	case key == "":
		return &projections.KeyError{What: what, Key: key, Reason: "empty"}
	case !utf8.ValidString(key):
		return &projections.KeyError{What: what, Key: key, Reason: "not valid UTF-8"}
	case len(key) > limit:
		return &projections.KeyError{What: what, Key: key, Size: len(key), Limit: limit}
	}
	return nil
}

package projections

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// WriteUnits is what DynamoDB bills for committing tx with the physical
// layout of infra/dynamostore: each write costs one unit per started
// kilobyte of the item, and transactions cost double (prepare and commit).
// A transaction of a single ledger entry is written by the store as one
// conditional PutItem, at the single rate. Sizes follow DynamoDB's rules
// (attribute names plus values); an aggregate item's size counts its key
// attributes and the values being added, a lower bound when it holds more.
func WriteUnits(tx *Tx) float64 {
	factor := 2.0
	if tx.Len() == 1 && len(tx.Ledgers) == 1 {
		factor = 1
	}
	var units float64
	for _, l := range tx.Ledgers {
		size := len("PK") + 2 + len(l.Key) + len("SK") + 1 + len("rev") + 8 + len("ledger") + len(l.Body)
		if l.ExpiresAt != 0 {
			size += len("ttl") + 8
		}
		units += kb(size)
	}
	for _, a := range tx.Adds {
		size := len("PK") + 2 + len(a.Ref.Projection) + len(a.Ref.Key) + 4 + len("SK") + 1 +
			len("projection") + len(a.Ref.Projection) + len("key") + len(a.Ref.Key) + len("shard") + 2
		for k, v := range a.Values {
			size += len(k) + len(v.String())
		}
		units += kb(size)
	}
	for _, p := range tx.Puts {
		size := len("PK") + 2 + len(p.Ref.Projection) + len(p.Ref.Partition) + len("SK") + len(p.Ref.Sort) +
			len("projection") + len(p.Ref.Projection) + len("partition") + len(p.Ref.Partition) + len("sort") + len(p.Ref.Sort) +
			itemSize(p.Attrs)
		units += kb(size)
	}
	units += float64(len(tx.Deletes)) // a delete is billed on the deleted item's size; rows are small
	return units * factor
}

func kb(size int) float64 { return float64((size + 1023) / 1024) }

// itemSize approximates an item's DynamoDB size: attribute names plus values.
func itemSize(item pipeline.Item) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(av types.AttributeValue) int {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += len(s)/2 + 1
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + itemSize(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	}
	return 1
}

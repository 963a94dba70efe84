package dynamostore

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// decodeLedger decodes a ledger item (at least PK, rev and ledger).
func decodeLedger(item map[string]types.AttributeValue) (string, driver.LedgerEntry, error) {
	pk, err := stringAttr(item, attrPK)
	if err != nil {
		return "", driver.LedgerEntry{}, err
	}
	key, ok := strings.CutPrefix(pk, prefixLedger)
	if !ok {
		return "", driver.LedgerEntry{}, fmt.Errorf("item %q is not a ledger entry", pk)
	}
	entry, err := decodeLedgerEntry(item)
	if err != nil {
		return "", driver.LedgerEntry{}, fmt.Errorf("ledger entry %q: %w", key, err)
	}
	return key, entry, nil
}

// decodeLedgerEntry decodes rev and ledger; an item with neither (no item)
// is the zero entry.
func decodeLedgerEntry(item map[string]types.AttributeValue) (driver.LedgerEntry, error) {
	var entry driver.LedgerEntry
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

func (s *Store) ledgerPut(l driver.LedgerPut) (*types.Put, error) {
	if l.ExpectRev < 0 {
		return nil, fmt.Errorf("dynamostore: commit to table %q, ledger entry %q: negative ExpectRev %d", s.table, l.Key, l.ExpectRev)
	}
	item := ledgerKey(l.Key)
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

func (s *Store) aggregateUpdate(a driver.Add) (*types.Update, error) {
	names := map[string]string{"#p": attrProjection, "#k": attrKey, "#s": attrShard}
	values := map[string]types.AttributeValue{
		":p": &types.AttributeValueMemberS{Value: a.Ref.Projection},
		":k": &types.AttributeValueMemberS{Value: a.Ref.Key},
		":s": &types.AttributeValueMemberN{Value: strconv.Itoa(a.Ref.Shard)},
	}
	valueNames := make([]string, 0, len(a.Values))
	for name := range a.Values {
		if driver.ReservedName(name) {
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
		Key:                       aggregateKey(a.Ref),
		UpdateExpression:          aws.String(expr.String()),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}, nil
}

func (s *Store) rowPut(p driver.RowPut) (*types.Put, error) {
	item := make(map[string]types.AttributeValue, len(p.Attrs)+5)
	for name, av := range p.Attrs {
		if driver.ReservedName(name) {
			return nil, s.rowErr(p.Ref, fmt.Errorf("attribute name %q is reserved", name))
		}
		item[name] = av
	}
	item[attrPK] = &types.AttributeValueMemberS{Value: rowPK(p.Ref.Projection, p.Ref.Partition)}
	item[attrSK] = &types.AttributeValueMemberS{Value: p.Ref.Sort}
	item[attrProjection] = &types.AttributeValueMemberS{Value: p.Ref.Projection}
	item[attrPartition] = &types.AttributeValueMemberS{Value: p.Ref.Partition}
	item[attrSort] = &types.AttributeValueMemberS{Value: p.Ref.Sort}
	put := &types.Put{TableName: aws.String(s.table), Item: item}
	if p.Owner != "" {
		item[attrOwner] = &types.AttributeValueMemberS{Value: p.Owner}
		put.ConditionExpression, put.ExpressionAttributeNames, put.ExpressionAttributeValues = ownerCondition(p.Owner, p.From)
		put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	return put, nil
}

// rowDelete deletes a row, if its owner is d's (or it has none).
func (s *Store) rowDelete(d driver.RowDelete) *types.Delete {
	del := &types.Delete{TableName: aws.String(s.table), Key: rowKey(d.Ref)}
	if d.Owner != "" {
		del.ConditionExpression, del.ExpressionAttributeNames, del.ExpressionAttributeValues = ownerCondition(d.Owner, "")
		del.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	return del
}

// ownerCondition holds when the row is not there, has no owner (written
// before rows had owners), or is owned by owner (or by from, which
// releases it).
func ownerCondition(owner, from string) (*string, map[string]string, map[string]types.AttributeValue) {
	names := map[string]string{"#pk": attrPK, "#owner": attrOwner}
	values := map[string]types.AttributeValue{":owner": &types.AttributeValueMemberS{Value: owner}}
	cond := "attribute_not_exists(#pk) OR attribute_not_exists(#owner) OR #owner = :owner"
	if from != "" && from != owner {
		values[":from"] = &types.AttributeValueMemberS{Value: from}
		cond += " OR #owner = :from"
	}
	return aws.String(cond), names, values
}

func decodeAggregate(item map[string]types.AttributeValue) (driver.AggregateRef, map[string]decimal.Decimal, error) {
	var ref driver.AggregateRef
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
		// DynamoDB returns its normal form already; a server that keeps
		// the operands' scale (moto) is read as DynamoDB would be.
		values[name] = d.Normal()
	}
	return ref, values, nil
}

func decodeRow(item map[string]types.AttributeValue) (driver.StoredRow, error) {
	var row driver.StoredRow
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
		case attrOwner:
			if o, ok := av.(*types.AttributeValueMemberS); ok {
				row.Owner = o.Value
				continue
			}
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

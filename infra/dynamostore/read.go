package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// ScanAggregates scans the table for aggregate items. Reads are strongly
// consistent, so a verification right after the writes sees all of them.
func (s *Store) ScanAggregates(ctx context.Context, fn func(ref driver.AggregateRef, values map[string]decimal.Decimal) error) error {
	return s.scan(ctx, prefixAggregate, func(item map[string]types.AttributeValue) error {
		ref, values, err := decodeAggregate(item)
		if err != nil {
			return fmt.Errorf("dynamostore: scan aggregates of table %q, item %s: %w", s.table, describePK(item), err)
		}
		return fn(ref, values)
	})
}

// ScanRows scans the table for rows, strongly consistent.
func (s *Store) ScanRows(ctx context.Context, fn func(row driver.StoredRow) error) error {
	return s.scan(ctx, prefixRow, func(item map[string]types.AttributeValue) error {
		row, err := decodeRow(item)
		if err != nil {
			return fmt.Errorf("dynamostore: scan rows of table %q, item %s: %w", s.table, describePK(item), err)
		}
		return fn(row)
	})
}

// ScanLedgers scans the table for ledger entries, strongly consistent.
func (s *Store) ScanLedgers(ctx context.Context, fn func(key string, entry driver.LedgerEntry) error) error {
	return s.scan(ctx, prefixLedger, func(item map[string]types.AttributeValue) error {
		key, e, err := decodeLedger(item)
		if err != nil {
			return fmt.Errorf("dynamostore: scan ledgers of table %q, item %s: %w", s.table, describePK(item), err)
		}
		return fn(key, e)
	})
}

// ScanAll reads the table once, strongly consistent, and calls ledger,
// aggregate and row for its ledger entries, aggregate items and rows: what
// ScanLedgers, ScanAggregates and ScanRows read, for a third of their
// read units (a Scan is charged for every item it reads, its filter
// notwithstanding).
func (s *Store) ScanAll(ctx context.Context, ledger func(key string, entry driver.LedgerEntry) error,
	aggregate func(ref driver.AggregateRef, values map[string]decimal.Decimal) error, row func(row driver.StoredRow) error) error {
	return s.scan(ctx, "", func(item map[string]types.AttributeValue) error {
		pk, _ := item[attrPK].(*types.AttributeValueMemberS)
		switch {
		case pk == nil:
			return nil
		case strings.HasPrefix(pk.Value, prefixLedger):
			key, e, err := decodeLedger(item)
			if err != nil {
				return fmt.Errorf("dynamostore: scan of table %q, item %s: %w", s.table, describePK(item), err)
			}
			return ledger(key, e)
		case strings.HasPrefix(pk.Value, prefixAggregate):
			ref, values, err := decodeAggregate(item)
			if err != nil {
				return fmt.Errorf("dynamostore: scan of table %q, item %s: %w", s.table, describePK(item), err)
			}
			return aggregate(ref, values)
		case strings.HasPrefix(pk.Value, prefixRow):
			r, err := decodeRow(item)
			if err != nil {
				return fmt.Errorf("dynamostore: scan of table %q, item %s: %w", s.table, describePK(item), err)
			}
			return row(r)
		}
		return nil
	})
}

// scan scans the table's items whose partition key starts with prefix
// (every item: "").
func (s *Store) scan(ctx context.Context, prefix string, fn func(map[string]types.AttributeValue) error) error {
	in := &dynamodb.ScanInput{
		TableName:      aws.String(s.table),
		ConsistentRead: aws.Bool(true),
	}
	if prefix != "" {
		in.FilterExpression = aws.String("begins_with(#pk, :prefix)")
		in.ExpressionAttributeNames = map[string]string{"#pk": attrPK}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: prefix}}
	}
	if s.segments > 0 {
		in.Segment, in.TotalSegments = aws.Int32(int32(s.segment)), aws.Int32(int32(s.segments))
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
func (s *Store) QueryRows(ctx context.Context, projection, partition string, limit int) ([]driver.StoredRow, error) {
	pk := rowPK(projection, partition)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}
	return queryRows(ctx, s.client, in, limit, func(item map[string]types.AttributeValue) (driver.StoredRow, error) {
		row, err := decodeRow(item)
		if err != nil {
			return row, fmt.Errorf("dynamostore: query rows of table %q, partition key %q: %w", s.table, pk, err)
		}
		return row, nil
	}, func(err error) error { return s.wrapErr(err, "query rows", "partition key "+strconv.Quote(pk)) })
}

// queryRows runs a query a page at a time until it has limit rows (limit
// <= 0: all of them), each item decoded by decode; wrap wraps a failed
// call's error.
func queryRows(ctx context.Context, client API, in *dynamodb.QueryInput, limit int, decode func(map[string]types.AttributeValue) (driver.StoredRow, error), wrap func(error) error) ([]driver.StoredRow, error) {
	var rows []driver.StoredRow
	for limit <= 0 || len(rows) < limit {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(rows), 1<<30)))
		}
		res, err := client.Query(ctx, in)
		if err != nil {
			return nil, wrap(err)
		}
		for _, item := range res.Items {
			row, err := decode(item)
			if err != nil {
				return nil, err
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

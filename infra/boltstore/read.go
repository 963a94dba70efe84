package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// scanPage is how many items a scan copies out of one read transaction
// before it calls the callback on them. Callbacks never run inside a bbolt
// transaction, so they may write to the store.
const scanPage = 256

// ScanAggregates calls fn for every stored aggregate item, in key order. An
// error from fn stops the scan and is returned as is.
func (s *Store) ScanAggregates(ctx context.Context, fn func(ref driver.AggregateRef, values map[string]decimal.Decimal) error) error {
	return s.scan(ctx, bucketAggregates, "scan aggregates", func(k, v []byte) error {
		ref, err := parseAggregateKey(k)
		if err != nil {
			return fmt.Errorf("boltstore: scan aggregates: %w", err)
		}
		values, err := decodeValues(v)
		if err != nil {
			return fmt.Errorf("boltstore: scan aggregates: %s: %w", describeAggregate(ref), err)
		}
		return fn(ref, values)
	})
}

// ScanRows calls fn for every stored row, in key order. An error from fn
// stops the scan and is returned as is.
func (s *Store) ScanRows(ctx context.Context, fn func(row driver.StoredRow) error) error {
	return s.scan(ctx, bucketRows, "scan rows", func(k, v []byte) error {
		row, err := decodeStoredRow(k, v)
		if err != nil {
			return fmt.Errorf("boltstore: scan rows: %w", err)
		}
		return fn(row)
	})
}

// ScanLedgers calls fn for every stored ledger entry, in key order. An
// error from fn stops the scan and is returned as is.
func (s *Store) ScanLedgers(ctx context.Context, fn func(key string, entry driver.LedgerEntry) error) error {
	return s.scan(ctx, bucketLedgers, "scan ledgers", func(k, v []byte) error {
		e, _, err := decodeLedger(v)
		if err != nil {
			return fmt.Errorf("boltstore: scan ledgers: ledger %q: %w", k, err)
		}
		return fn(string(k), e)
	})
}

// QueryRows returns up to limit rows of one projection's partition, in
// descending sort-key order (limit <= 0: all of them).
func (s *Store) QueryRows(ctx context.Context, projection, partition string, limit int) ([]driver.StoredRow, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("boltstore: query rows %q %q: %w", projection, partition, err)
	}
	prefix, err := rowPrefix(projection, partition)
	if err != nil {
		return nil, fmt.Errorf("boltstore: query rows: %w", err)
	}
	// Every key with the prefix sorts before the prefix with its final
	// separator byte incremented.
	end := bytes.Clone(prefix)
	end[len(end)-1]++

	var rows []driver.StoredRow
	err = s.db.View(func(btx *bolt.Tx) error {
		c := btx.Bucket(bucketRows).Cursor()
		// Start at the last key before end.
		var k, v []byte
		if seek, _ := c.Seek(end); seek == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			row, err := decodeStoredRow(k, v)
			if err != nil {
				return err
			}
			rows = append(rows, row)
			if limit > 0 && len(rows) == limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: query rows %q %q: %w", projection, partition, err)
	}
	return rows, nil
}

// scan calls fn for every key and value of a bucket, a page at a time, with
// copies that stay valid after the read transaction ends.
func (s *Store) scan(ctx context.Context, bucket []byte, what string, fn func(k, v []byte) error) error {
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("boltstore: %s: %w", what, err)
		}
		var page [][2][]byte
		err := s.db.View(func(btx *bolt.Tx) error {
			c := btx.Bucket(bucket).Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.First()
			} else if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
			for ; k != nil && len(page) < scanPage; k, v = c.Next() {
				page = append(page, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("boltstore: %s: %w", what, err)
		}
		for _, kv := range page {
			if err := fn(kv[0], kv[1]); err != nil {
				return err
			}
		}
		if len(page) < scanPage {
			return nil
		}
		after = page[len(page)-1][0]
	}
}

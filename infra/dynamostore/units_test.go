package dynamostore

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
)

func ledger(key string, body int, expires int64) driver.LedgerPut {
	return driver.LedgerPut{Key: key, ExpectRev: 3, Body: make([]byte, body), ExpiresAt: expires}
}

func add(projection, key string, values ...string) driver.Add {
	a := driver.Add{Ref: driver.AggregateRef{Projection: projection, Key: key}, Values: map[string]decimal.Decimal{}}
	for i := 0; i+1 < len(values); i += 2 {
		a.Values[values[i]] = decimal.MustParse(values[i+1])
	}
	return a
}

func row(size int) driver.RowPut {
	return driver.RowPut{
		Ref:   driver.RowRef{Projection: "board", Partition: "SEASON#2026-Q2", Sort: "RATING#1"},
		Attrs: pipeline.Item{"handle": &types.AttributeValueMemberS{Value: strings.Repeat("x", size)}},
	}
}

// TestWriteUnits: a unit per started kilobyte of each item written, twice
// in a transaction; a lone ledger entry is one PutItem at the single rate.
// The ledger item's size is 24 bytes plus its key and body (PK "L#" key,
// SK "L", rev, ledger), 11 more with a ttl.
func TestWriteUnits(t *testing.T) {
	tests := []struct {
		name string
		tx   driver.Tx
		want float64
	}{
		{"empty", driver.Tx{}, 0},
		{"one ledger entry, one put", driver.Tx{Ledgers: []driver.LedgerPut{ledger("k", 10, 0)}}, 1},
		{"ledger entry of exactly 1 KB", driver.Tx{Ledgers: []driver.LedgerPut{ledger("k", 999, 0)}}, 1},
		{"a byte more", driver.Tx{Ledgers: []driver.LedgerPut{ledger("k", 1000, 0)}}, 2},
		{"a tombstone's ttl crosses the kilobyte", driver.Tx{Ledgers: []driver.LedgerPut{ledger("k", 999, 1796033700)}}, 2},
		{"ledger and aggregate, a transaction", driver.Tx{
			Ledgers: []driver.LedgerPut{ledger("k", 10, 0)},
			Adds:    []driver.Add{add("order-totals", "ORDERS#PAID", "orders", "1", "revenue", "120.5")},
		}, 4},
		{"a large row", driver.Tx{
			Ledgers: []driver.LedgerPut{ledger("k", 10, 0)},
			Puts:    []driver.RowPut{row(2900)}, // 2,989 bytes with its keys
		}, 2 * (1 + 3)},
		{"deletes count one each", driver.Tx{
			Ledgers: []driver.LedgerPut{ledger("k", 10, 0), ledger("l", 10, 0)},
			Deletes: []driver.RowDelete{{Ref: driver.RowRef{Projection: "board", Partition: "P", Sort: "S1"}}, {Ref: driver.RowRef{Projection: "board", Partition: "P", Sort: "S2"}}},
		}, 2 * (2 + 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := layout.WriteUnits(&tt.tx); got != tt.want {
				t.Errorf("WriteUnits = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWriteUnitsCoverTheLayout: the estimate of each ledger entry and row
// is at least what the item the store writes weighs (pipeline.ItemSize of
// the Put's item, in started kilobytes), and at most one unit more (it
// counts numbers generously).
func TestWriteUnitsCoverTheLayout(t *testing.T) {
	s := New(nil, "t")
	for _, body := range []int{0, 500, 990, 1000, 1020, 2047, 5000} {
		for _, expires := range []int64{0, 1796033700} {
			l := ledger("ORDER#"+strings.Repeat("9", body%17), body, expires)
			put, err := s.ledgerPut(l)
			if err != nil {
				t.Fatal(err)
			}
			checkCovers(t, "ledger entry", layout.WriteUnits(&driver.Tx{Ledgers: []driver.LedgerPut{l}}), pipeline.ItemSize(put.Item))
		}
	}
	for _, size := range []int{1, 900, 990, 1000, 4000} {
		p := row(size)
		put, err := s.rowPut(p)
		if err != nil {
			t.Fatal(err)
		}
		// A row is written in a transaction, with its ledger entry: half
		// the units of the two, less the ledger entry's one.
		got := layout.WriteUnits(&driver.Tx{Ledgers: []driver.LedgerPut{ledger("k", 0, 0)}, Puts: []driver.RowPut{p}})/2 - 1
		checkCovers(t, "row", got, pipeline.ItemSize(put.Item))
	}
}

func checkCovers(t *testing.T, what string, units float64, size int) {
	t.Helper()
	if stored := float64((size + 1023) / 1024); units < stored || units > stored+1 {
		t.Errorf("%s of %d bytes (%v units stored): estimated %v", what, size, stored, units)
	}
}

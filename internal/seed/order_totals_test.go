package seed_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

func TestOrderTotals(t *testing.T) {
	testGolden(t, &seed.OrderTotals{}, "order_totals", []goldenCase{
		{name: "paid"},
		{name: "pending"},
		{name: "shipped_exact"},
		{name: "cancelled_zero"},
		{name: "error_status_type", wantErr: true},
		{name: "error_unknown_status", wantErr: true},
		{name: "error_bad_date", wantErr: true},
		{name: "error_missing_total", wantErr: true},
		{name: "error_total_list", wantErr: true},
		{name: "error_sk_shape", wantErr: true},
	})
}

func TestOrderTotalsErrors(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(item pipeline.Item)
		wantAttr string
		wantMsg  string
	}{
		{
			name:     "status number",
			edit:     func(item pipeline.Item) { item["status"] = n("2") },
			wantAttr: "status",
			wantMsg:  "order-totals: item USER#u42/ORDER#2026-11-30#o1: status: want S, got N",
		},
		{
			name:     "missing orderDate",
			edit:     func(item pipeline.Item) { delete(item, "orderDate") },
			wantAttr: "orderDate",
			wantMsg:  "order-totals: item USER#u42/ORDER#2026-11-30#o1: orderDate: missing",
		},
		{
			name:     "date with time",
			edit:     func(item pipeline.Item) { item["orderDate"] = s("2026-11-30T10:00:00Z") },
			wantAttr: "orderDate",
			wantMsg:  `order-totals: item USER#u42/ORDER#2026-11-30#o1: orderDate: want a date YYYY-MM-DD, got "2026-11-30T10:00:00Z"`,
		},
		{
			name:     "status lower case",
			edit:     func(item pipeline.Item) { item["status"] = s("paid") },
			wantAttr: "status",
			wantMsg:  `order-totals: item USER#u42/ORDER#2026-11-30#o1: status: want PENDING, PAID, SHIPPED or CANCELLED, got "paid"`,
		},
		{
			name:     "status of 200 KB",
			edit:     func(item pipeline.Item) { item["status"] = s(strings.Repeat("P", 200000)) },
			wantAttr: "status",
			wantMsg:  `order-totals: item USER#u42/ORDER#2026-11-30#o1: status: want PENDING, PAID, SHIPPED or CANCELLED, got "` + strings.Repeat("P", 64) + `"… (200000 bytes)`,
		},
		{
			name:     "date of 200 KB",
			edit:     func(item pipeline.Item) { item["orderDate"] = s(strings.Repeat("9", 200000)) },
			wantAttr: "orderDate",
			wantMsg:  `order-totals: item USER#u42/ORDER#2026-11-30#o1: orderDate: want a date YYYY-MM-DD, got "` + strings.Repeat("9", 64) + `"… (200000 bytes)`,
		},
		{
			name:     "user key",
			edit:     func(item pipeline.Item) { item["PK"] = s("CUSTOMER#u42") },
			wantAttr: "PK",
			wantMsg:  "order-totals: item CUSTOMER#u42/ORDER#2026-11-30#o1: PK: want USER#<user>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item := readItem(t, "testdata/order_totals/paid.input.json")
			tt.edit(item)
			_, err := (&seed.OrderTotals{}).Contribute(item)
			if err == nil {
				t.Fatal("Contribute succeeded, want an error")
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("error = %q\nwant    %q", err, tt.wantMsg)
			}
			var ie *projections.ItemError
			if !errors.As(err, &ie) || ie.Attr != tt.wantAttr {
				t.Errorf("error %#v: want a *projections.ItemError with Attr %q", err, tt.wantAttr)
			}
		})
	}
}

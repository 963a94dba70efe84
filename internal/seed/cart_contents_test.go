package seed_test

import (
	"testing"

	"github.com/tributary/tributary/internal/seed"
)

func TestCartContents(t *testing.T) {
	testGolden(t, &seed.CartContents{}, "cart_contents", []goldenCase{
		{name: "line"},
		{name: "quantity_scaled"},
		{name: "quantity_zero"},
		{name: "error_fractional_quantity", wantErr: true},
		{name: "error_missing_quantity", wantErr: true},
		{name: "error_quantity_type", wantErr: true},
		{name: "error_sk_shape", wantErr: true},
		{name: "error_pk_type", wantErr: true},
	})
}

package pipeline_test

import (
	"testing"

	"github.com/tributary/tributary/pipeline"
)

func TestCompareSequenceNumbers(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"100", "99", 1},
		{"99", "100", -1},
		{"4421584500000000017450439091", "4421584500000000017450439091", 0},
		{"900000000000000000999", "1000000000000000000000", -1}, // 21 vs 22 digits
		{"00123", "123", 0},
		{"49656632116218945776331460766507834718496431279652880386", "49656632116218945776331460766507834718496431279652880387", -1},
	}
	for _, tt := range tests {
		if got := pipeline.CompareSequenceNumbers(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareSequenceNumbers(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

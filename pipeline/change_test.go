package pipeline_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

func TestItemSize(t *testing.T) {
	item := pipeline.Item{
		"PK":    &types.AttributeValueMemberS{Value: "USER#u42"},           // 2 + 8
		"total": &types.AttributeValueMemberN{Value: "120.50"},             // 5 + (4+1)/2+1 = 3
		"ok":    &types.AttributeValueMemberBOOL{Value: true},              // 2 + 1
		"tags":  &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}, // 4 + 3
		"m": &types.AttributeValueMemberM{Value: pipeline.Item{ // 1 + 3 + (1 + 1 + 1)
			"k": &types.AttributeValueMemberNULL{Value: true},
		}},
	}
	if got, want := pipeline.ItemSize(item), 10+8+3+7+8; got != want {
		t.Errorf("ItemSize = %d, want %d", got, want)
	}
}

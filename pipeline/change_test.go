package pipeline_test

import (
	"strings"
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
		"total": &types.AttributeValueMemberN{Value: "120.50"},             // 5 + (4+1)/2+1: 4 significant digits
		"ok":    &types.AttributeValueMemberBOOL{Value: true},              // 2 + 1
		"tags":  &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}, // 4 + 3
		"m": &types.AttributeValueMemberM{Value: pipeline.Item{ // 1 + 3 + (1 + 1 + 1)
			"k": &types.AttributeValueMemberNULL{Value: true},
		}},
	}
	if got, want := pipeline.ItemSize(item), 10+8+3+7+7; got != want {
		t.Errorf("ItemSize = %d, want %d", got, want)
	}
	// A number is one byte per two significant digits, plus one: leading
	// and trailing zeros, sign, point and exponent are not stored.
	for _, tt := range []struct {
		n    string
		want int
	}{
		{"0", 1},
		{"7", 2},
		{"100", 2},
		{"1E+2", 2},
		{"-0.000001", 2},
		{"1000000000000000000000000000000000000000", 2},
		{"12.5e-3", 3},
		{"-123.4500", 4},
		{"12345678901234567890123456789012345678", 20},
		{"9.9999999999999999999999999999999999999E+125", 20},
	} {
		if got := pipeline.ItemSize(pipeline.Item{"n": &types.AttributeValueMemberN{Value: tt.n}}) - 1; got != tt.want {
			t.Errorf("size of the number %s = %d, want %d", tt.n, got, tt.want)
		}
	}
}

// A number's size counts its significant digits, whichever way it is
// written: DynamoDB writes 1E+100 as 1 and 100 zeros, and counts 2 bytes.
func TestNumberSize(t *testing.T) {
	tests := []struct {
		name, n string
		want    int
	}{
		{"Zero", "0", 1},
		{"OneDigit", "7", 2},
		{"TwoDigits", "42", 2},
		{"TrailingZero", "120", 2}, // 12: the trailing zero is trimmed
		{"ThreeDigits", "123", 3},
		{"Fraction", "120.50", 3},
		{"LeadingZeros", "0.000125", 3},
		{"Exponent", "1E+100", 2},
		{"PlainLarge", "1" + strings.Repeat("0", 100), 2},
		{"PlainSmall", "-0." + strings.Repeat("0", 129) + "12", 2},
		{"ThirtyEightDigits", "12345678901234567890123456789012345678", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item := pipeline.Item{"n": &types.AttributeValueMemberN{Value: tt.n}}
			if got := pipeline.ItemSize(item) - 1; got != tt.want {
				t.Errorf("size of %s = %d, want %d", tt.n, got, tt.want)
			}
		})
	}
}

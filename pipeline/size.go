package pipeline

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is an item's size as DynamoDB counts it for capacity: attribute
// names plus values (a number about one byte per two significant digits,
// plus one; a set the sum of its elements; a map or list three bytes plus
// one per element). Write units are ItemSize rounded up to started kilobytes.
func ItemSize(item Item) int {
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
		return numberSize(v.Value)
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
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	}
	return 1 // BOOL, NULL
}

// numberSize is a number's size: one byte per two significant digits
// (leading and trailing zeros trimmed, the exponent not counted), plus one.
func numberSize(s string) int {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Trim(s, "+-0.")
	return (len(s)-strings.Count(s, ".")+1)/2 + 1
}

package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// TestKeyAttributesCheck: a ledger key passes when its attribute names are
// the checked ones, whatever their order given, and is refused naming both
// sets otherwise; a key held as its hash passes (its names cannot be read).
func TestKeyAttributesCheck(t *testing.T) {
	pk := LedgerKey(pipeline.Item{"PK": sv(`a"b\c`)})
	pksk := LedgerKey(pipeline.Item{"PK": sv("USER#1"), "SK": sv("ORDER#{1}")})
	escaped := LedgerKey(pipeline.Item{"P\"K": sv("x")})
	for _, tc := range []struct {
		key     string
		checked []string
		held    string // "" : passes
	}{
		{pk, []string{"PK"}, ""},
		{pksk, []string{"SK", "PK"}, ""},
		{pksk, []string{"PK"}, "PK,SK"},
		{pk, []string{"PK", "SK"}, "PK"},
		{escaped, []string{`P"K`}, ""},
		{escaped, []string{"PK"}, `P"K`},
		{"sha256:00ff", []string{"PK"}, ""},
		{`{"PK":{"S":"a"}`, []string{"PK"}, ""}, // cut short: decoded whole, no names
	} {
		err := KeyAttributesCheck(tc.checked)(tc.key)
		var ke *keyAttributesError
		switch {
		case tc.key == `{"PK":{"S":"a"}`:
			if !errors.As(err, &ke) || len(ke.Held) != 0 {
				t.Errorf("%s: %v, want a refusal naming no attributes", tc.key, err)
			}
		case tc.held == "" && err != nil:
			t.Errorf("%s by %v: %v", tc.key, tc.checked, err)
		case tc.held != "" && (!errors.As(err, &ke) || joinNames(ke.Held) != tc.held):
			t.Errorf("%s by %v: %v, want a refusal naming %s", tc.key, tc.checked, err, tc.held)
		}
	}
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func joinNames(names []string) string { return strings.Join(names, ",") }

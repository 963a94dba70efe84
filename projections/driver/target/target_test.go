package target_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
)

func TestNewTargetKey(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string // String(), or the error's text
		ok    bool
	}{
		{[]string{"PK", "SK"}, "PK:S,SK:S", true},
		{[]string{"id:N"}, "id:N", true},
		{[]string{" pk : B ", "sk:N"}, "pk:B,sk:N", true},
		{nil, "a partition key and at most one sort key, got 0", false},
		{[]string{"a", "b", "c"}, "got 3", false},
		{[]string{"PK", "PK"}, `both "PK"`, false},
		{[]string{"PK:X"}, `type "X": want S, N or B`, false},
		{[]string{":S"}, "has no name", false},
	} {
		k, err := target.NewKey(tt.names...)
		switch {
		case tt.ok && (err != nil || k.String() != tt.want):
			t.Errorf("NewTargetKey(%q) = %s, %v; want %s", tt.names, k, err, tt.want)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("NewTargetKey(%q): %v, want an error saying %q", tt.names, err, tt.want)
		}
	}
}

// TestTargetKeyRoundTrip: a target item's RowRef gives back its key
// attributes, whatever their types; an N is keyed in DynamoDB's normal
// form, so that the numbers DynamoDB takes for one key are one.
func TestTargetKeyRoundTrip(t *testing.T) {
	k, _ := target.NewKey("b:B", "n:N")
	item := pipeline.Item{"b": &types.AttributeValueMemberB{Value: []byte{0, 0xff}}, "n": &types.AttributeValueMemberN{Value: "12.50"}, "x": &types.AttributeValueMemberS{Value: "y"}}
	ref, err := k.Ref("r", item)
	if err != nil {
		t.Fatal(err)
	}
	if ref != (driver.RowRef{Projection: "r", Partition: "AP8=", Sort: "12.5"}) {
		t.Fatalf("Ref = %+v", ref)
	}
	key, err := k.Key(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pipeline.ItemKey(key), `{"b":{"B":"AP8="},"n":{"N":"12.5"}}`; got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
	other, err := k.Ref("r", pipeline.Item{"b": item["b"], "n": &types.AttributeValueMemberN{Value: "1.25E1"}})
	if err != nil || other != ref {
		t.Errorf("1.25E1 keys %+v (%v), want %+v", other, err, ref)
	}
}

func TestTargetKeyRefusals(t *testing.T) {
	k, _ := target.NewKey("PK", "SK:N")
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for _, tt := range []struct {
		name string
		item pipeline.Item
		want string
	}{
		{"missing sort key", pipeline.Item{"PK": s("a")}, `key attribute "SK" is missing`},
		{"wrong type", pipeline.Item{"PK": s("a"), "SK": s("1")}, `key attribute "SK" is an S, but the target table's is N`},
		{"empty partition key", pipeline.Item{"PK": s(""), "SK": &types.AttributeValueMemberN{Value: "1"}}, "empty"},
		{"too long", pipeline.Item{"PK": s(strings.Repeat("x", 2049)), "SK": &types.AttributeValueMemberN{Value: "1"}}, "2049 bytes, more than the 2048"},
		{"not UTF-8", pipeline.Item{"PK": s("\xff"), "SK": &types.AttributeValueMemberN{Value: "1"}}, "not valid UTF-8"},
	} {
		_, err := k.Ref("r", tt.item)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
		if strings.Contains(tt.name, "long") || strings.Contains(tt.name, "empty") {
			if _, ok := errors.AsType[*driver.KeyError](err); !ok {
				t.Errorf("%s: %T, want a *KeyError", tt.name, err)
			}
		}
	}
}

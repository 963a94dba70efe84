package remodel

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
)

// DynamoDB's limits on an item.
const (
	// maxItemBytes is the largest item DynamoDB stores (pipeline.ItemSize).
	maxItemBytes = 400 << 10
	// maxDepth is how deeply lists and maps may nest.
	maxDepth = 32
	// maxNameBytes is the longest attribute name.
	maxNameBytes = 64 << 10
)

// checkItem reports what would make DynamoDB refuse a target item: a
// write it refuses fails the whole transaction, every time it is retried,
// so the remodel refuses the item first, as a permanent failure of its
// source item's change alone.
func checkItem(item pipeline.Item) error {
	if size := pipeline.ItemSize(item); size > maxItemBytes {
		return fmt.Errorf("%d bytes, more than DynamoDB's %d for an item", size, maxItemBytes)
	}
	for name, av := range item {
		switch {
		case name == "":
			return errors.New("an attribute with an empty name")
		case len(name) > maxNameBytes:
			return fmt.Errorf("attribute name of %d bytes, more than DynamoDB's %d", len(name), maxNameBytes)
		case !utf8.ValidString(name):
			return fmt.Errorf("attribute name %s is not valid UTF-8", quote.Value(name))
		}
		if err := checkValue(av, 1); err != nil {
			return fmt.Errorf("attribute %s: %w", quote.Value(name), err)
		}
	}
	return nil
}

func checkValue(av types.AttributeValue, depth int) error {
	switch v := av.(type) {
	case nil:
		return errors.New("no value")
	case *types.AttributeValueMemberS:
		if !utf8.ValidString(v.Value) {
			return errors.New("a string that is not valid UTF-8")
		}
	case *types.AttributeValueMemberN:
		if _, err := decimal.Parse(v.Value); err != nil {
			return err
		}
	case *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL:
	case *types.AttributeValueMemberNULL:
		if !v.Value {
			return errors.New("NULL must be true")
		}
	case *types.AttributeValueMemberSS:
		seen := make(map[string]bool, len(v.Value))
		for _, s := range v.Value {
			if !utf8.ValidString(s) {
				return errors.New("a string set member that is not valid UTF-8")
			}
			if seen[s] {
				return fmt.Errorf("a string set holds %s twice", quote.Value(s))
			}
			seen[s] = true
		}
		return nonEmpty(len(v.Value))
	case *types.AttributeValueMemberNS:
		seen := make(map[string]bool, len(v.Value))
		for _, s := range v.Value {
			d, err := decimal.Parse(s)
			if err != nil {
				return err
			}
			n := d.Normal().String()
			if seen[n] {
				return fmt.Errorf("a number set holds %s twice", n)
			}
			seen[n] = true
		}
		return nonEmpty(len(v.Value))
	case *types.AttributeValueMemberBS:
		seen := make(map[string]bool, len(v.Value))
		for _, b := range v.Value {
			if seen[string(b)] {
				return errors.New("a binary set holds one value twice")
			}
			seen[string(b)] = true
		}
		return nonEmpty(len(v.Value))
	case *types.AttributeValueMemberL:
		if depth >= maxDepth {
			return fmt.Errorf("nested more than %d levels deep", maxDepth)
		}
		for i, e := range v.Value {
			if err := checkValue(e, depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case *types.AttributeValueMemberM:
		if depth >= maxDepth {
			return fmt.Errorf("nested more than %d levels deep", maxDepth)
		}
		for k, e := range v.Value {
			if err := checkValue(e, depth+1); err != nil {
				return fmt.Errorf(".%s: %w", quote.Value(k), err)
			}
		}
	default:
		return fmt.Errorf("a value of type %T", av)
	}
	return nil
}

func nonEmpty(n int) error {
	if n == 0 {
		return errors.New("an empty set (DynamoDB stores no empty set)")
	}
	return nil
}

package projections

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// ErrMissing is the cause of an *ItemError for an attribute the item lacks.
var ErrMissing = errors.New("missing")

// An ItemError reports an item image that a projection cannot handle: a
// poison record for that projection. A Contribute may return any error;
// this one carries the parts an operator looks for, and the seed and the
// spec projections return it.
type ItemError struct {
	// Projection is the name of the projection that rejected the item.
	Projection string
	// PK and SK are the values of the item's partition and sort key
	// attributes (whatever the table names them), as DynamoDB JSON writes
	// them; "" if absent.
	PK, SK string
	// Attr names the attribute or key at fault, e.g. "status" or "SK";
	// "" if the fault is the item as a whole.
	Attr string
	// Err is the cause, e.g. ErrMissing.
	Err error
}

// Error returns e.g. "order-totals: item USER#u42/ORDER#2026-11-30#o1:
// status: want S, got N"; without a Projection (a transform's error, which
// its caller names), from "item" on.
func (e *ItemError) Error() string {
	s := fmt.Sprintf("item %s/%s: ", showKey(e.PK), showKey(e.SK))
	if e.Projection != "" {
		s = e.Projection + ": " + s
	}
	if e.Attr != "" {
		s += e.Attr + ": "
	}
	return s + fmt.Sprint(e.Err)
}

// Unwrap returns the cause.
func (e *ItemError) Unwrap() error { return e.Err }

// SetKeys sets PK and SK from item's attributes named partition and sort
// (sort is "" for a table without a sort key) and returns e.
func (e *ItemError) SetKeys(item pipeline.Item, partition, sort string) *ItemError {
	e.PK, e.SK = keyValue(item, partition), ""
	if sort != "" {
		e.SK = keyValue(item, sort)
	}
	return e
}

// keyValue returns the value of key attribute name as pipeline.KeyValue
// renders it, or "" if it is absent, nil or of a type no key has: it
// serves error messages.
func keyValue(item pipeline.Item, name string) string {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		if v != nil {
			return pipeline.KeyValue(v)
		}
	case *types.AttributeValueMemberN:
		if v != nil {
			return pipeline.KeyValue(v)
		}
	case *types.AttributeValueMemberB:
		if v != nil {
			return pipeline.KeyValue(v)
		}
	}
	return ""
}

// showKey renders a key for an error message: "?" if absent, quoted if it
// holds spaces, unprintable characters or invalid UTF-8.
func showKey(s string) string {
	if s == "" {
		return "?"
	}
	for _, r := range s {
		if r == ' ' || r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

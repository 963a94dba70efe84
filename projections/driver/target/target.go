// Package target is the second kind of store, beside projections/driver's
// Store: a target store, which keeps a remodel's target items. It holds
// the target's key schema (Key) and what every target store has in
// common (Base).
//
// A target store keeps a table of a new key design whose items are
// exactly what a transform makes of the source's, with no attribute of
// the store's own in them. The engine writes them as rows: a row's
// attributes are the whole target item, and its driver.RowRef is the
// item's key (Key.Ref). What exactly-once needs (the source items' ledger
// entries and, per target key, the claim naming the source item that owns
// it, layout.ClaimRef) the store keeps apart from the target items, in a
// table or bucket of its own, written in the same transaction.
//
// A target store is a driver.Store and a driver.Reader (ScanRows returns
// the target items) and has these optional capabilities:
// driver.NameReserver (it reserves no attribute name), driver.ActionCounter
// (a row write takes one action for the item and one for its claim),
// driver.KeyLimiter (the target's key limits) and driver.WriteUnitEstimator
// (layout.TargetWriteUnits). Base gives a target store all four.
package target

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
)

// Key types a table's key attribute may have.
const (
	KeyS = "S"
	KeyN = "N"
	KeyB = "B"
)

// KeyAttr is one key attribute of a table: its name and its DynamoDB type
// (S, N or B).
type KeyAttr struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func (a KeyAttr) String() string { return a.Name + ":" + a.Type }

// Key is a target table's key schema: a partition key and, if the
// table has one, a sort key (Sort.Name empty: none).
type Key struct {
	Partition KeyAttr `json:"partition"`
	Sort      KeyAttr `json:"sort,omitzero"`
}

// NewKey returns the key schema of names ("PK" or "PK:N", a
// partition key and at most one sort key; a type left out is S).
func NewKey(names ...string) (Key, error) {
	var k Key
	if len(names) < 1 || len(names) > 2 {
		return k, fmt.Errorf("a target table's key is a partition key and at most one sort key, got %d attributes", len(names))
	}
	attrs := make([]KeyAttr, len(names))
	for i, n := range names {
		name, typ, found := strings.Cut(strings.TrimSpace(n), ":")
		if !found {
			typ = KeyS
		}
		attrs[i] = KeyAttr{Name: strings.TrimSpace(name), Type: strings.TrimSpace(typ)}
	}
	k.Partition = attrs[0]
	if len(attrs) == 2 {
		k.Sort = attrs[1]
	}
	return k, k.Validate()
}

// Validate reports what is wrong with the key schema.
func (k Key) Validate() error {
	var errs []error
	check := func(role string, a KeyAttr) {
		switch {
		case strings.TrimSpace(a.Name) == "":
			errs = append(errs, fmt.Errorf("the %s key attribute has no name", role))
		case len(a.Name) > 255:
			errs = append(errs, fmt.Errorf("the %s key attribute's name has %d bytes, more than DynamoDB's 255", role, len(a.Name)))
		}
		if a.Type != KeyS && a.Type != KeyN && a.Type != KeyB {
			errs = append(errs, fmt.Errorf("the %s key attribute %s has type %q: want S, N or B", role, quote.Value(a.Name), a.Type))
		}
	}
	check("partition", k.Partition)
	if k.HasSort() {
		check("sort", k.Sort)
		if k.Sort.Name == k.Partition.Name {
			errs = append(errs, fmt.Errorf("the partition and sort key attributes are both %s", quote.Value(k.Sort.Name)))
		}
	} else if k.Sort.Type != "" {
		errs = append(errs, errors.New("the sort key attribute has a type but no name"))
	}
	return errors.Join(errs...)
}

// HasSort reports whether the table has a sort key.
func (k Key) HasSort() bool { return k.Sort.Name != "" }

// Names returns the key attributes' names, the partition key's first.
func (k Key) Names() []string {
	if k.HasSort() {
		return []string{k.Partition.Name, k.Sort.Name}
	}
	return []string{k.Partition.Name}
}

// String renders the schema as NewKey reads it: "PK:S,SK:S".
func (k Key) String() string {
	if k.HasSort() {
		return k.Partition.String() + "," + k.Sort.String()
	}
	return k.Partition.String()
}

// Ref returns the driver.RowRef of a target item of table (the remodel's name,
// driver.RowRef.Projection): Partition and Sort are its key attributes' values
// as text (an S as it is, an N in DynamoDB's normal form, so that 1.0 and
// 1 are one key, a B in standard base64); Sort is "" for a table without a
// sort key. The item must have each key attribute, of its type, within
// DynamoDB's limits (CheckRef).
func (k Key) Ref(table string, item pipeline.Item) (driver.RowRef, error) {
	ref := driver.RowRef{Projection: table}
	var err error
	if ref.Partition, err = keyText(k.Partition, item[k.Partition.Name]); err != nil {
		return ref, err
	}
	if k.HasSort() {
		if ref.Sort, err = keyText(k.Sort, item[k.Sort.Name]); err != nil {
			return ref, err
		}
	}
	return ref, k.CheckRef(ref)
}

// keyText renders one key attribute's value.
func keyText(a KeyAttr, av types.AttributeValue) (string, error) {
	switch v := av.(type) {
	case nil:
		return "", fmt.Errorf("key attribute %s is missing", quote.Value(a.Name))
	case *types.AttributeValueMemberS:
		if a.Type == KeyS {
			return v.Value, nil
		}
	case *types.AttributeValueMemberN:
		if a.Type == KeyN {
			d, err := decimal.Parse(v.Value)
			if err != nil {
				return "", fmt.Errorf("key attribute %s: %w", quote.Value(a.Name), err)
			}
			return d.Normal().String(), nil
		}
	case *types.AttributeValueMemberB:
		if a.Type == KeyB {
			return base64.StdEncoding.EncodeToString(v.Value), nil
		}
	}
	return "", fmt.Errorf("key attribute %s is %s, but the target table's is %s", quote.Value(a.Name), avType(av), a.Type)
}

// avType names an attribute value's DynamoDB type.
func avType(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "an S"
	case *types.AttributeValueMemberN:
		return "an N"
	case *types.AttributeValueMemberB:
		return "a B"
	case *types.AttributeValueMemberBOOL:
		return "a BOOL"
	case *types.AttributeValueMemberNULL:
		return "a NULL"
	case *types.AttributeValueMemberM:
		return "an M"
	case *types.AttributeValueMemberL:
		return "an L"
	case *types.AttributeValueMemberSS:
		return "an SS"
	case *types.AttributeValueMemberNS:
		return "an NS"
	case *types.AttributeValueMemberBS:
		return "a BS"
	}
	return fmt.Sprintf("%T", av)
}

// Key returns the key attributes of the target item ref names: the
// inverse of Ref.
func (k Key) Key(ref driver.RowRef) (pipeline.Item, error) {
	key := make(pipeline.Item, 2)
	pv, err := keyValue(k.Partition, ref.Partition)
	if err != nil {
		return nil, err
	}
	key[k.Partition.Name] = pv
	if k.HasSort() {
		sv, err := keyValue(k.Sort, ref.Sort)
		if err != nil {
			return nil, err
		}
		key[k.Sort.Name] = sv
	} else if ref.Sort != "" {
		return nil, fmt.Errorf("target item %s/%s: the table has no sort key", quote.Value(ref.Partition), quote.Value(ref.Sort))
	}
	return key, nil
}

func keyValue(a KeyAttr, s string) (types.AttributeValue, error) {
	switch a.Type {
	case KeyS:
		return &types.AttributeValueMemberS{Value: s}, nil
	case KeyN:
		if _, err := decimal.Parse(s); err != nil {
			return nil, fmt.Errorf("key attribute %s: %w", quote.Value(a.Name), err)
		}
		return &types.AttributeValueMemberN{Value: s}, nil
	case KeyB:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("key attribute %s: %q is not base64: %w", quote.Value(a.Name), s, err)
		}
		return &types.AttributeValueMemberB{Value: b}, nil
	}
	return nil, fmt.Errorf("key attribute %s has type %q", quote.Value(a.Name), a.Type)
}

// CheckRef reports whether a target item of ref can be stored: DynamoDB's
// limits on a key attribute's value (a partition key at most 2,048 bytes,
// a sort key at most 1,024, neither empty; a string valid UTF-8; for a B,
// the bytes are counted), as a *driver.KeyError.
func (k Key) CheckRef(ref driver.RowRef) error {
	if err := checkKeyValue(k.Partition, "partition key", ref.Partition, layout.MaxPartitionKeyBytes); err != nil {
		return err
	}
	if !k.HasSort() {
		return nil
	}
	return checkKeyValue(k.Sort, "sort key", ref.Sort, layout.MaxSortKeyBytes)
}

func checkKeyValue(a KeyAttr, role, s string, limit int) error {
	what := "target " + role + " " + a.Name
	size := len(s)
	switch a.Type {
	case KeyB:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return &driver.KeyError{What: what, Key: s, Reason: "not base64"}
		}
		size = len(b)
	case KeyN:
		if _, err := decimal.Parse(s); err != nil {
			return &driver.KeyError{What: what, Key: s, Reason: "not a number DynamoDB can hold"}
		}
	}
	switch {
	case size == 0:
		return &driver.KeyError{What: what, Key: s, Reason: "empty"}
	case a.Type == KeyS && !utf8.ValidString(s):
		return &driver.KeyError{What: what, Key: s, Reason: "not valid UTF-8"}
	case size > limit:
		return &driver.KeyError{What: what, Key: s, Size: size, Limit: limit}
	}
	return nil
}

// Base is what every target store has in common, for a target store
// to embed: its key limits (driver.KeyLimiter: the target key's, and no
// aggregate), no reserved name but the empty one (driver.NameReserver), two
// actions a row write, or one for a put whose owner holds the claim
// (driver.ActionCounter), DynamoDB's bill (layout.TargetWriteUnits), and no aggregates
// to scan.
type Base struct {
	// Key is the target's key schema.
	Key Key
}

var (
	_ driver.KeyLimiter         = Base{}
	_ driver.NameReserver       = Base{}
	_ driver.ActionCounter      = Base{}
	_ driver.WriteUnitEstimator = Base{}
)

// CheckAggregate refuses every aggregate: a target holds none.
func (Base) CheckAggregate(ref driver.AggregateRef) error {
	return &driver.KeyError{What: "aggregate key", Key: ref.Key, Reason: "a remodel's target holds no aggregates"}
}

// CheckRow reports whether the target can hold an item of ref (CheckRef).
func (b Base) CheckRow(ref driver.RowRef) error { return b.Key.CheckRef(ref) }

// ReservesName reports whether the target keeps name for itself: only the
// empty name, since it keeps nothing of its own in the target items.
func (Base) ReservesName(name string) bool { return name == "" }

// PutActions is 2 (the item and its claim), or 1 when the owner holds the
// claim already (driver.RowPut.Held); one more to check the owner it takes the
// item from (driver.RowPut.CheckFrom).
func (Base) PutActions(p driver.RowPut) int {
	n := 2
	if p.Held {
		n = 1
	}
	if p.CheckFrom {
		n++
	}
	return n
}

// DeleteActions is 2: the item and its claim.
func (Base) DeleteActions(driver.RowDelete) int { return 2 }

// WriteUnits is layout.TargetWriteUnits.
func (Base) WriteUnits(tx *driver.Tx) float64 { return layout.TargetWriteUnits(tx) }

// ScanAggregates calls fn for nothing: a target holds no aggregates.
func (Base) ScanAggregates(context.Context, func(driver.AggregateRef, map[string]decimal.Decimal) error) error {
	return nil
}

package sim

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// OpKind says what an operation does to the table.
type OpKind uint8

// The kinds of operation.
const (
	// Put writes a whole item: it creates the item (version 1) or replaces it
	// (version + 1). A Put that changes nothing is a no-op write.
	Put OpKind = iota + 1
	// Delete is a user's DeleteItem. Deleting a missing item is a no-op.
	Delete
	// Expire is DynamoDB's time to live deleting an item whose ttl has passed.
	// Only items with a numeric ttl attribute can expire.
	Expire
)

// String returns put, delete or expire.
func (k OpKind) String() string {
	switch k {
	case Put:
		return "put"
	case Delete:
		return "delete"
	case Expire:
		return "expire"
	}
	return "unknown"
}

// Op is one operation on the table.
type Op struct {
	Kind OpKind
	// Item is, for a Put, the item to write, without its version (the Table
	// sets it); for a Delete or an Expire, at least the item's keys.
	Item pipeline.Item
	// Action says what the workload meant, e.g. "order-pay" or
	// "comment-expire"; it is copied into the record for tests and the demo.
	Action string
}

// Key attribute names of the simulated table, and its optimistic-locking
// version and TTL attributes.
const (
	attrPK      = "PK"
	attrSK      = "SK"
	attrVersion = "version"
	attrTTL     = "ttl"
	attrType    = "EntityType"
)

// Table models the source table, keyed by the string attributes PK and SK.
//
// It plays both the application's optimistic-locking layer, which writes
// version 1 when it creates an item (a conditional put on attribute_not_exists)
// and version+1 when it replaces one, and DynamoDB, which emits a stream record
// for every write that changes the item and none for one that does not. An item
// deleted and created again starts at version 1: versions alone do not order
// changes across incarnations.
type Table struct {
	items map[itemKey]entry
}

type entry struct {
	item    pipeline.Item // with its version attribute
	keys    pipeline.Item // PK and SK, shared by the records of the item
	version int64
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{items: make(map[itemKey]entry)} }

// itemKey is an item's PK and SK.
type itemKey [2]string

func tableKey(pk, sk string) itemKey { return itemKey{pk, sk} }

// keyStrings returns item's PK and SK.
func keyStrings(item pipeline.Item) (pk, sk string, err error) {
	p, ok1 := item[attrPK].(*types.AttributeValueMemberS)
	s, ok2 := item[attrSK].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 || p == nil || s == nil || p.Value == "" || s.Value == "" {
		return "", "", errors.New("sim: item needs non-empty string PK and SK")
	}
	return p.Value, s.Value, nil
}

// Len returns the number of items in the table.
func (t *Table) Len() int { return len(t.items) }

// Get returns the current item with keys pk and sk, version included, or nil.
func (t *Table) Get(pk, sk string) pipeline.Item { return t.items[tableKey(pk, sk)].item }

// Items returns the current items, sorted by PK then SK.
func (t *Table) Items() []pipeline.Item {
	keys := make([]itemKey, 0, len(t.items))
	for k := range t.items {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b itemKey) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	out := make([]pipeline.Item, len(keys))
	for i, k := range keys {
		out[i] = t.items[k].item
	}
	return out
}

// Apply applies op and returns the stream record it causes, with Kind, Keys,
// Old, New, TTL and Action set (the Stream sets the rest). ok is false for an
// operation that changes nothing, which DynamoDB does not put in the stream.
// An error means an invalid operation (no keys, an Expire of an item without a
// ttl) and leaves the table as it was.
func (t *Table) Apply(op Op) (rec Record, ok bool, err error) {
	return t.apply(op, false)
}

// apply is Apply; owned says that op.Item is the caller's to give away, so
// that a Put can keep it (with the version added) rather than copy it.
func (t *Table) apply(op Op, owned bool) (rec Record, ok bool, err error) {
	pk, sk, err := keyStrings(op.Item)
	if err != nil {
		return Record{}, false, err
	}
	k := tableKey(pk, sk)
	cur, exists := t.items[k]
	rec = Record{Keys: cur.keys, Action: op.Action}
	if !exists {
		rec.Keys = pipeline.Item{attrPK: op.Item[attrPK], attrSK: op.Item[attrSK]}
	}
	switch op.Kind {
	case Put:
		version := int64(1)
		rec.Kind = pipeline.Insert
		if exists {
			if sameContent(cur.item, op.Item) {
				return Record{}, false, nil
			}
			version = cur.version + 1
			rec.Kind, rec.Old = pipeline.Modify, cur.item
		}
		next := op.Item
		if !owned {
			next = make(pipeline.Item, len(op.Item)+1)
			for name, v := range op.Item {
				next[name] = v
			}
		}
		next[attrVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)}
		t.items[k] = entry{item: next, keys: rec.Keys, version: version}
		rec.New = next
	case Delete, Expire:
		if !exists {
			return Record{}, false, nil
		}
		if op.Kind == Expire {
			if _, hasTTL := cur.item[attrTTL].(*types.AttributeValueMemberN); !hasTTL {
				return Record{}, false, fmt.Errorf("sim: %s/%s cannot expire: it has no numeric %s", pk, sk, attrTTL)
			}
		}
		delete(t.items, k)
		rec.Kind, rec.Old, rec.TTL = pipeline.Remove, cur.item, op.Kind == Expire
	default:
		return Record{}, false, fmt.Errorf("sim: unknown op kind %d", op.Kind)
	}
	return rec, true, nil
}

// sameContent reports whether writing item over cur would change nothing but
// the version: the attributes other than version are equal.
func sameContent(cur, item pipeline.Item) bool {
	n := 0
	for name, v := range item {
		if name == attrVersion {
			continue
		}
		n++
		if w, ok := cur[name]; !ok || !equalValue(v, w) {
			return false
		}
	}
	_, curHasVersion := cur[attrVersion]
	if curHasVersion {
		n++
	}
	return n == len(cur)
}

// equalValue reports whether two attribute values are the same DynamoDB value
// as written (numbers compare as their text, as the workload writes them
// normalised).
func equalValue(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		return ok && slices.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		return ok && slices.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		return ok && slices.EqualFunc(x.Value, y.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(x.Value, y.Value, equalValue)
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for name, v := range x.Value {
			if w, ok := y.Value[name]; !ok || !equalValue(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// entityType returns item's EntityType, or "".
func entityType(item pipeline.Item) string {
	if s, ok := item[attrType].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// shortKey renders an item's keys for messages: PK/SK.
func shortKey(item pipeline.Item) string {
	pk, sk, err := keyStrings(item)
	if err != nil {
		return "?"
	}
	return strings.Join([]string{pk, sk}, "/")
}

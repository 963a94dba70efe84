package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// sep separates the parts of composite keys. Parts may not contain it, so a
// key splits back into its parts one way only, and a prefix of whole parts
// never matches a longer part ("P" does not match "P1").
const sep = 0x00

// formatV1 is the first byte of encoded ledger entries and aggregate values.
const formatV1 = 0x01

var errTruncated = errors.New("truncated value")

// --- keys ---

func checkLedgerKey(key string) error {
	switch {
	case key == "":
		return errors.New("ledger key is empty")
	case !utf8.ValidString(key):
		return fmt.Errorf("ledger key %q is not valid UTF-8", key)
	}
	return nil
}

// checkPart checks one part of a composite key; what names it for the error.
func checkPart(what, part string) error {
	switch {
	case strings.IndexByte(part, sep) >= 0:
		return fmt.Errorf("%s %q contains a 0x00 byte, which the store reserves as its key separator", what, part)
	case !utf8.ValidString(part):
		return fmt.Errorf("%s %q is not valid UTF-8", what, part)
	}
	return nil
}

func aggregateKey(ref driver.AggregateRef) ([]byte, error) {
	what := describeAggregate(ref)
	if ref.Projection == "" {
		return nil, fmt.Errorf("%s: empty projection name", what)
	}
	if err := checkPart(what+": projection", ref.Projection); err != nil {
		return nil, err
	}
	if err := checkPart(what+": key", ref.Key); err != nil {
		return nil, err
	}
	if ref.Shard < 0 || ref.Shard > math.MaxUint32 {
		return nil, fmt.Errorf("%s: shard %d out of range", what, ref.Shard)
	}
	k := make([]byte, 0, len(ref.Projection)+len(ref.Key)+6)
	k = append(k, ref.Projection...)
	k = append(k, sep)
	k = append(k, ref.Key...)
	k = append(k, sep)
	return binary.BigEndian.AppendUint32(k, uint32(ref.Shard)), nil
}

func parseAggregateKey(k []byte) (driver.AggregateRef, error) {
	projection, rest, ok1 := bytes.Cut(k, []byte{sep})
	key, shard, ok2 := bytes.Cut(rest, []byte{sep})
	if !ok1 || !ok2 || len(shard) != 4 {
		return driver.AggregateRef{}, fmt.Errorf("malformed aggregate key %q", k)
	}
	return driver.AggregateRef{
		Projection: string(projection),
		Key:        string(key),
		Shard:      int(binary.BigEndian.Uint32(shard)),
	}, nil
}

// rowPrefix is the key prefix of all rows of one projection's partition.
func rowPrefix(projection, partition string) ([]byte, error) {
	what := fmt.Sprintf("rows %q/%q", projection, partition)
	if projection == "" {
		return nil, fmt.Errorf("%s: empty projection name", what)
	}
	if err := checkPart(what+": projection", projection); err != nil {
		return nil, err
	}
	if err := checkPart(what+": partition", partition); err != nil {
		return nil, err
	}
	k := make([]byte, 0, len(projection)+len(partition)+2)
	k = append(k, projection...)
	k = append(k, sep)
	k = append(k, partition...)
	return append(k, sep), nil
}

func rowKey(ref driver.RowRef) ([]byte, error) {
	k, err := rowPrefix(ref.Projection, ref.Partition)
	if err != nil {
		return nil, err
	}
	if err := checkPart(describeRow(ref)+": sort key", ref.Sort); err != nil {
		return nil, err
	}
	return append(k, ref.Sort...), nil
}

func parseRowKey(k []byte) (driver.RowRef, error) {
	projection, rest, ok1 := bytes.Cut(k, []byte{sep})
	partition, sort, ok2 := bytes.Cut(rest, []byte{sep})
	if !ok1 || !ok2 {
		return driver.RowRef{}, fmt.Errorf("malformed row key %q", k)
	}
	return driver.RowRef{Projection: string(projection), Partition: string(partition), Sort: string(sort)}, nil
}

func describeAggregate(ref driver.AggregateRef) string {
	return fmt.Sprintf("aggregate %q/%q shard %d", ref.Projection, ref.Key, ref.Shard)
}

func describeRow(ref driver.RowRef) string {
	return fmt.Sprintf("row %q/%q/%q", ref.Projection, ref.Partition, ref.Sort)
}

// --- ledger entries ---

func encodeLedger(rev, expiresAt int64, body []byte) []byte {
	v := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(body))
	v = append(v, formatV1)
	v = binary.AppendUvarint(v, uint64(rev))
	v = binary.AppendVarint(v, expiresAt)
	return append(v, body...)
}

// decodeLedger decodes a stored ledger entry; the body is a copy.
func decodeLedger(v []byte) (driver.LedgerEntry, int64, error) {
	if len(v) == 0 || v[0] != formatV1 {
		return driver.LedgerEntry{}, 0, fmt.Errorf("ledger entry in unknown format (% x)", v[:min(len(v), 8)])
	}
	v = v[1:]
	rev, n := binary.Uvarint(v)
	if n <= 0 || rev > math.MaxInt64 {
		return driver.LedgerEntry{}, 0, errTruncated
	}
	v = v[n:]
	expiresAt, n := binary.Varint(v)
	if n <= 0 {
		return driver.LedgerEntry{}, 0, errTruncated
	}
	e := driver.LedgerEntry{Rev: int64(rev)}
	if body := v[n:]; len(body) > 0 {
		e.Body = bytes.Clone(body)
	}
	return e, expiresAt, nil
}

// --- aggregate values ---

func checkValueNames(a driver.Add) error {
	for name := range a.Values {
		if driver.ReservedName(name) {
			return fmt.Errorf("%s: value name %q is reserved", describeAggregate(a.Ref), name)
		}
		if !utf8.ValidString(name) {
			return fmt.Errorf("%s: value name %q is not valid UTF-8", describeAggregate(a.Ref), name)
		}
	}
	return nil
}

// checkNumber reports an error if d is not a number DynamoDB can store.
func checkNumber(d decimal.Decimal) error {
	if _, err := decimal.Parse(d.String()); err != nil {
		return fmt.Errorf("not a DynamoDB number: %w", err)
	}
	return nil
}

// encodeValues encodes aggregate values, each in DynamoDB's normal form
// (decimal.Decimal.Normal), as DynamoDB stores a number.
func encodeValues(values map[string]decimal.Decimal) []byte {
	v := []byte{formatV1}
	v = binary.AppendUvarint(v, uint64(len(values)))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		v = binary.AppendUvarint(v, uint64(len(name)))
		v = append(v, name...)
		s := values[name].Normal().String()
		v = binary.AppendUvarint(v, uint64(len(s)))
		v = append(v, s...)
	}
	return v
}

// decodeValues decodes stored aggregate values; nil (no item) is no values.
// Each is in DynamoDB's normal form, also those a version before it stored
// at their operands' scale.
func decodeValues(v []byte) (map[string]decimal.Decimal, error) {
	if v == nil {
		return map[string]decimal.Decimal{}, nil
	}
	if len(v) == 0 || v[0] != formatV1 {
		return nil, fmt.Errorf("aggregate values in unknown format (% x)", v[:min(len(v), 8)])
	}
	v = v[1:]
	count, n := binary.Uvarint(v)
	if n <= 0 || count > uint64(len(v)) {
		return nil, errTruncated
	}
	v = v[n:]
	next := func() (string, bool) {
		l, n := binary.Uvarint(v)
		if n <= 0 || l > uint64(len(v)-n) {
			return "", false
		}
		s := string(v[n : n+int(l)])
		v = v[n+int(l):]
		return s, true
	}
	values := make(map[string]decimal.Decimal, count)
	for range count {
		name, ok1 := next()
		s, ok2 := next()
		if !ok1 || !ok2 {
			return nil, errTruncated
		}
		d, err := decimal.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", name, err)
		}
		values[name] = d.Normal()
	}
	if len(v) != 0 {
		return nil, fmt.Errorf("%d bytes after the last value", len(v))
	}
	return values, nil
}

// --- rows ---

// ownerAttr holds a row's owner in its stored attributes (a reserved name:
// no row attribute has it).
const ownerAttr = "rowOwner"

func encodeRow(attrs pipeline.Item, owner string) ([]byte, error) {
	for name, av := range attrs {
		if driver.ReservedName(name) {
			return nil, fmt.Errorf("attribute name %q is reserved", name)
		}
		if err := checkAV(strconv.Quote(name), av); err != nil {
			return nil, err
		}
	}
	if owner != "" {
		with := make(pipeline.Item, len(attrs)+1)
		for k, v := range attrs {
			with[k] = v
		}
		with[ownerAttr] = &types.AttributeValueMemberS{Value: owner}
		attrs = with
	}
	v, err := attributevalue.MarshalMapJSON(attrs)
	if err != nil {
		return nil, fmt.Errorf("encode attributes: %w", err)
	}
	return v, nil
}

func decodeStoredRow(k, v []byte) (driver.StoredRow, error) {
	ref, err := parseRowKey(k)
	if err != nil {
		return driver.StoredRow{}, err
	}
	attrs, err := attributevalue.UnmarshalMapJSON(v)
	if err != nil {
		return driver.StoredRow{}, fmt.Errorf("%s: decode attributes: %w", describeRow(ref), err)
	}
	row := driver.StoredRow{Ref: ref, Attrs: attrs}
	if o, ok := attrs[ownerAttr].(*types.AttributeValueMemberS); ok {
		row.Owner = o.Value
		delete(attrs, ownerAttr)
	}
	return row, nil
}

// checkAV rejects the attribute values DynamoDB rejects: nil values, invalid
// numbers and strings, NULL false, and empty sets or sets with duplicates.
func checkAV(path string, av types.AttributeValue) error {
	switch v := av.(type) {
	case nil:
		return fmt.Errorf("attribute %s is nil", path)
	case *types.AttributeValueMemberS:
		if !utf8.ValidString(v.Value) {
			return fmt.Errorf("attribute %s: string is not valid UTF-8", path)
		}
	case *types.AttributeValueMemberN:
		if _, err := decimal.Parse(v.Value); err != nil {
			return fmt.Errorf("attribute %s: %w", path, err)
		}
	case *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL:
	case *types.AttributeValueMemberNULL:
		if !v.Value {
			return fmt.Errorf("attribute %s: NULL must be true", path)
		}
	case *types.AttributeValueMemberSS:
		return checkSet(path, v.Value, func(s string) (string, error) {
			if !utf8.ValidString(s) {
				return "", fmt.Errorf("%q is not valid UTF-8", s)
			}
			return s, nil
		})
	case *types.AttributeValueMemberNS:
		return checkSet(path, v.Value, func(s string) (string, error) {
			d, err := decimal.Parse(s)
			if err != nil {
				return "", err
			}
			// "1" and "1.0" are the same number, so duplicates.
			out := d.String()
			if strings.Contains(out, ".") {
				out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
			}
			return out, nil
		})
	case *types.AttributeValueMemberBS:
		return checkSet(path, v.Value, func(b []byte) (string, error) { return string(b), nil })
	case *types.AttributeValueMemberL:
		for i, e := range v.Value {
			if err := checkAV(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	case *types.AttributeValueMemberM:
		for name, e := range v.Value {
			if err := checkAV(path+"."+strconv.Quote(name), e); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("attribute %s: unsupported attribute value type %T", path, av)
	}
	return nil
}

func checkSet[E any](path string, elems []E, canon func(E) (string, error)) error {
	if len(elems) == 0 {
		return fmt.Errorf("attribute %s: empty set", path)
	}
	seen := make(map[string]struct{}, len(elems))
	for _, e := range elems {
		c, err := canon(e)
		if err != nil {
			return fmt.Errorf("attribute %s: %w", path, err)
		}
		if _, dup := seen[c]; dup {
			return fmt.Errorf("attribute %s: set holds %v twice", path, e)
		}
		seen[c] = struct{}{}
	}
	return nil
}

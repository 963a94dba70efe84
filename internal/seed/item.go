package seed

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/ddbjson"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// The helpers below read one attribute of an item image each. They switch on
// the SDK's attribute-value member types directly: faster than
// attributevalue.Unmarshal, and the error says what was found. Every error
// they return is a *projections.ItemError with Attr set; fail completes it with the
// projection's name and the item's keys.

// hotShards is the write-shard count of aggregates that every source item of
// a projection touches (a season's match count, a status's order totals).
const hotShards = 8

// attrError returns the partial *projections.ItemError for a fault in attribute name.
func attrError(name string, err error) error {
	return &projections.ItemError{Attr: name, Err: err}
}

// attrErrorf is attrError with a formatted cause.
func attrErrorf(name, format string, args ...any) error {
	return &projections.ItemError{Attr: name, Err: fmt.Errorf(format, args...)}
}

// fail completes err, returned by the helpers while reading item, into the
// error that projection's Contribute returns.
func fail(projection string, item pipeline.Item, err error) error {
	var ie *projections.ItemError
	if !errors.As(err, &ie) {
		ie = &projections.ItemError{Err: err}
	}
	ie.Projection = projection
	return ie.SetKeys(item, "PK", "SK")
}

// present reports whether item has attribute name with a value (a nil
// interface or a nil member pointer counts as absent).
func present(item pipeline.Item, name string) bool {
	av, ok := item[name]
	if !ok || av == nil {
		return false
	}
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v != nil
	case *types.AttributeValueMemberN:
		return v != nil
	case *types.AttributeValueMemberNULL:
		return v != nil
	}
	return true
}

// str returns the value of S attribute name.
func str(item pipeline.Item, name string) (string, error) {
	if !present(item, name) {
		return "", attrError(name, projections.ErrMissing)
	}
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", attrErrorf(name, "want S, got %s", ddbjson.TypeName(item[name]))
	}
	return v.Value, nil
}

// optStr returns the value of S attribute name and true, or "" and false if
// the attribute is absent or NULL.
func optStr(item pipeline.Item, name string) (string, bool, error) {
	if !present(item, name) {
		return "", false, nil
	}
	if _, ok := item[name].(*types.AttributeValueMemberNULL); ok {
		return "", false, nil
	}
	s, err := str(item, name)
	return s, err == nil, err
}

// number returns the value of N attribute name as written and parsed.
func number(item pipeline.Item, name string) (string, decimal.Decimal, error) {
	if !present(item, name) {
		return "", decimal.Decimal{}, attrError(name, projections.ErrMissing)
	}
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return "", decimal.Decimal{}, attrErrorf(name, "want N, got %s", ddbjson.TypeName(item[name]))
	}
	d, err := decimal.Parse(v.Value)
	if err != nil {
		return v.Value, decimal.Decimal{}, attrError(name, err)
	}
	return v.Value, d, nil
}

// num returns the value of N attribute name, exactly.
func num(item pipeline.Item, name string) (decimal.Decimal, error) {
	_, d, err := number(item, name)
	return d, err
}

// integer returns the value of N attribute name, which must be an integer
// (at any scale: "3.00" is 3) from lo to hi.
func integer(item pipeline.Item, name string, lo, hi int64) (int64, error) {
	raw, d, err := number(item, name)
	if err != nil {
		return 0, err
	}
	n, ok := d.Int64()
	switch {
	case ok && lo <= n && n <= hi:
	case lo == math.MinInt64 && hi == math.MaxInt64:
		return 0, attrErrorf(name, "want a 64-bit integer, got %s", raw)
	default:
		return 0, attrErrorf(name, "want an integer from %d to %d, got %s", lo, hi, raw)
	}
	return n, nil
}

// entityType returns the item's EntityType, which must be one of want.
func entityType(item pipeline.Item, want ...string) (string, error) {
	t, err := str(item, "EntityType")
	if err != nil {
		return "", err
	}
	for _, w := range want {
		if t == w {
			return t, nil
		}
	}
	return "", attrErrorf("EntityType", "want %s, got %s", strings.Join(want, " or "), quote.Value(t))
}

// oneOf returns the value of S attribute name, which must be one of want.
func oneOf(item pipeline.Item, name string, want ...string) (string, error) {
	s, err := str(item, name)
	if err != nil {
		return "", err
	}
	for _, w := range want {
		if s == w {
			return s, nil
		}
	}
	return "", attrErrorf(name, "want %s, got %s", orList(want), quote.Value(s))
}

// orList renders want as "A, B or C".
func orList(want []string) string {
	if len(want) < 2 {
		return strings.Join(want, "")
	}
	return strings.Join(want[:len(want)-1], ", ") + " or " + want[len(want)-1]
}

// keyPart returns the value of S attribute name, which becomes part of an
// aggregate key and so must be non-empty and free of '#'.
func keyPart(item pipeline.Item, name string) (string, error) {
	s, err := str(item, name)
	if err != nil {
		return "", err
	}
	if err := checkKeyPart(name, s); err != nil {
		return "", err
	}
	return s, nil
}

// checkKeyPart checks that value s of attribute name can be part of a key.
func checkKeyPart(name, s string) error {
	switch {
	case s == "":
		return attrErrorf(name, "empty")
	case strings.Contains(s, "#"):
		return attrErrorf(name, "%s contains '#'", quote.Value(s))
	}
	return nil
}

// A keyShape is the documented form of a key attribute, such as
// "MATCH#<ISO-8601>#<matchId>": '#'-separated parts, each either a literal
// or a <placeholder> standing for a non-empty part without '#'.
type keyShape struct {
	attr  string   // "PK" or "SK"
	form  string   // the documented form
	parts []string // literal parts, "" for a placeholder
}

// shape returns the keyShape of attribute attr with the given form.
func shape(attr, form string) keyShape {
	parts := strings.Split(form, "#")
	for i, p := range parts {
		if strings.HasPrefix(p, "<") && strings.HasSuffix(p, ">") {
			parts[i] = ""
		}
	}
	return keyShape{attr: attr, form: form, parts: parts}
}

// parse reads the key from item and returns its placeholder parts in order.
func (k keyShape) parse(item pipeline.Item) ([]string, error) {
	s, err := str(item, k.attr)
	if err != nil {
		return nil, err
	}
	got := strings.Split(s, "#")
	if len(got) != len(k.parts) {
		return nil, attrErrorf(k.attr, "want %s", k.form)
	}
	vars := make([]string, 0, len(got))
	for i, p := range k.parts {
		switch {
		case p == "" && got[i] != "":
			vars = append(vars, got[i])
		case p == "" || got[i] != p:
			return nil, attrErrorf(k.attr, "want %s", k.form)
		}
	}
	return vars, nil
}

// one is the value of a count. Decimals are immutable, so contributions
// may share it.
var one = decimal.FromInt(1)

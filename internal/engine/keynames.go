package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// keyAttributesError is a gate's refusal of a table whose ledger holds a
// source item keyed by other attributes than those it reads the export's
// items by: the same item would be two ledger entries, and a gate that
// told them apart by key would expect both (a table doubled the same way
// would agree).
type keyAttributesError struct {
	// Item is the source item, as its ledger key shows it.
	Item string
	// Held are the attribute names of its ledger key; Checked the key
	// attributes the gate reads items by. Both sorted.
	Held, Checked []string
}

func (e *keyAttributesError) Error() string {
	return fmt.Sprintf("the table's ledger holds item %s keyed by %s, and the check reads the export's items by %s: "+
		"a table whose items were written under other key attributes (a backfill given other key attributes than the table's?) cannot be checked by these; "+
		"check with the key attributes it was written under, and if its ledger holds items under both, backfill into a new table with the table's own",
		e.Item, strings.Join(e.Held, ","), strings.Join(e.Checked, ","))
}

// KeyAttributesCheck returns a check of source items' ledger keys against
// the key attributes a gate reads the export's items by: it returns a
// *keyAttributesError for a key whose attribute names are others. A key
// too long to be kept as it is (held as its hash) does not show its
// names and passes. The check allocates nothing for a key of the
// expected names.
func KeyAttributesCheck(attributes []string) func(ledgerKey string) error {
	want := slices.Sorted(slices.Values(attributes))
	want = slices.Compact(want)
	var held []string
	return func(key string) error {
		if strings.HasPrefix(key, "sha256:") {
			return nil
		}
		var ok bool
		held, ok = ledgerKeyNames(key, held[:0])
		if ok && slices.Equal(held, want) {
			return nil
		}
		names := slices.Clone(held)
		if !ok {
			names = nil
			var attrs map[string]json.RawMessage
			if json.Unmarshal([]byte(key), &attrs) == nil {
				for name := range attrs {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			if slices.Equal(names, want) {
				return nil
			}
		}
		return &keyAttributesError{Item: describeOwner(key), Held: names, Checked: want}
	}
}

// ledgerKeyNames appends the attribute names of a ledger key, in the
// order it holds them, to names: the key in the compact form
// pipeline.ItemKey writes, names without escapes. ok is false for any
// other form (the caller decodes it whole).
func ledgerKeyNames(key string, names []string) (_ []string, ok bool) {
	if len(key) < 2 || key[0] != '{' {
		return names, false
	}
	i := 1
	if key[i] == '}' {
		return names, i+1 == len(key)
	}
	for {
		// "name":
		if i >= len(key) || key[i] != '"' {
			return names, false
		}
		end := strings.IndexByte(key[i+1:], '"')
		if end < 0 {
			return names, false
		}
		name := key[i+1 : i+1+end]
		if strings.IndexByte(name, '\\') >= 0 {
			return names, false
		}
		names = append(names, name)
		i += end + 2
		if i >= len(key) || key[i] != ':' {
			return names, false
		}
		// The value: an object, skipped to its end.
		i++
		depth, inString := 0, false
		for ; i < len(key); i++ {
			c := key[i]
			switch {
			case inString && c == '\\':
				i++
			case c == '"':
				inString = !inString
			case inString:
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
			}
			if depth == 0 && !inString {
				break
			}
		}
		if depth != 0 || i >= len(key) {
			return names, false
		}
		i++
		switch {
		case i < len(key) && key[i] == ',':
			i++
		case i+1 == len(key) && key[i] == '}':
			return names, true
		default:
			return names, false
		}
	}
}

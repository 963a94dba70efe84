package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Schema names the attributes of a table's items that Tributary reads: the
// entity type a change dispatches on, the version that orders an item's
// changes, the key attributes (where whole items arrive without their keys:
// export lines, archived items) and the TTL attribute that dates an
// expired item. It is part of a table's environment (projections.Environment),
// set once by a spec file or a Go main and read by every command and
// function. The zero value is the seed tables' schema: EntityType,
// version, PK and SK, ttl.
type Schema struct {
	// TypeAttribute holds an item's entity type. Default EntityType.
	TypeAttribute string `json:"typeAttribute,omitempty"`
	// VersionAttribute holds an item's version number, bumped on every
	// write. Default version.
	VersionAttribute string `json:"versionAttribute,omitempty"`
	// KeyAttributes are the table's key attributes: the partition key, and
	// the sort key if the table has one. Default PK, SK.
	KeyAttributes []string `json:"keyAttributes,omitempty"`
	// TTLAttribute holds an item's expiry, in epoch seconds (DynamoDB's
	// time to live). Default ttl.
	TTLAttribute string `json:"ttlAttribute,omitempty"`
}

// Defaults of Schema.
const (
	DefaultTypeAttribute    = "EntityType"
	DefaultVersionAttribute = "version"
	DefaultTTLAttribute     = "ttl"
)

// DefaultKeyAttributes returns the default key attributes, PK and SK.
func DefaultKeyAttributes() []string { return []string{"PK", "SK"} }

// WithDefaults returns s with every attribute it leaves empty set to its
// default.
func (s Schema) WithDefaults() Schema {
	if s.TypeAttribute == "" {
		s.TypeAttribute = DefaultTypeAttribute
	}
	if s.VersionAttribute == "" {
		s.VersionAttribute = DefaultVersionAttribute
	}
	if len(s.KeyAttributes) == 0 {
		s.KeyAttributes = DefaultKeyAttributes()
	} else {
		s.KeyAttributes = slices.Clone(s.KeyAttributes)
	}
	if s.TTLAttribute == "" {
		s.TTLAttribute = DefaultTTLAttribute
	}
	return s
}

// maxAttributeNameBytes is the longest attribute name DynamoDB allows for
// a key attribute (and so the longest any schema attribute may be: the
// others are top-level attributes, whose names may be up to 64 KB, but a
// schema naming one that long is a mistake).
const maxAttributeNameBytes = 255

// Validate reports every problem of s (after WithDefaults) at once: an
// attribute name that is blank or longer than DynamoDB's 255 bytes for key
// attributes, more than two key attributes, two of the type, version and
// TTL attributes that are one, and a version or TTL attribute that is a
// key attribute.
func (s Schema) Validate() error {
	s = s.WithDefaults()
	var errs []error
	name := func(role, v string) {
		switch {
		case strings.TrimSpace(v) == "":
			errs = append(errs, fmt.Errorf("%s: blank", role))
		case len(v) > maxAttributeNameBytes:
			errs = append(errs, fmt.Errorf("%s: %d bytes, more than DynamoDB's %d for a key attribute's name", role, len(v), maxAttributeNameBytes))
		}
	}
	name("type attribute", s.TypeAttribute)
	name("version attribute", s.VersionAttribute)
	name("TTL attribute", s.TTLAttribute)
	if n := len(s.KeyAttributes); n > 2 {
		errs = append(errs, fmt.Errorf("key attributes: %d of them, but a DynamoDB table has a partition key and at most one sort key", n))
	}
	for i, k := range s.KeyAttributes {
		name(fmt.Sprintf("key attribute %d", i+1), k)
	}
	if len(s.KeyAttributes) == 2 && s.KeyAttributes[0] == s.KeyAttributes[1] {
		errs = append(errs, fmt.Errorf("key attributes: %q twice", s.KeyAttributes[0]))
	}
	roles := map[string]string{}
	for _, r := range []struct{ role, v string }{
		{"the type attribute", s.TypeAttribute}, {"the version attribute", s.VersionAttribute}, {"the TTL attribute", s.TTLAttribute},
	} {
		if other, ok := roles[r.v]; ok {
			errs = append(errs, fmt.Errorf("%s and %s are both %q", other, r.role, r.v))
			continue
		}
		roles[r.v] = r.role
	}
	for _, k := range s.KeyAttributes {
		// An entity type kept in a key attribute is a design of its own;
		// a version or an expiry in one is a mistake.
		if role, ok := roles[k]; ok && k != s.TypeAttribute {
			errs = append(errs, fmt.Errorf("%s %q is also a key attribute", role, k))
		}
	}
	return errors.Join(errs...)
}

// String describes s as the template parameters and flags name its parts:
// "type EntityType, version version, keys PK,SK, ttl ttl".
func (s Schema) String() string {
	s = s.WithDefaults()
	return fmt.Sprintf("type %s, version %s, keys %s, ttl %s", s.TypeAttribute, s.VersionAttribute, strings.Join(s.KeyAttributes, ","), s.TTLAttribute)
}

// Override returns s with every attribute o names in place of s's.
func (s Schema) Override(o Schema) Schema {
	if o.TypeAttribute != "" {
		s.TypeAttribute = o.TypeAttribute
	}
	if o.VersionAttribute != "" {
		s.VersionAttribute = o.VersionAttribute
	}
	if len(o.KeyAttributes) > 0 {
		s.KeyAttributes = slices.Clone(o.KeyAttributes)
	}
	if o.TTLAttribute != "" {
		s.TTLAttribute = o.TTLAttribute
	}
	return s
}

// Configure returns the schema an entry point runs with: s, what its
// environment declares (a spec's attributes, a Go main's), with the
// attributes that given names (a function's variables, a command's flags)
// where s names none. An attribute given that differs from one s names
// is an error, since each is the table's own: names says what given's
// fields are called (keyed "type", "version", "keys" and "ttl", e.g.
// "TYPE_ATTRIBUTE" or "--type-attribute"), for the message. Defaults are
// not filled in.
func (s Schema) Configure(given Schema, names map[string]string) (Schema, error) {
	var errs []error
	one := func(role, what string, declared *string, v string) {
		switch {
		case v == "":
		case *declared == "":
			*declared = v
		case *declared != v:
			errs = append(errs, fmt.Errorf("%s %q, but this table's environment reads %s from %q: give that, or leave %s out", names[role], v, what, *declared, names[role]))
		}
	}
	one("type", "the entity type", &s.TypeAttribute, given.TypeAttribute)
	one("version", "the version", &s.VersionAttribute, given.VersionAttribute)
	one("ttl", "the expiry", &s.TTLAttribute, given.TTLAttribute)
	switch {
	case len(given.KeyAttributes) == 0:
	case len(s.KeyAttributes) == 0:
		s.KeyAttributes = slices.Clone(given.KeyAttributes)
	case !slices.Equal(s.KeyAttributes, given.KeyAttributes):
		errs = append(errs, fmt.Errorf("%s %s, but this table's environment has the key attributes %s: give those, or leave %s out", names["keys"], strings.Join(given.KeyAttributes, ","), strings.Join(s.KeyAttributes, ","), names["keys"]))
	}
	return s, errors.Join(errs...)
}

// Resolve returns the schema an entry point runs with, in the one order
// every entry point resolves it: s (its environment's, a spec's in place
// of a main's), the attributes given where s names none (Configure), the
// defaults for the rest (WithDefaults), then Validate.
func (s Schema) Resolve(given Schema, names map[string]string) (Schema, error) {
	s, err := s.Configure(given, names)
	if err != nil {
		return s, err
	}
	s = s.WithDefaults()
	return s, s.Validate()
}

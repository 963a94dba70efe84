package projections

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Definer is implemented by a projection that can describe what it computes.
// The description is part of the projection's fingerprint (see Set), so a
// projection whose Definition changes is another projection to every
// aggregate table it built: the table has to be rebuilt. A Go projection
// typically returns a version and a one-line summary of its rule
// ("v2: ORDERS#<status> orders=1 revenue=total"), and changes it whenever
// what it contributes for some item changes. A projection without a
// Definition is fingerprinted by its name and entity types alone.
type Definer interface {
	Definition() string
}

// ProjectionID identifies one projection's definition: its name and a
// fingerprint of what it computes.
type ProjectionID struct {
	Name string `json:"name"`
	// Fingerprint is a hash of the projection's name, entity types and
	// Definition (16 hexadecimal digits).
	Fingerprint string `json:"fingerprint"`
}

// String returns name@fingerprint.
func (id ProjectionID) String() string { return id.Name + "@" + id.Fingerprint }

// A Set is the projections one aggregate table is built from. Its identity,
// the IDs of its projections, is what the table's projection-set marker
// records (the projection-set marker, docs/engine.md): every engine that
// writes to a table must run exactly the set that built it.
//
// A Set is immutable and safe for concurrent use.
type Set struct {
	ps  []Projection
	ids []ProjectionID // sorted by name
	// ignored are the entity types that projections of the set this one
	// was selected from read, and these do not: an engine of the subset
	// skips them without a log line each.
	ignored []string
}

// NewSet returns the set of the given projections. It is an error to give a
// nil projection, none at all, two with the same name, or one with an empty
// name or without entity types.
func NewSet(ps ...Projection) (*Set, error) {
	if len(ps) == 0 {
		return nil, fmt.Errorf("projections: an empty projection set")
	}
	s := &Set{ps: slices.Clone(ps)}
	seen := map[string]bool{}
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("projections: projection %d of the set is nil", i)
		}
		name := p.Name()
		switch {
		case name == "":
			return nil, fmt.Errorf("projections: projection %d (%T) has an empty name", i, p)
		case seen[name]:
			return nil, fmt.Errorf("projections: two projections named %q", name)
		case len(p.EntityTypes()) == 0:
			return nil, fmt.Errorf("projections: projection %q reads no entity type", name)
		}
		seen[name] = true
		s.ids = append(s.ids, ProjectionID{Name: name, Fingerprint: Fingerprint(p)})
	}
	slices.SortFunc(s.ids, func(a, b ProjectionID) int { return strings.Compare(a.Name, b.Name) })
	return s, nil
}

// MustSet is like NewSet but panics on an error: for a main or a package
// variable whose projections are fixed in the program, where an error is a
// wiring mistake.
func MustSet(ps ...Projection) *Set {
	s, err := NewSet(ps...)
	if err != nil {
		panic(err)
	}
	return s
}

// Fingerprint returns the fingerprint of a projection's definition: a hash
// of its name, its entity types (in any order) and, if it is a Definer, its
// Definition.
func Fingerprint(p Projection) string {
	types := slices.Clone(p.EntityTypes())
	slices.Sort(types)
	h := sha256.New()
	// Lengths before contents: no two inputs hash the same bytes.
	write := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	write(p.Name())
	fmt.Fprintf(h, "%d;", len(types))
	for _, t := range types {
		write(t)
	}
	if d, ok := p.(Definer); ok {
		write(d.Definition())
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Projections returns the set's projections in the order they were given.
func (s *Set) Projections() []Projection { return slices.Clone(s.ps) }

// IDs returns the identity of the set: its projections' IDs, sorted by name.
func (s *Set) IDs() []ProjectionID { return slices.Clone(s.ids) }

// Names returns the projections' names, sorted.
func (s *Set) Names() []string {
	out := make([]string, len(s.ids))
	for i, id := range s.ids {
		out[i] = id.Name
	}
	return out
}

// EntityTypes returns the entity types some projection of the set reads,
// sorted, without duplicates.
func (s *Set) EntityTypes() []string {
	var out []string
	for _, p := range s.ps {
		out = append(out, p.EntityTypes()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// String lists the set's IDs, e.g. "order-totals@1f0c…, season-standings@9a3e…".
func (s *Set) String() string { return formatIDs(s.ids) }

// Ignored returns the entity types that the set this one was selected
// from reads and this one does not (see Select), sorted: an engine of this
// set skips their items without a line each.
func (s *Set) Ignored() []string { return slices.Clone(s.ignored) }

// Select returns the subset of the named projections, in s's order; no
// names return s itself. An unknown name is an error that lists the known
// ones. The subset ignores the entity types only the other projections
// read (its ignored types). A subset is a set of its own: it builds and writes its
// own aggregate tables.
func (s *Set) Select(names ...string) (*Set, error) {
	if len(names) == 0 {
		return s, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var keep []Projection
	for _, p := range s.ps {
		if want[p.Name()] {
			keep = append(keep, p)
			delete(want, p.Name())
		}
	}
	if len(want) > 0 {
		unknown := make([]string, 0, len(want))
		for n := range want {
			unknown = append(unknown, n)
		}
		slices.Sort(unknown)
		return nil, fmt.Errorf("unknown projection %s (known: %s)", strings.Join(unknown, ", "), strings.Join(s.Names(), ", "))
	}
	sub, err := NewSet(keep...)
	if err != nil {
		return nil, err
	}
	mine := sub.EntityTypes()
	for _, t := range s.EntityTypes() {
		if _, found := slices.BinarySearch(mine, t); !found {
			sub.ignored = append(sub.ignored, t)
		}
	}
	sub.ignored = append(sub.ignored, s.ignored...)
	slices.Sort(sub.ignored)
	sub.ignored = slices.Compact(sub.ignored)
	return sub, nil
}

func formatIDs(ids []ProjectionID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	return strings.Join(parts, ", ")
}

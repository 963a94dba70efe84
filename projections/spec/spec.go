// Package spec loads declarative projections: a versioned spec file, YAML
// or JSON, that declares projections instead of Go code. Each loaded
// projection implements projections.Projection and projections.Definer,
// so that engines, sets, markers, replays and recomputations treat it
// exactly like a Go projection.
//
// A spec declares, per projection, the entity types it reads, the item
// attributes it reads with their DynamoDB types, checks an item must pass,
// counters (a key template and exact values: literals per item or sums of
// N attributes) and rows (partition and sort templates, attributes copied
// or built). Conditions and checks are expressions of the expr language
// (github.com/expr-lang/expr); keys are substitution templates such as
// "SEASON#{season}#PLAYER#{PK[1]}" or "RATING#{rating:010}". Sums never go
// through the expression language: they are exact decimals.
//
// Loading validates everything and reports every problem at once, each
// with the file's line, the projection and the field (an *Error). An item
// that does not fit a projection is that record's error, a
// *projections.ItemError naming the projection, the item's keys and the
// attribute at fault; Contribute never panics, whatever the item.
//
// A projection's Definition is the canonical JSON of its normalised spec:
// layout, key order, comments and check messages change nothing, any
// change of what it computes changes it (and so the projection's
// fingerprint). docs/projections-spec.md is the format's reference.
package spec

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// specVersion is the spec format version this package reads.
const specVersion = 1

// A Spec is a loaded spec file: its projections, compiled and ready.
// It is immutable and safe for concurrent use, and so are its projections.
type Spec struct {
	typeAttribute string
	// schema holds the attributes the spec declares (its type attribute
	// always: EntityType when it names none).
	schema      pipeline.Schema
	projections []*Projection
	transforms  []*transform
}

// LoadFile reads and loads the spec file at path (see Parse).
func LoadFile(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the projection spec: %w", err)
	}
	// No more than one byte over the limit: Parse says the file is too
	// large.
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading the projection spec: %w", err)
	}
	return Parse(path, data)
}

// Load loads the spec file at path as a table's environment: the
// attributes the spec declares (its type attribute always, EntityType
// when it names none; the others only where it names them) and its
// projection set. Its LoadSpec is Load, so that a binary whose environment
// comes from a spec can load others: the stock mains' and the stock tool's
// environments set it.
func Load(path string) (*projections.Environment, error) {
	sp, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return sp.environment(path)
}

// environment returns the spec's environment (see Load); name names the
// spec in errors.
func (s *Spec) environment(name string) (*projections.Environment, error) {
	env := &projections.Environment{Schema: s.schema, Transforms: s.Transforms(), LoadSpec: Load}
	if len(s.projections) > 0 {
		set, err := s.Set()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		env.Projections = set
	}
	return env, nil
}

// Transforms returns the transforms the spec declares, in the order the
// file lists them (docs/projections-spec.md, "Transforms").
func (s *Spec) Transforms() []*projections.Transform {
	out := make([]*projections.Transform, len(s.transforms))
	for i, t := range s.transforms {
		out[i] = t.transform()
	}
	return out
}

// Parse loads a spec from data. name is the file's name: it prefixes every
// problem, and a name ending in .json is read as JSON, any other as YAML.
// An invalid spec is an *Error listing every problem found.
func Parse(name string, data []byte) (*Spec, error) {
	if len(data) > maxFileBytes {
		l := &loader{file: name}
		l.problem(0, "", "the file has more than %d bytes (256 KiB): a spec is at most that", maxFileBytes)
		return nil, l.errors()
	}
	var (
		root *node
		dups []*syntaxError
		err  error
	)
	if strings.EqualFold(filepath.Ext(name), ".json") {
		root, dups, err = parseJSON(data)
	} else {
		root, dups, err = parseYAML(data)
	}
	l := &loader{file: name}
	for _, d := range dups {
		l.problem(d.line, d.path, "%s", d.msg)
	}
	if err != nil {
		se, _ := err.(*syntaxError)
		if se == nil {
			se = &syntaxError{msg: err.Error()}
		}
		l.problem(se.line, "", "%s", se.msg)
		return nil, l.errors()
	}
	s := l.spec(root)
	if err := l.errors(); err != nil {
		return nil, err
	}
	return s, nil
}

// Projections returns the spec's projections in the order the file lists
// them.
func (s *Spec) Projections() []projections.Projection {
	out := make([]projections.Projection, len(s.projections))
	for i, p := range s.projections {
		out[i] = p
	}
	return out
}

// Set returns the projection set of the spec's projections.
func (s *Spec) Set() (*projections.Set, error) { return projections.NewSet(s.Projections()...) }

// TypeAttribute returns the item attribute holding the entity type, as the
// spec declares it (default EntityType). The decoders that feed the
// spec's projections must use the same one (pipeline.Options.TypeAttribute).
func (s *Spec) TypeAttribute() string { return s.typeAttribute }

// Schema returns the attributes the spec declares: its type attribute
// always (EntityType when it names none), the version, key and TTL
// attributes where it names them.
func (s *Spec) Schema() pipeline.Schema { return s.schema }

// problem is one thing wrong with a spec.
type problem struct {
	// File is the spec's name as given to Parse.
	File string
	// Line is the line of the field at fault, from 1; 0 if unknown.
	Line int
	// Projection is the name of the projection at fault (or
	// "projections[N]" when it has no valid name), or "transform NAME"
	// ("transforms[N]"); "" outside both.
	Projection string
	// Field is the path of the field at fault within the projection (or
	// the document), e.g. "counters[0].key"; "" for the document itself.
	Field string
	// Msg says what is wrong.
	Msg string
}

// String returns e.g. "projections.yaml:14: projection order-totals:
// counters[0].key: placeholder {sttus[x]}: want {attribute},
// {attribute[N]}, {attribute:0W} or {attribute:sortable}".
func (p problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	switch {
	case strings.HasPrefix(p.Projection, "projections["), strings.HasPrefix(p.Projection, "transforms["), strings.HasPrefix(p.Projection, "transform "):
		b.WriteString(p.Projection)
		b.WriteString(": ")
	case p.Projection != "":
		b.WriteString("projection ")
		b.WriteString(p.Projection)
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is an invalid spec: every problem found, in the order of the file.
type Error struct {
	Problems []problem
}

// Error returns the problems, one a line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return "invalid projection spec:\n" + strings.Join(lines, "\n")
}

// errors returns the loader's problems as an *Error, sorted by line; nil
// if there are none.
func (l *loader) errors() error {
	if len(l.probs) == 0 {
		return nil
	}
	probs := slices.Clone(l.probs)
	slices.SortStableFunc(probs, func(a, b problem) int { return a.Line - b.Line })
	return &Error{Problems: probs}
}

package projections

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver/target"
)

// Environment is everything Tributary's entry points know of one table: the
// attributes its items are read by (Schema), the projection set that runs
// on its changes and the transforms its items may be put through. A Go main
// sets it once and hands it to its function (functions/projector and the
// others) or its command-line tool (scripts/cli); a spec file declares the
// same (projections/spec). Every command and every function reads the
// table's attributes from here, so a binary that knows its table needs no
// attribute flag or variable.
//
// An Environment is not changed after it is handed over.
type Environment struct {
	// Schema names the attributes of the table's items; a field left empty
	// takes its default (pipeline.Schema.WithDefaults), unless a
	// function's variable or a command's flag names it.
	Schema pipeline.Schema
	// Projections is the projection set the projectors, replay, redrive,
	// verify and backfill run. nil: an environment without projections
	// (an archiver's, a repartitioner's).
	Projections *Set
	// Transforms are the item rewrites a repartition may name, by Name.
	Transforms []*Transform
	// LoadSpec, when set, loads a spec file into an environment of its own
	// (spec.Load), for the entry points that take one in place of this
	// environment's projections (PROJECTIONS_FILE, --projections). nil: a
	// binary that runs only its own projections and links no spec loader.
	LoadSpec func(path string) (*Environment, error)
}

// Validate reports every problem of the environment at once: a schema
// that pipeline.Schema.Validate refuses, and a transform that is nil,
// unnamed, named twice, has no rewrite or a nil one, or keys that are not
// a table's.
func (e *Environment) Validate() error {
	var errs []error
	if err := e.Schema.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("schema: %w", err))
	}
	seen := map[string]bool{}
	for i, t := range e.Transforms {
		switch {
		case t == nil || t.Name == "":
			errs = append(errs, fmt.Errorf("transform %d: nil or unnamed", i))
			continue
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("transform %s: named twice", t.Name))
		case len(t.ByType) == 0 && !t.CopyOthers:
			errs = append(errs, fmt.Errorf("transform %s: rewrites no entity type and copies no other", t.Name))
		}
		seen[t.Name] = true
		for _, typ := range t.Types() {
			if t.ByType[typ] == nil {
				errs = append(errs, fmt.Errorf("transform %s: nil rewrite of %s", t.Name, typ))
			}
		}
		if len(t.Keys) > 0 {
			if _, err := target.NewKey(t.Keys...); err != nil {
				errs = append(errs, fmt.Errorf("transform %s: keys: %w", t.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Transform returns the transform of that name, or an error listing the
// known ones.
func (e *Environment) Transform(name string) (*Transform, error) {
	for _, t := range e.Transforms {
		if t != nil && t.Name == name {
			return t, nil
		}
	}
	known := e.TransformNames()
	if len(known) == 0 {
		return nil, fmt.Errorf("no transform %q: this binary has none", name)
	}
	return nil, fmt.Errorf("no transform %q (known: %s)", name, strings.Join(known, ", "))
}

// TransformNames returns the names of the transforms, sorted.
func (e *Environment) TransformNames() []string {
	var out []string
	for _, t := range e.Transforms {
		if t != nil {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// WithSpec returns the environment a spec file makes of e: the spec's
// projections in place of e's (a spec of transforms alone leaves e's), the
// attributes it declares in place of e's (those it does not declare stay
// e's), and its transforms beside e's, one of the name of one of e's in
// its place. It is an error when e has no LoadSpec.
func (e *Environment) WithSpec(path string) (*Environment, error) {
	if e.LoadSpec == nil {
		return nil, fmt.Errorf("%s: this binary runs its own projections and loads no spec (a main that does sets Environment.LoadSpec to spec.Load)", path)
	}
	sp, err := e.LoadSpec(path)
	if err != nil {
		return nil, err
	}
	out := *e
	out.Schema = e.Schema.Override(sp.Schema)
	if sp.Projections != nil && len(sp.Projections.Projections()) > 0 {
		out.Projections = sp.Projections
	}
	out.Transforms = nil
	for _, t := range e.Transforms {
		if t == nil || !slices.ContainsFunc(sp.Transforms, func(s *Transform) bool { return s != nil && s.Name == t.Name }) {
			out.Transforms = append(out.Transforms, t)
		}
	}
	out.Transforms = append(out.Transforms, sp.Transforms...)
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &out, nil
}

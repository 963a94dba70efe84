package remodel

import "github.com/tributary/tributary/projections"

// Transform is (*Remodel).transform, for the external tests.
func (r *Remodel) Transform() *projections.Transform { return r.transform() }

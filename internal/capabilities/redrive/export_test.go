package redrive

import "github.com/tributary/tributary/pipeline"

// Decode is (*Invocation).decode, for the external tests.
func (inv *Invocation) Decode(opts pipeline.Options) ([]pipeline.Change, error) {
	return inv.decode(opts)
}

// Done is ObjectResult.done, for the external tests.
func (r ObjectResult) Done() bool { return r.done() }

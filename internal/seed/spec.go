package seed

import _ "embed"

// SpecYAML is the stock projection spec, seed.yaml: the seed projections
// written as a spec (see package projections/spec and
// docs/projections-spec.md). Loaded, it computes exactly what Set does.
//
//go:embed seed.yaml
var SpecYAML []byte

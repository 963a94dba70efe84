package engine_test

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// TestExactlyOnceSpec runs TestExactlyOnce's workload and delivery (both
// sources, the same faults, retries and replays) through an engine of the
// seed projections written as a spec (internal/seed/seed.yaml) and
// through one of the Go seed projections: after every stage the spec
// engine's aggregates and rows equal the Go recomputation, and in the end
// they equal the Go engine's store.
func TestExactlyOnceSpec(t *testing.T) {
	h, want := exactlyOnceWorkload(t)
	s, err := spec.Parse("seed.yaml", seed.SpecYAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			goStore := deliverExactlyOnce(t, src, h, want, seed.All()...)
			specStore := deliverExactlyOnce(t, src, h, want, s.Projections()...)
			if d := projections.Diff(mustView(t, specStore), mustView(t, goStore)); len(d) > 0 {
				t.Fatalf("the spec engine's store differs from the Go engine's:\n%s", strings.Join(d, "\n"))
			}
		})
	}
}

package verify_test

import (
	"context"
	"testing"

	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// TestRecomputeFixture: the view recomputed from the fixture export, item
// by item, with and without its incremental export, is the view of the
// final items recomputed all at once.
func TestRecomputeFixture(t *testing.T) {
	ctx := context.Background()
	src, _, fx := exportgen.CopyFixture(t)
	full := exportgen.OpenFixture(t, src)
	ov := exportgen.FixtureOverlay(t, src, full)
	for _, tc := range []struct {
		name    string
		overlay *export.Overlay
		items   []pipeline.Item
	}{
		{"full export", nil, fx.FullItems},
		{"with the incremental export", ov, fx.FinalItems},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := verify.Recompute(ctx, full, tc.overlay, pipeline.Options{}, false, seed.All()...)
			if err != nil {
				t.Fatal(err)
			}
			want, err := projections.Recompute(tc.items, "", seed.All()...)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(tc.items)) {
				t.Errorf("read %d items, want %d", n, len(tc.items))
			}
			if d := projections.Diff(got, want); len(d) > 0 || len(want.Aggregates) == 0 || len(want.Rows) == 0 {
				t.Errorf("%d aggregates and %d rows to compare; differences: %v", len(want.Aggregates), len(want.Rows), d)
			}
		})
	}
}

// Package verify recomputes every projection's aggregates from a DynamoDB
// export (with incremental exports on top, or none): what the aggregate
// table must hold for the table as of the export, to compare with what it
// holds (projections.ReadView, projections.Diff). Items are streamed and
// folded into the view one at a time, so memory holds the view, not the
// export; every data file is read through the export reader, which checks
// it against its manifest.
package verify

import (
	"context"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/export"
	"github.com/tributary/tributary/projections"
)

// Recompute builds every projection's view from an export (with an overlay
// of incremental exports, or nil) and returns it with the number of items
// read.
func Recompute(ctx context.Context, full *export.Export, overlay *export.Overlay, opts pipeline.Options, skipMD5 bool, ps ...projections.Projection) (*projections.View, int64, error) {
	v := projections.NewView()
	add := v.Adder(opts.TypeAttribute, ps...)
	var n int64
	err := export.Items(ctx, full, overlay, opts, skipMD5, func(it pipeline.Item) error {
		n++
		return add(it)
	})
	if err != nil {
		return nil, n, err
	}
	v.Prune()
	return v, n, nil
}

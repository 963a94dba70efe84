package export

import (
	"context"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// Recompute builds every projection's view from an export (with an overlay
// of incremental exports, or nil): what the aggregate table must hold for
// the table as of the export. Items are streamed and recomputed a chunk at
// a time, so memory holds the view, not the export.
func Recompute(ctx context.Context, full *Export, overlay *Overlay, opts pipeline.Options, skipMD5 bool, ps ...projections.Projection) (*projections.View, int64, error) {
	const chunk = 10_000
	total := projections.NewView()
	var buf []pipeline.Item
	var n int64
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		v, err := projections.Recompute(buf, opts.TypeAttribute, ps...)
		if err != nil {
			return err
		}
		merge(total, v)
		buf = buf[:0]
		return nil
	}
	err := Items(ctx, full, overlay, opts, skipMD5, func(it pipeline.Item) error {
		n++
		buf = append(buf, it)
		if len(buf) == chunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, n, err
	}
	prune(total)
	return total, n, nil
}

// merge adds v into total: aggregate values add up; rows, each owned by one
// item, are set.
func merge(total, v *projections.View) {
	for k, vs := range v.Aggregates {
		cur := total.Aggregates[k]
		if cur == nil {
			total.Aggregates[k] = vs
			continue
		}
		for name, x := range vs {
			cur[name] = cur[name].Add(x)
		}
	}
	for r, attrs := range v.Rows {
		total.Rows[r] = attrs
	}
}

// prune drops values that sum to zero and aggregates left empty, as
// projections.Recompute and ReadView do.
func prune(v *projections.View) {
	for k, vs := range v.Aggregates {
		for name, x := range vs {
			if x.IsZero() {
				delete(vs, name)
			}
		}
		if len(vs) == 0 {
			delete(v.Aggregates, k)
		}
	}
}

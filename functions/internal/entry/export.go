package entry

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/pipeline"
)

// OpenExport opens the full export at loc (s3://… through client, or a
// directory) and the overlay of its incremental exports, checked as one
// table's history (export.LoadOverlay): what a step of the Backfill or
// Verify state machine reads.
func OpenExport(ctx context.Context, client objstore.S3API, loc string, incrementals []string, schema pipeline.Schema, skipMD5 bool) (*export.Export, *export.Overlay, error) {
	source := func(l objstore.Location) (export.Source, error) { return l.Open(client, objstore.S3Options{}), nil }
	l, err := objstore.Parse(loc)
	if err != nil {
		return nil, nil, fmt.Errorf("export %q: %w", loc, err)
	}
	full, err := export.OpenExportAt(ctx, l, source, export.OpenOptions{})
	if err != nil {
		return nil, nil, err
	}
	var incs []*export.Export
	for _, s := range incrementals {
		il, err := objstore.Parse(s)
		if err != nil {
			return nil, nil, fmt.Errorf("incremental export %q: %w", s, err)
		}
		inc, err := export.OpenExportAt(ctx, il, source, export.OpenOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("incremental export: %w", err)
		}
		incs = append(incs, inc)
	}
	ov, err := export.LoadOverlay(ctx, full, incs, pipeline.Options{Schema: schema}, skipMD5)
	if err != nil {
		return nil, nil, err
	}
	return full, ov, nil
}

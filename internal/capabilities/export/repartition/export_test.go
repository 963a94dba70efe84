package repartition

import "context"

// The steps of a run, one by one, for the external tests.

// Begin is (*Repartitioner).begin.
func (r *Repartitioner) Begin(ctx context.Context, force bool) (*RunSummary, error) {
	return r.begin(ctx, force)
}

// DataFiles is (*Repartitioner).dataFiles.
func (r *Repartitioner) DataFiles() []string { return r.dataFiles() }

// ProcessFile is (*Repartitioner).processFile.
func (r *Repartitioner) ProcessFile(ctx context.Context, dataKey string) (rec *SourceRecord, resumed bool, err error) {
	return r.processFile(ctx, dataKey)
}

// Finish is (*Repartitioner).finish.
func (r *Repartitioner) Finish(ctx context.Context) (*RunSummary, error) { return r.finish(ctx) }

// Package verify recomputes every projection's aggregates from a DynamoDB
// export (with incremental exports on top, or none): what the aggregate
// table must hold for the table as of the export, to compare with what it
// holds (projections.ReadView, projections.Diff). AsOf does so while the
// table goes on changing: the items changed since the export are told
// apart by their state in the table. Items are streamed and folded into
// the view one at a time, so memory holds the view, not the export; every
// data file is read through the export reader, which checks it against
// its manifest.
package verify

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
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

// Watermark is the point in time a check against an export (with an
// overlay of incremental exports, or nil) is as of: the full export's
// time, or the end of the last incremental export. Zero when the export
// does not say (no manifest).
func Watermark(full *export.Export, overlay *export.Overlay) time.Time {
	t := full.Time()
	if overlay != nil {
		for _, e := range overlay.Exports {
			if et := e.Time(); et.After(t) {
				t = et
			}
		}
	}
	return t
}

// KeyAttributes are the key attributes a check reads the export's items
// by: the incremental exports' (their lines carry the keys), else the
// schema's.
func KeyAttributes(opts pipeline.Options, overlay *export.Overlay) []string {
	if overlay != nil && len(overlay.KeyAttributes) > 0 {
		return overlay.KeyAttributes
	}
	return opts.WithDefaults().KeyAttributes
}

// Writes is what the incremental exports of an overlay (nil: none) know
// of the items' writes, for engine.JudgeTick: every write from the
// first one's start to the last one's end, each item's last at the
// microsecond. Nil without incremental exports. An item whose last write
// in them has no time, or one before their start, is not known.
func Writes(overlay *export.Overlay) *engine.ExportWrites {
	if overlay == nil || len(overlay.Exports) == 0 {
		return nil
	}
	from, err := time.Parse(time.RFC3339Nano, overlay.Exports[0].Summary.ExportFromTime)
	if err != nil || from.IsZero() {
		return nil
	}
	return &engine.ExportWrites{From: from, Last: func(key string) (time.Time, bool) {
		e, ok := overlay.Lookup(key)
		switch {
		case !ok:
			return time.Time{}, true
		case e.Time.IsZero() || e.Time.Before(from):
			return time.Time{}, false
		}
		return e.Time, true
	}}
}

// Effective is the point in time a check takes for a watermark: the
// watermark, or for an unknown (zero) one a time after every change, so
// that every item is checked against the export.
func Effective(watermark time.Time) time.Time {
	if watermark.IsZero() {
		return time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	}
	return watermark
}

// Result is what AsOf found.
type Result struct {
	// Differences lists how the table differs from the expectation, one a
	// line (the first Options.MaxNamed; More counts the rest). The table
	// agrees only when Agree says so: items not judged, partials not
	// folded or data files read from another object leave it unknown.
	Differences []string
	// Items is how many export items were read; Changed how many items'
	// state in the table is newer than the export's (told apart); Unfolded
	// the partials of a backfill not folded yet.
	Items, Changed int64
	Unfolded       []string
	// Refused lists the export items a projection refuses (among
	// Differences too): the projectors fail their records as permanent and
	// a backfill lists them as failed, so they add to no projection.
	Refused []string
	// Unjudged lists the items whose state in the table, from the
	// export's own second, neither time nor version orders against the
	// export's (engine.JudgeTick), one a line naming the item and
	// why: the table cannot be said to agree while there are any.
	Unjudged []string
	// AsOf is the export's point in time (the end of the last incremental
	// export, with an overlay).
	AsOf time.Time
	// Aggregates and Rows count the expected view's.
	Aggregates, Rows int
	// More counts the differences not named in Differences (past
	// Options.MaxNamed).
	More int64
	// Spilled is how many bytes the check wrote to local disk.
	Spilled int64
	// Mixed names the data files a backfill of the table read in part
	// from an object that is not the exported one (each as the projections
	// package renders its record): items of that object are in the table
	// under the export's tokens, and no check can tell them apart.
	Mixed []string
}

// agree reports whether the table holds exactly what was expected: no
// difference (named or counted), no item left unjudged, no partial left
// unfolded, no data file read from another object.
func (r *Result) agree() bool {
	return len(r.Differences) == 0 && r.More == 0 && len(r.Unjudged) == 0 && len(r.Unfolded) == 0 && len(r.Mixed) == 0
}

// AsOf checks a table built by ps against an export (with an overlay of
// incremental exports, or nil) while the table may go on changing
// (engine.AsOfCheck): items whose state in the table is newer than
// the export's are told apart by their ledger entries and checked against
// those, the others against their recomputation from the export. An
// export whose point in time is not known (no manifest) is taken as newer
// than every change: every item is checked against the export. Every
// difference is named; it spills to the system's temporary directory.
func AsOf(ctx context.Context, full *export.Export, overlay *export.Overlay, table driver.Reader, opts pipeline.Options, skipMD5 bool, ps ...projections.Projection) (*Result, error) {
	return Check(ctx, full, overlay, table, Options{Decode: opts, SkipMD5: skipMD5}, ps...)
}

// Options configures Check. The zero value is AsOf's.
type Options struct {
	// Decode names the export items' attributes (the table's schema).
	Decode pipeline.Options
	// SkipMD5 skips checking the export's data files against the
	// manifest's checksums.
	SkipMD5 bool
	// Dir is where the check spills its partitions (default: the system's
	// temporary directory); it needs about Result.Spilled bytes there.
	Dir string
	// MaxNamed bounds the differences named (the first, sorted); the rest
	// are counted in Result.More. Zero: all are named.
	MaxNamed int
	// Keep, when set, picks the differences that count: the others are
	// neither named nor counted (a check of some projections of a table
	// whose ledger holds others').
	Keep func(line string) bool
	// NewerInMemory and PartitionBytes tune what the check holds in
	// memory (engine.AsOfCheck); zero: the defaults.
	NewerInMemory  int
	PartitionBytes int64
}

// Check is AsOf with options: memory does not grow with the export, the
// table or the changes since (engine.AsOfCheck spills to Dir).
func Check(ctx context.Context, full *export.Export, overlay *export.Overlay, table driver.Reader, o Options, ps ...projections.Projection) (_ *Result, err error) {
	res := &Result{AsOf: Watermark(full, overlay)}
	asOf := Effective(res.AsOf)
	opts := o.Decode
	check := engine.NewAsOfCheck(asOf, opts.TypeAttribute, ps...)
	check.VersionAttribute = opts.WithDefaults().VersionAttribute
	check.Dir, check.MaxNamed, check.Keep = o.Dir, o.MaxNamed, o.Keep
	check.NewerInMemory, check.PartitionBytes = o.NewerInMemory, o.PartitionBytes
	keys := KeyAttributes(opts, overlay)
	check.KeyAttributes, check.Writes = keys, Writes(overlay)
	defer func() { err = errors.Join(err, check.Close()) }()
	if err := check.AddLedgers(ctx, table); err != nil {
		return nil, err
	}
	batch := make([]pipeline.Item, 0, 256)
	err = exportItems(ctx, full, overlay, opts, o.SkipMD5, func(it pipeline.Item) error {
		batch = append(batch, it)
		if len(batch) == cap(batch) {
			err := check.AddExportItems(batch, keys)
			batch = batch[:0]
			return err
		}
		return nil
	})
	if err == nil {
		err = check.AddExportItems(batch, keys)
	}
	if err != nil {
		return nil, err
	}
	diff, err := check.Diff(ctx, table)
	if err != nil {
		return nil, err
	}
	res.Differences, res.Items, res.Changed, res.Unfolded, res.Refused = diff, check.Items, check.Changed, check.Unfolded, check.Refused
	res.Unjudged, res.More, res.Spilled, res.Mixed = check.Unjudged, check.More, check.Spilled, check.Mixed
	res.Aggregates, res.Rows = check.Expected()
	// In key order, whatever order the table's scan gave them (a parted
	// check's too).
	sort.Strings(res.Unfolded)
	sort.Strings(res.Mixed)
	sort.Strings(res.Refused)
	return res, nil
}

package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/verify"
)

// runVerify is `tributary verify`: recompute every projection from an
// export and diff it against the live aggregates.
func runVerify(ctx context.Context, e *Env, args []string) (err error) {
	fs := newFlags(e, "verify", "")
	var xf exportFlags
	xf.register(fs)
	var sf storeFlags
	sf.register(fs)
	only := fs.String("projection", "", "check only this projection")
	maxPrint := fs.Int("max-print", 100, "print at most this many mismatches (0: all)")
	specFile := specFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	e, err = e.withSpec(*specFile)
	if err != nil {
		return err
	}
	if e.set() == nil {
		return errNoProjections
	}
	if err := xf.resolve(e); err != nil {
		return err
	}
	decode := pipeline.Options{Schema: xf.schema}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	ps := e.set().Projections()
	if *only != "" {
		sub, err := e.set().Select(*only)
		if err != nil {
			return fmt.Errorf("%w: --projection: %v", errUsage, err)
		}
		ps = sub.Projections()
	}
	if xf.export == "" {
		return fmt.Errorf("%w: --export is required", errUsage)
	}
	st, closeStore, err := sf.open(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	// The store must be this set's: a recomputation of other definitions
	// would report every difference between the two as drift.
	m, err := projections.ReadMarker(ctx, st)
	if err != nil {
		return err
	}
	if m == nil || !sameIDs(m.Set, e.set().IDs()) {
		return fmt.Errorf("%s: %w", sf.String(), &projections.SetMismatchError{Table: m, Engine: e.set().IDs()})
	}
	src, overlay, err := xf.open(ctx, e)
	if err != nil {
		return err
	}
	start := time.Now()
	want, items, err := verify.Recompute(ctx, src, overlay, decode, xf.skipMD5, ps...)
	if err != nil {
		return err
	}
	got, err := projections.ReadView(ctx, st)
	if err != nil {
		return err
	}
	if *only != "" {
		for k := range got.Aggregates {
			if k.Projection != *only {
				delete(got.Aggregates, k)
			}
		}
		for r := range got.Rows {
			if r.Projection != *only {
				delete(got.Rows, r)
			}
		}
	}
	diff := projections.Diff(got, want)
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	as := "as of the export"
	if t := src.Time(); !t.IsZero() {
		as = "as of " + t.UTC().Format(time.RFC3339)
	}
	if overlay.Len() > 0 {
		as = "as of the last incremental export"
		if t := overlay.Exports[len(overlay.Exports)-1].Time(); !t.IsZero() {
			as = "as of " + t.UTC().Format(time.RFC3339)
		}
	}
	fmt.Fprintf(w, "recomputed %d aggregates and %d rows from %d items of %s (%s) in %.1fs\n",
		len(want.Aggregates), len(want.Rows), items, src, as, time.Since(start).Seconds())
	for i, d := range diff {
		if *maxPrint > 0 && i == *maxPrint {
			fmt.Fprintf(w, "  ... and %d more (--max-print 0 prints all)\n", len(diff)-i)
			break
		}
		fmt.Fprintln(w, "  "+quote.Printable(d))
	}
	if len(diff) > 0 {
		fmt.Fprintf(w, "MISMATCH: %d differences between the store (%d aggregates, %d rows) and the recomputation\n", len(diff), len(got.Aggregates), len(got.Rows))
		fmt.Fprintln(w, "(changes made after the export show here too: verify against an export taken while the projector is caught up, or add --incremental exports)")
		return errFailed
	}
	fmt.Fprintf(w, "AGREE: every aggregate and row in the store equals the recomputation from the export\n")
	return nil
}

func sameIDs(a, b []projections.ProjectionID) bool { return slices.Equal(a, b) }

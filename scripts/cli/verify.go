package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// runVerify is `tributary verify`: recompute every projection from an
// export and diff it against the live aggregates.
func runVerify(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("verify", "")
	var xf exportFlags
	xf.register(fs)
	var sf storeFlags
	sf.register(fs)
	var only subsetFlag
	fs.Var(&only.names, "projection", "check only this projection (repeat for several): of a store of the whole set, or of one whose set is this subset (a projector's PROJECTIONS or SHADOW_PROJECTIONS)")
	maxPrint := fs.Int("max-print", 100, fmt.Sprintf("print at most this many mismatches, at most %d: the gate holds the ones it names (0: all, every difference held in memory until it is printed)", maxPrintLimit))
	parts := fs.Int("parts", 0, fmt.Sprintf("cut the check into this many parts (a power of two, at most %d) and run it as the Verify state machine does, one step after the other here, the steps handing each other their parts through a temporary directory: a rehearsal of the state machine with the same verdict (0: one process's check)", engine.MaxParts))
	specFile := specFlag(fs)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if n := *parts; n < 0 || n > engine.MaxParts || n&(n-1) != 0 {
		return fmt.Errorf("%w: --parts %d: want a power of two from 1 to %d, or 0", errUsage, n, engine.MaxParts)
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
	if err := checkMaxPrint(*maxPrint, "0: all, held in memory"); err != nil {
		return err
	}
	sub, err := only.set(e)
	if err != nil {
		return err
	}
	ps := sub.Projections()
	if xf.export == "" {
		return fmt.Errorf("%w: --export is required", errUsage)
	}
	st, closeStore, err := sf.open(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	// The store must be this set's, or the subset's: a recomputation of
	// other definitions would report every difference between the two as
	// drift.
	m, err := engine.ReadMarker(ctx, st)
	if err != nil {
		return err
	}
	if m == nil || !sameIDs(m.Set, e.set().IDs()) && !sameIDs(m.Set, sub.IDs()) {
		return fmt.Errorf("%s: %w", sf.String(), &engine.SetMismatchError{Table: m, Engine: sub.IDs()})
	}
	reads := xf.countReads(e, "verify")
	src, overlay, err := xf.open(ctx, e)
	if err != nil {
		return err
	}
	reads.start(src, overlay)
	defer reads.prog.done()
	start := time.Now()
	o := verify.Options{Decode: decode, SkipMD5: xf.skipMD5, MaxNamed: *maxPrint}
	if len(only.names) > 0 {
		// The ledger may hold other projections' state: keep these ones'
		// lines.
		o.Keep = func(d string) bool {
			return slices.ContainsFunc(only.names, func(n string) bool { return strings.HasPrefix(d, n+" ") })
		}
	}
	var res *verify.Result
	if *parts > 0 {
		res, err = rehearseParted(ctx, src, overlay, st, o, *parts, ps)
	} else {
		res, err = verify.Check(ctx, src, overlay, st, o, ps...)
	}
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	as := "as of the export"
	if !res.AsOf.IsZero() {
		as = "as of " + res.AsOf.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "recomputed %d aggregates and %d rows from %d items of %s (%s) in %.1fs\n",
		res.Aggregates, res.Rows, res.Items, src, as, time.Since(start).Seconds())
	verdict := verify.Report(w, res, verify.ReportOptions{MaxPrint: *maxPrint, Keep: o.Keep, Rerun: "`" + e.Name + " backfill` again"})
	if verdict != verify.Agree {
		return errFailed
	}
	return nil
}

// rehearseParted runs a check cut into parts as the Verify state machine
// runs it: plan, a scan step per segment of the table (four of a DynamoDB
// table, read in parallel scan segments; one of an embedded store), a
// file step per data file, a join and a compare step per part, then the
// finish, one after the other, handing over through a temporary
// directory.
func rehearseParted(ctx context.Context, full *export.Export, overlay *export.Overlay, st store, o verify.Options, parts int, ps []projections.Projection) (_ *verify.Result, err error) {
	dir, err := os.MkdirTemp(o.Dir, "tributary-verify-")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	c := &verify.Parted{Full: full, Overlay: overlay, Table: st, Work: objstore.NewDir(dir).WithoutSync(), Prefix: "verify", Options: o, Projections: ps, Parts: parts, Segments: 4}
	if d, ok := st.(*dynamostore.Store); ok {
		c.Segment = func(i, n int) (driver.Reader, error) { return d.Segment(i, n) }
	}
	plan, err := c.Plan(ctx, "local")
	if err != nil {
		return nil, err
	}
	for i := range plan.Segments {
		if _, err := c.Scan(ctx, plan, i); err != nil {
			return nil, err
		}
	}
	for _, f := range plan.Files {
		if _, err := c.File(ctx, plan, f); err != nil {
			return nil, err
		}
	}
	for i := range plan.Parts {
		if _, err := c.Join(ctx, plan, i); err != nil {
			return nil, err
		}
	}
	for i := range plan.Parts {
		if _, err := c.Compare(ctx, plan, i); err != nil {
			return nil, err
		}
	}
	return c.Finish(ctx, plan)
}

// maxPrintLimit bounds --max-print: a gate holds the differences it names
// (remodel verify also reads again up to 64 target items per difference it
// may name), so its memory grows with it.
const maxPrintLimit = 10_000

// checkMaxPrint refuses a --max-print out of its bounds; zero says what 0
// means.
func checkMaxPrint(n int, zero string) error {
	if n < 0 || n > maxPrintLimit {
		return fmt.Errorf("%w: --max-print %d: must be between 0 (%s) and %d (a gate holds the differences it names: memory grows with it)", errUsage, n, zero, maxPrintLimit)
	}
	return nil
}

// printNamed prints lines, indented, at most maxPrint of them (0: all).
func printNamed(w io.Writer, lines []string, maxPrint int) { quote.Named(w, lines, 0, maxPrint) }

func sameIDs(a, b []projections.ProjectionID) bool { return slices.Equal(a, b) }

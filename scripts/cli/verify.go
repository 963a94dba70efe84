package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/verify"
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
	specFile := specFlag(fs)
	if err := ParseFlags(fs, args); err != nil {
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
	m, err := projections.ReadMarker(ctx, st)
	if err != nil {
		return err
	}
	if m == nil || !sameIDs(m.Set, e.set().IDs()) && !sameIDs(m.Set, sub.IDs()) {
		return fmt.Errorf("%s: %w", sf.String(), &projections.SetMismatchError{Table: m, Engine: sub.IDs()})
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
	res, err := verify.Check(ctx, src, overlay, st, o, ps...)
	if err != nil {
		return err
	}
	diff, refused := res.Differences, res.Refused
	if o.Keep != nil {
		refused = slices.DeleteFunc(slices.Clone(refused), func(d string) bool { return !o.Keep(d) })
	}
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	as := "as of the export"
	if !res.AsOf.IsZero() {
		as = "as of " + res.AsOf.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "recomputed %d aggregates and %d rows from %d items of %s (%s) in %.1fs\n",
		res.Aggregates, res.Rows, res.Items, src, as, time.Since(start).Seconds())
	if res.Changed > 0 {
		fmt.Fprintf(w, "%d items changed since the export: told apart by their state in the store, and checked against it\n", res.Changed)
	}
	printNamedOf(w, diff, res.More, *maxPrint)
	if n := len(res.Mixed); n > 0 {
		fmt.Fprintf(w, "NOT READY: a backfill read %d data files in part from an object that is not the exported one: items of it are in the store under the export's tokens, which no check or rerun can tell from the export's own; backfill into a new store (the objects must not change while they are read) and verify that\n", n)
		printNamed(w, res.Mixed, *maxPrint)
		return errFailed
	}
	if n := len(res.Unfolded); n > 0 {
		fmt.Fprintf(w, "NOT READY: a backfill has %d data files whose deferred sums are not folded yet (e.g. %s): run it to the end (`%s backfill` again) and verify again\n", n, quote.Printable(res.Unfolded[0]), e.Name)
		return errFailed
	}
	if n := len(res.Unjudged); n > 0 {
		fmt.Fprintf(w, "%d items could not be judged: their state in the store is from the export's own second, and the version cannot order it against the export's\n", n)
		printNamed(w, res.Unjudged, *maxPrint)
	}
	if n := int64(len(diff)) + res.More; n > 0 {
		fmt.Fprintf(w, "MISMATCH: %d differences between the store and the recomputation from the export (the items changed since it taken as their state in the store says)\n", n)
		if len(refused) > 0 {
			fmt.Fprintf(w, "%d of them are export items the projections refuse (a backfill lists them as failed): correct the items or the projections, then backfill and verify again\n", len(refused))
		}
		return errFailed
	}
	if n := len(res.Unjudged); n > 0 {
		fmt.Fprintf(w, "NOT READY: %d items could not be judged against the export (in its own second; see above), the rest agrees: %s\n", n, unjudgedAdvice)
		return errFailed
	}
	if !res.Agree() {
		// Every reason not to is named above; never an agreement without it.
		fmt.Fprintln(w, "NOT READY: the check did not agree")
		return errFailed
	}
	fmt.Fprintf(w, "AGREE: every aggregate and row in the store equals the recomputation from the export, with the %d items changed since it as their state in the store says\n", res.Changed)
	return nil
}

// unjudgedAdvice says what to do about items the gates could not judge in
// the export's own second.
const unjudgedAdvice = "verify against a later incremental export, from the full export's time on and ending after that second: it knows each item's last write, which orders them by time (in its own last second, only the items it shows written there are left to the version)"

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
func printNamed(w io.Writer, lines []string, maxPrint int) { printNamedOf(w, lines, 0, maxPrint) }

// printNamedOf is printNamed of lines that more others, not named, follow.
func printNamedOf(w io.Writer, lines []string, more int64, maxPrint int) {
	for i, d := range lines {
		if maxPrint > 0 && i == maxPrint {
			more += int64(len(lines) - i)
			break
		}
		fmt.Fprintln(w, "  "+quote.Printable(d))
	}
	if more > 0 {
		fmt.Fprintf(w, "  ... and %d more (--max-print 0 prints all)\n", more)
	}
}

func sameIDs(a, b []projections.ProjectionID) bool { return slices.Equal(a, b) }

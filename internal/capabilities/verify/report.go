package verify

import (
	"fmt"
	"io"
	"slices"

	"github.com/tributary/tributary/internal/quote"
)

// Verdicts a Report ends with: the table agrees, differs, or cannot be
// said to agree yet.
const (
	Agree    = "AGREE"
	mismatch = "MISMATCH"
	notReady = "NOT READY"
)

// ReportOptions configures Report.
type ReportOptions struct {
	// MaxPrint bounds the lines printed of each list (0: all).
	MaxPrint int
	// Keep, when set, picks the refused items that count (Options.Keep).
	Keep func(line string) bool
	// Rerun says how to run a backfill to the end, for a table whose
	// backfill has partials not folded ("`tributary backfill` again").
	Rerun string
}

// UnjudgedAdvice says what to do about items a gate could not judge in
// the export's own second.
const UnjudgedAdvice = "verify against a later incremental export, from the full export's time on and ending after that second: it knows each item's last write, which orders them by time (in its own last second, only the items it shows written there are left to the version)"

// Report writes what a check found, in the words of `tributary verify`
// after its first line, and returns its verdict: Agree only when the
// result agrees (Result.Agree), never otherwise.
func Report(w io.Writer, res *Result, o ReportOptions) string {
	if res.Changed > 0 {
		fmt.Fprintf(w, "%d items changed since the export: told apart by their state in the store, and checked against it\n", res.Changed)
	}
	refused := res.Refused
	if o.Keep != nil {
		refused = slices.DeleteFunc(slices.Clone(refused), func(d string) bool { return !o.Keep(d) })
	}
	quote.Named(w, res.Differences, res.More, o.MaxPrint)
	if n := len(res.Mixed); n > 0 {
		fmt.Fprintf(w, "NOT READY: a backfill read %d data files in part from an object that is not the exported one: items of it are in the store under the export's tokens, which no check or rerun can tell from the export's own; backfill into a new store (the objects must not change while they are read) and verify that\n", n)
		quote.Named(w, res.Mixed, 0, o.MaxPrint)
		return notReady
	}
	if n := len(res.Unfolded); n > 0 {
		fmt.Fprintf(w, "NOT READY: a backfill has %d data files whose deferred sums are not folded yet (e.g. %s): run it to the end (%s) and verify again\n", n, quote.Printable(res.Unfolded[0]), o.Rerun)
		return notReady
	}
	if n := len(res.Unjudged); n > 0 {
		fmt.Fprintf(w, "%d items could not be judged: their state in the store is from the export's own second, and the version cannot order it against the export's\n", n)
		quote.Named(w, res.Unjudged, 0, o.MaxPrint)
	}
	if n := int64(len(res.Differences)) + res.More; n > 0 {
		fmt.Fprintf(w, "MISMATCH: %d differences between the store and the recomputation from the export (the items changed since it taken as their state in the store says)\n", n)
		if len(refused) > 0 {
			fmt.Fprintf(w, "%d of them are export items the projections refuse (a backfill lists them as failed): correct the items or the projections, then backfill and verify again\n", len(refused))
		}
		return mismatch
	}
	if n := len(res.Unjudged); n > 0 {
		fmt.Fprintf(w, "NOT READY: %d items could not be judged against the export (in its own second; see above), the rest agrees: %s\n", n, UnjudgedAdvice)
		return notReady
	}
	if !res.agree() {
		// Every reason not to is named above; never an agreement without it.
		fmt.Fprintln(w, "NOT READY: the check did not agree")
		return notReady
	}
	fmt.Fprintf(w, "AGREE: every aggregate and row in the store equals the recomputation from the export, with the %d items changed since it as their state in the store says\n", res.Changed)
	return Agree
}

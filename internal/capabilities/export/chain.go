package export

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// CheckTime refuses t, said to be export e's point in time by what (a
// manifest field, or the time a user gave for an export without one), when
// it lies after now. No export holds the future, and a store built as of a
// later time would take every change to the table until then for older
// than the export's state, and skip it. There is no tolerance for clock
// skew: a real export's time lies before its completion by minutes (the
// export's own run), so only a clock behind by that much refuses one, and
// any tolerance would be a window of changes skipped.
func CheckTime(e *Export, what string, t, now time.Time) error {
	if !t.After(now) {
		return nil
	}
	return fmt.Errorf("export: %s: %s %s is after now (%s): an export holds no future, and every change to the table until then would be skipped as older than it; check the manifest, the time given or this machine's clock",
		e, what, t.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339))
}

// summaryTime parses the manifest-summary.json field named field, whose
// value is s; zero when it is absent, an error naming the export and the
// field when it is not an RFC 3339 time.
func summaryTime(e *Export, field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("export: %s: manifest-summary.json %s %q is not an RFC 3339 time", e, field, s)
	}
	return t, nil
}

// link is an incremental export of a chain with its window.
type link struct {
	e        *Export
	from, to time.Time
}

// checkChain checks that full and the incremental exports incs are one
// table's history, contiguous and moving forward, and of no future time
// (after now), and returns incs in the order they apply: by
// exportFromTime, then exportToTime, whatever the order given. It refuses:
//
//   - a time after now (CheckTime), of any export;
//   - a time field that does not parse; on an incremental export, a
//     missing exportFromTime or exportToTime; on a full export with
//     incremental exports, a missing exportTime, or no manifest at all
//     (it then names neither its time nor its table);
//   - an export of another table: a tableArn or tableId unlike the full
//     export's, or missing;
//   - a gap: an incremental export that starts after the end of the
//     exports before it (the changes in between are in none of them);
//   - a step back: an incremental export that ends before the full
//     export's time or before the end of an incremental export before it
//     (its states are older than those it would replace).
//
// Overlapping windows are legal: each item takes its latest state.
func checkChain(full *Export, incs []*Export, now time.Time) ([]*Export, error) {
	fullTime, err := summaryTime(full, "exportTime", full.Summary.ExportTime)
	if err != nil {
		return nil, err
	}
	if err := CheckTime(full, "exportTime", fullTime, now); err != nil {
		return nil, err
	}
	if len(incs) == 0 {
		return nil, nil
	}
	chain := make([]link, 0, len(incs))
	for _, e := range incs {
		if !e.Summary.Incremental() {
			return nil, fmt.Errorf("export: %s is not an incremental export (exportType %q)", e, e.Summary.ExportType)
		}
		l := link{e: e}
		for _, f := range []struct {
			name, value string
			t           *time.Time
		}{{"exportFromTime", e.Summary.ExportFromTime, &l.from}, {"exportToTime", e.Summary.ExportToTime, &l.to}} {
			if *f.t, err = summaryTime(e, f.name, f.value); err != nil {
				return nil, err
			}
			if f.t.IsZero() {
				return nil, fmt.Errorf("export: the incremental export %s has no %s in its manifest-summary.json: where it lies in the chain of exports cannot be told", e, f.name)
			}
		}
		if err := CheckTime(e, "exportToTime", l.to, now); err != nil {
			return nil, err
		}
		chain = append(chain, l)
	}
	if full.NoManifest {
		return nil, fmt.Errorf("export: %s was read without its manifest: it says neither its time nor its table, so incremental exports cannot be checked to continue it; restore its manifest-summary.json and manifest-files.json, or read it without incremental exports", full)
	}
	if fullTime.IsZero() {
		return nil, fmt.Errorf("export: %s has no exportTime in its manifest-summary.json: the incremental exports cannot be checked to continue it", full)
	}
	for _, l := range chain {
		if err := sameTable(full, l.e); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(chain, func(a, b link) int {
		return cmp.Or(a.from.Compare(b.from), a.to.Compare(b.to))
	})
	// prev names the exports before the next one by their last: the full
	// export and its time, or an incremental export and its end.
	prev, prevEnd := fmt.Sprintf("%s (as of %s)", full, fullTime.Format(time.RFC3339Nano)), fullTime
	out := make([]*Export, 0, len(chain))
	for _, l := range chain {
		if l.from.After(prevEnd) {
			return nil, fmt.Errorf("export: gap between %s and the incremental export %s (from %s): the changes in between are in neither",
				prev, l.e, l.from.Format(time.RFC3339Nano))
		}
		if l.to.Before(prevEnd) {
			return nil, fmt.Errorf("export: the incremental export %s (from %s to %s) ends before %s: its states are older than those it would replace, and a chain of exports must move forward; leave it out, or give the exports it continues",
				l.e, l.from.Format(time.RFC3339Nano), l.to.Format(time.RFC3339Nano), prev)
		}
		prev, prevEnd = fmt.Sprintf("%s (to %s)", l.e, l.to.Format(time.RFC3339Nano)), l.to
		out = append(out, l.e)
	}
	return out, nil
}

// sameTable refuses inc unless its manifest names full's table: the same
// tableArn and the same tableId (a table deleted and created again under
// its name keeps the ARN, not the ID).
func sameTable(full, inc *Export) error {
	for _, f := range []struct{ name, full, inc string }{
		{"tableArn", full.Summary.TableARN, inc.Summary.TableARN},
		{"tableId", full.Summary.TableID, inc.Summary.TableID},
	} {
		switch {
		case f.full == "":
			return fmt.Errorf("export: %s has no %s in its manifest-summary.json: the incremental export %s cannot be checked to be of its table", full, f.name, inc)
		case f.inc == "":
			return fmt.Errorf("export: the incremental export %s has no %s in its manifest-summary.json: it cannot be checked to be of the table of %s", inc, f.name, full)
		case f.full != f.inc:
			return fmt.Errorf("export: the incremental export %s is of another table than %s: %s %s, not %s; every export of a chain must be of one table",
				inc, full, f.name, f.inc, f.full)
		}
	}
	return nil
}

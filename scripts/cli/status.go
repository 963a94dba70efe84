package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/projections"
)

// storeStatus is what `tributary status --json` prints.
type storeStatus struct {
	Store string `json:"store"`
	// Set is the store's projection set (nil: no marker, a store no
	// engine has opened), and Since when it was recorded.
	Set   []projections.ProjectionID `json:"set"`
	Since time.Time                  `json:"since,omitzero"`
	// Binary says, per projection of the store's set, whether this
	// binary's set (or --spec's) has it: "same", "other definition",
	// "absent"; and lists the binary's projections the store lacks.
	Binary  map[string]string `json:"binary,omitempty"`
	Missing []string          `json:"missingFromStore,omitempty"`
	// Backfill is the backfill that built the store, if one did.
	Backfill *backfill.Marker `json:"backfill,omitempty"`
	engine.LedgerStatus
}

func runStatus(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("status", "")
	var sf storeFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	specFile := specFlag(fs)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if sf.dir == "" && sf.table == "" {
		return fmt.Errorf("%w: --store DIR or --table NAME is required", errUsage)
	}
	if e, err = e.withSpec(*specFile); err != nil {
		return err
	}
	st, closeStore, err := sf.open(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	s := storeStatus{Store: sf.String()}
	m, err := engine.ReadMarker(ctx, st)
	if err != nil {
		return err
	}
	if m != nil {
		s.Set, s.Since = m.Set, m.Since
	}
	if set := e.set(); set != nil && m != nil {
		s.Binary = map[string]string{}
		mine := set.IDs()
		for _, id := range m.Set {
			switch i := slices.IndexFunc(mine, func(b projections.ProjectionID) bool { return b.Name == id.Name }); {
			case i < 0:
				s.Binary[id.Name] = "absent"
			case mine[i].Fingerprint == id.Fingerprint:
				s.Binary[id.Name] = "same"
			default:
				s.Binary[id.Name] = "other definition (" + mine[i].Fingerprint + ")"
			}
		}
		for _, id := range mine {
			if !slices.ContainsFunc(m.Set, func(b projections.ProjectionID) bool { return b.Name == id.Name }) {
				s.Missing = append(s.Missing, id.Name)
			}
		}
	}
	if s.Backfill, _, err = backfill.ReadMarker(ctx, st); err != nil {
		return err
	}
	ls, err := engine.ReadLedgerStatus(ctx, st)
	if err != nil {
		return err
	}
	s.LedgerStatus = *ls
	if *asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	printStatus(w, s)
	return nil
}

func printStatus(w *bufio.Writer, s storeStatus) {
	fmt.Fprintln(w, s.Store)
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	if s.Set == nil {
		fmt.Fprintln(w, "projection set: none recorded (no engine has opened this store)")
	} else {
		fmt.Fprintf(w, "projection set (recorded %s):\n", ts(s.Since))
		for _, id := range s.Set {
			note := ""
			if b, ok := s.Binary[id.Name]; ok {
				note = "  this binary: " + b
			}
			fmt.Fprintf(w, "  %s@%s%s\n", id.Name, id.Fingerprint, note)
		}
		for _, n := range s.Missing {
			fmt.Fprintf(w, "  (%s: in this binary's set, not the store's)\n", n)
		}
	}
	switch b := s.Backfill; {
	case b == nil:
		fmt.Fprintln(w, "backfill: none (built by the stream alone)")
	default:
		state := "running or stopped: not every data file folded"
		if !b.Completed.IsZero() {
			state = "completed " + ts(b.Completed)
		}
		fmt.Fprintf(w, "backfill: job %s of %s, as of %s, %d data files, started %s, %s\n", b.Job, b.Export, ts(b.AsOf), b.Files, ts(b.Started), state)
		for _, inc := range b.Incrementals {
			fmt.Fprintf(w, "  incremental export %s\n", inc)
		}
		if b.Failed > 0 {
			fmt.Fprintf(w, "  %d export items the projections could not take\n", b.Failed)
		}
		if b.CaughtUp.IsZero() {
			fmt.Fprintf(w, "  stream: not caught up yet; apply it from %s on (the shadow or projector attached before the export, or replay --start)\n", ts(b.AsOf.Truncate(time.Second)))
		} else {
			fmt.Fprintf(w, "  stream: caught up %s\n", ts(b.CaughtUp))
		}
	}
	if n := len(s.Unfolded); n > 0 {
		fmt.Fprintf(w, "partials not folded: %d (the aggregates lack their sums until the backfill finishes)\n", n)
		for _, k := range s.Unfolded[:min(n, 10)] {
			fmt.Fprintf(w, "  %s\n", k)
		}
	} else {
		fmt.Fprintln(w, "partials not folded: none")
	}
	fmt.Fprintf(w, "items in the ledger: %d\n", s.Items)
	if len(s.Sources) == 0 {
		fmt.Fprintln(w, "newest change applied: none")
	}
	for _, a := range s.Sources {
		fmt.Fprintf(w, "newest change applied from %s: %s (%d items)\n", a.Source, ts(a.Newest), a.Items)
	}
}

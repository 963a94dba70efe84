package repartition

import (
	"context"
	"fmt"
	"path"
	"sync"

	"github.com/tributary/tributary/infra/objstore"
)

// ClaimKey is the output's claim (objstore.Acquire): the run that holds it
// is the only one that writes the output. Every step of a run takes it
// (begin, processFile, finish); the steps of one Step Functions execution
// share it, being one owner; finish, or a run that ends in an error,
// releases it.
const ClaimKey = "_run.json"

// Report says what a run did besides its summary, for people.
type Report struct {
	// AlreadyComplete: the output held a complete run of the same inputs
	// and settings, and nothing was done.
	AlreadyComplete bool
	// Resumed counts the data files an earlier run had done, which this one
	// skipped; Done the ones this run repartitioned.
	Resumed, Done int
	// Swept counts what crashed writes had left (temporary files,
	// incomplete multipart uploads), removed at begin and finish.
	Swept int
	// TookOver is the run whose claim this one took: a process of this
	// machine that is gone, or any with Options.Takeover.
	TookOver *objstore.Owner
}

// claims holds a Repartitioner's claim and report.
type claims struct {
	mu     sync.Mutex
	claim  *objstore.Claim
	report Report
}

// hold takes the output's claim, once.
func (r *Repartitioner) hold(ctx context.Context) error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if r.c.claim != nil {
		return nil
	}
	c, err := objstore.Acquire(ctx, r.out, ClaimKey, r.opts.Owner, r.opts.Takeover)
	if err != nil {
		return fmt.Errorf("repartition: %w, which is writing %s; if that run is gone (killed, or its machine lost), take the claim over: %s", err, r.out, r.opts.TakeoverAdvice)
	}
	r.c.claim = c
	if c.TookOver != nil {
		r.c.report.TookOver = c.TookOver
	}
	return nil
}

// check reports whether the run still holds the output: a run whose claim
// was taken over stops before its next commit.
func (r *Repartitioner) check(ctx context.Context) error {
	r.c.mu.Lock()
	c := r.c.claim
	r.c.mu.Unlock()
	if c == nil {
		return fmt.Errorf("repartition: %s is not claimed by this run", r.out)
	}
	if err := c.Check(ctx); err != nil {
		return fmt.Errorf("repartition: this run no longer holds %s: %w", r.out, err)
	}
	return nil
}

// release gives the output's claim up, if this run holds it: the next run
// may write the output. Finish releases it, and Run whatever happens; a
// Step Functions execution that fails calls it (the "release" step).
func (r *Repartitioner) release(ctx context.Context) error {
	r.c.mu.Lock()
	c := r.c.claim
	r.c.claim = nil
	r.c.mu.Unlock()
	if c == nil {
		c, _ = objstore.Acquire(ctx, r.out, ClaimKey, r.opts.Owner, false)
		if c == nil {
			return nil // another run's, or none: nothing of ours to release
		}
	}
	if err := c.Release(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("repartition: releasing the claim %s: %w", objstore.Name(r.out, ClaimKey), err)
	}
	return nil
}

// Report returns what the run did so far.
func (r *Repartitioner) Report() Report {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.report
}

func (r *Repartitioner) count(f func(*Report)) {
	r.c.mu.Lock()
	f(&r.c.report)
	r.c.mu.Unlock()
}

// sweep removes what crashed writes left in the output.
func (r *Repartitioner) sweep(ctx context.Context) error {
	n, err := r.out.Sweep(ctx, "")
	if err != nil {
		return err
	}
	r.count(func(rp *Report) { rp.Swept += n })
	return nil
}

// checkOutput refuses an output that overlaps an input: the export's
// directory or its data files' folders, or an incremental export's.
func checkOutput(out objstore.Store, r *Repartitioner) error {
	ol, err := objstore.Parse(out.String())
	if err != nil {
		return nil // a store of no location (a test's): nothing to compare
	}
	var places []string
	for _, e := range append(r.overlay.Exports, r.src) {
		places = append(places, e.String())
		for _, f := range e.Files {
			places = append(places, objstore.Name(e.Store(), path.Dir(e.DataKey(f))))
		}
	}
	seen := map[string]bool{}
	for _, p := range places {
		if seen[p] {
			continue
		}
		seen[p] = true
		if l, err := objstore.Parse(p); err == nil && l.Overlaps(ol) {
			return fmt.Errorf("repartition: the output %s overlaps the export %s: give an --out outside the export", out, p)
		}
	}
	return nil
}

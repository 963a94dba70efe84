package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/metrics"
	"github.com/tributary/tributary/projections/driver"
)

// Handoff is the stream a store is caught up from by a replay after the
// backfill (`replay --start`), when nothing was attached to it before the
// export: the replay must begin from the export's second while the
// stream still holds that second's records. With a shadow or remodeler
// attached before the export (the store's projection-set marker at or
// before the export's time), the stream's trimming does not matter and
// the guard does nothing.
type Handoff struct {
	// Retention is how long the stream keeps a record: 24 hours for
	// DynamoDB Streams, a Kinesis stream's own (DescribeStreamSummary).
	Retention time.Duration
	// Stream names it in messages.
	Stream string
	// Metrics, when set, receives the estimate and the headroom as
	// embedded-metric-format lines at each check (HandoffHeadroom and
	// EstimatedRemaining, in seconds), in Namespace (default Tributary)
	// with the dimension Function (default "local", off Lambda).
	Metrics   io.Writer
	Namespace string
	Function  string
	// Report, when set, is called with the estimate at each check (from
	// the guard's goroutine while Run runs).
	Report func(Estimate)
	// Every is how often the estimate is checked while the job runs
	// (default 30 s); MinSample is how long the job runs before its rate
	// is trusted enough to refuse on (default 1 minute).
	Every, MinSample time.Duration

	// now and ticks are the guard's clock: time.Now and a ticker of
	// Every when nil (a test drives its own).
	now   func() time.Time
	ticks <-chan time.Time
}

// Estimate is when a job is expected to finish, against the time the
// replay after it must begin by.
type Estimate struct {
	Items, Done int64     // the export's items, and those read so far
	Rate        float64   // items a second so far (0: not known yet)
	Finish      time.Time // zero while Rate is
	// Deadline is the export's second plus the stream's retention: the
	// replay from the export's second must begin before it.
	Deadline time.Time
	Headroom time.Duration // Deadline − Finish
}

// HandoffError refuses a backfill on the replay road whose estimated
// finish is after the stream has trimmed the export's second. It matches
// ErrRefused.
type HandoffError struct {
	Estimate
	Retention time.Duration
	Stream    string
	AsOf      time.Time
}

func (e *HandoffError) Error() string {
	est := "now"
	if !e.Finish.IsZero() {
		est = fmt.Sprintf("at %.0f items/s, %d of %d items read, it would finish about %s", e.Rate, e.Done, e.Items, e.Finish.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("backfill refused: nothing was attached to the store before the export, so the stream must be replayed into it from the export's second, %s (replay --start), but %s keeps its records %s: that second is trimmed about %s, and %s, %s too late. "+
		"Attach a shadow (or remodeler) to the store before taking a new export — then the stream's trimming does not matter — or make the backfill faster (more --workers, the Backfill state machine), or keep the stream longer (Kinesis: increase-stream-retention-period)",
		e.AsOf.Truncate(time.Second).Format(time.RFC3339), e.Stream, e.Retention, e.Deadline.UTC().Format(time.RFC3339), est, (-e.Headroom).Round(time.Second))
}

func (e *HandoffError) Unwrap() error { return ErrRefused }

// Attached reports whether a projector (a shadow, a remodeler) marked the
// store before the export's time: it has applied the stream since, and
// the stream's trimming does not matter to the job.
func (j *Job) Attached(ctx context.Context) (bool, error) {
	set, err := engine.ReadMarker(ctx, j.store)
	if err != nil {
		return false, err
	}
	return set != nil && !set.Since.After(j.asOf), nil
}

// items is the number of the export's items (the manifest's), with the
// overlay's.
func (j *Job) items() int64 {
	n := int64(j.overlay.Len())
	for _, f := range j.full.Files {
		n += max(f.ItemCount, 0)
	}
	return n
}

// estimate is the job's Estimate at now, having read done items since
// start.
func (j *Job) estimate(h *Handoff, start, now time.Time, done int64) Estimate {
	e := Estimate{Items: j.items(), Done: done, Deadline: j.asOf.Truncate(time.Second).Add(h.Retention)}
	e.Headroom = e.Deadline.Sub(now)
	if el := now.Sub(start).Seconds(); el > 0 && done > 0 {
		e.Rate = float64(done) / el
		e.Finish = now.Add(time.Duration(float64(max(e.Items-done, 0)) / e.Rate * float64(time.Second)))
		e.Headroom = e.Deadline.Sub(e.Finish)
	}
	return e
}

// check emits the estimate and refuses the job when it leaves no
// headroom: at once when the deadline has passed, and once the rate is
// trusted (sampled) when the estimated finish is after it.
func (j *Job) check(ctx context.Context, h *Handoff, e Estimate, sampled bool, now time.Time) error {
	if h.Report != nil {
		h.Report(e)
	}
	if h.Metrics != nil {
		fn := h.Function
		if fn == "" {
			fn = "local"
		}
		set := metrics.Handoff.New(h.Namespace, map[string]string{"Function": fn})
		set.AddDuration("HandoffHeadroom", e.Headroom)
		if !e.Finish.IsZero() {
			set.AddDuration("EstimatedRemaining", e.Finish.Sub(now))
		}
		_, _ = set.WriteTo(h.Metrics, now) // metrics are best effort
	}
	if e.Headroom >= 0 || (!sampled && !now.After(e.Deadline)) {
		return nil
	}
	return &HandoffError{Estimate: e, Retention: h.Retention, Stream: h.Stream, AsOf: j.asOf}
}

// guard watches a running job on the replay road (Options.Handoff, and
// nothing attached): it checks the estimate every h.Every and cancels ctx
// with a *HandoffError when the job would finish too late. It returns
// the context to run under and a stop function.
func (j *Job) guard(ctx context.Context) (context.Context, func(), error) {
	h := j.opts.Handoff
	if h == nil || h.Retention <= 0 {
		return ctx, func() {}, nil
	}
	if ok, err := j.Attached(ctx); err != nil || ok {
		return ctx, func() {}, err
	}
	every, minSample := h.Every, h.MinSample
	if every <= 0 {
		every = 30 * time.Second
	}
	if minSample <= 0 {
		minSample = time.Minute
	}
	now := h.now
	if now == nil {
		now = time.Now
	}
	start := now()
	base := j.read.Load()
	if err := j.check(ctx, h, j.estimate(h, start, start, 0), false, start); err != nil {
		return ctx, func() {}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		ticks := h.ticks
		if ticks == nil {
			t := time.NewTicker(every)
			defer t.Stop()
			ticks = t.C
		}
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-ticks:
				e := j.estimate(h, start, now, j.read.Load()-base)
				e.Done += base
				if err := j.check(ctx, h, e, now.Sub(start) >= minSample, now); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }, nil
}

// CheckHandoff is the guard of a job run in steps, each in a process of
// its own (the Backfill state machine's plan and file steps), which Run's
// guard cannot watch. With Options.Handoff set and nothing attached to
// the store before the export, it estimates the job's finish from what
// the store records — the items of the files done (their partials
// folded) since the job began (the marker's Started) — reports and emits
// it as Run's guard does, and refuses (a *HandoffError) the same way: at
// once when the export's second is trimmed already, and, once the job has
// run Handoff.MinSample, when it would finish after that. It returns nil
// and no error when the guard does not apply: no Handoff, a projector
// attached, or every file done. It reads every file's partial entry
// (Pending): call it now and then, not for every item. A refusal is
// recorded in the store (best effort), for Refusal.
func (j *Job) CheckHandoff(ctx context.Context, now time.Time) (*Estimate, error) {
	h := j.opts.Handoff
	if h == nil || h.Retention <= 0 {
		return nil, nil
	}
	if ok, err := j.Attached(ctx); err != nil || ok {
		return nil, err
	}
	start, done := now, int64(0)
	m, _, err := ReadMarker(ctx, j.store)
	if err != nil {
		return nil, err
	}
	if m != nil && m.Job == j.id && !m.Started.IsZero() {
		if !m.Completed.IsZero() {
			return nil, nil
		}
		pending, err := j.Pending(ctx)
		if err != nil {
			return nil, err
		}
		if len(pending) == 0 {
			return nil, nil
		}
		start, done = m.Started, j.items()
		for _, f := range pending {
			done -= j.fileItems(f)
		}
	}
	minSample := h.MinSample
	if minSample <= 0 {
		minSample = time.Minute
	}
	e := j.estimate(h, start, now, done)
	err = j.check(ctx, h, e, now.Sub(start) >= minSample, now)
	if he := (*HandoffError)(nil); errors.As(err, &he) {
		// Best effort: the refusal stands, recorded or not (a later step
		// that finds none checks again).
		_ = j.recordRefusal(ctx, he)
	}
	return &e, err
}

// refusalKey is the ledger key of the job's last hand-off refusal.
func (j *Job) refusalKey() string { return MarkerKey + "/handoff/" + j.id }

// recordRefusal writes he as the job's last refusal; one written
// meanwhile by another step stands.
func (j *Job) recordRefusal(ctx context.Context, he *HandoffError) error {
	key := j.refusalKey()
	body, err := json.Marshal(he)
	if err != nil {
		return err
	}
	got, err := j.store.ReadLedgers(ctx, []string{key})
	if err != nil {
		return fmt.Errorf("reading the hand-off refusal of job %s: %w", j.id, err)
	}
	err = j.store.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: key, ExpectRev: got[key].Rev, Body: body}}})
	if err != nil && !errors.As(err, new(*driver.ConflictError)) {
		return fmt.Errorf("recording the hand-off refusal of job %s: %w", j.id, err)
	}
	return nil
}

// Refusal returns the job's last hand-off refusal that CheckHandoff
// recorded in the store (by whichever step made it), or nil: so that a
// later step of the same run can fail with it.
func (j *Job) Refusal(ctx context.Context) (*HandoffError, error) {
	key := j.refusalKey()
	got, err := j.store.ReadLedgers(ctx, []string{key})
	if err != nil {
		return nil, fmt.Errorf("reading the hand-off refusal of job %s: %w", j.id, err)
	}
	e := got[key]
	if e.Rev == 0 {
		return nil, nil
	}
	var he HandoffError
	if err := json.Unmarshal(e.Body, &he); err != nil {
		return nil, fmt.Errorf("the hand-off refusal of job %s is corrupt: %w", j.id, err)
	}
	return &he, nil
}

// fileItems is the number of items of one of the job's files: the
// manifest's count, or the overlay's.
func (j *Job) fileItems(file string) int64 {
	if file == OverlayFile {
		return int64(j.overlay.Len())
	}
	return max(j.byKey[file].ItemCount, 0)
}

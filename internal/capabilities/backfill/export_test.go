package backfill

import "time"

// WithClock has the guard read the time from now and check the estimate
// at each time ticks gives, in place of the wall clock and a ticker of
// Every: a test drives the job's time itself.
func (h *Handoff) WithClock(now func() time.Time, ticks <-chan time.Time) *Handoff {
	h.now, h.ticks = now, ticks
	return h
}

// Package retry is the one backoff of the stores, readers, loaders and the
// engine: an exponential ceiling, min(limit, base·2^attempt), under which each
// wait is drawn with full jitter (Backoff) or equal jitter (EqualJitter), and
// a sleep that ends when its context does (Sleep returns ctx.Err(),
// SleepCause the context's cause).
//
// Full jitter spreads retries most and may retry at once: for calls whose
// failure says nothing about the next one (unprocessed keys, a lost
// connection). Equal jitter never waits less than half the ceiling: for
// throttling and contention, where an immediate retry is refused again.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// ceiling is the exponential bound of the wait before retry attempt (0 for
// the first retry): min(limit, base·2^attempt). A bound that is not positive
// means no wait.
func ceiling(attempt int, base, limit time.Duration) time.Duration {
	attempt = max(attempt, 0)
	d := limit
	if attempt < 30 && base<<attempt < limit {
		d = base << attempt
	}
	return d
}

// Backoff is the full-jitter wait before a retry: uniform in
// [0, min(limit, base·2^attempt)), and 0 when that bound is not positive.
func Backoff(attempt int, base, limit time.Duration) time.Duration {
	d := ceiling(attempt, base, limit)
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// EqualJitter is the equal-jitter wait before a retry: half the ceiling
// plus up to as much again at random, uniform in [c/2, c] for
// c = min(limit, base·2^attempt), and 0 when c is not positive. Calls that
// were refused together spread out, and none comes back sooner than c/2.
func EqualJitter(attempt int, base, limit time.Duration) time.Duration {
	d := ceiling(attempt, base, limit)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Sleep waits for d, or until ctx is done, when it returns ctx.Err(). A d
// of zero or less only checks ctx.
func Sleep(ctx context.Context, d time.Duration) error {
	if !wait(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// SleepCause is Sleep returning context.Cause(ctx): for work whose context
// is canceled with the error that stopped it. (Under an errgroup, where the
// cause is another goroutine's failure, Sleep is the one to use.)
func SleepCause(ctx context.Context, d time.Duration) error {
	if !wait(ctx, d) {
		return context.Cause(ctx)
	}
	return nil
}

// wait reports whether d passed before ctx was done.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

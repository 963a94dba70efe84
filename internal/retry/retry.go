// Package retry holds the waits that the stores, readers and loaders share
// between attempts: full-jitter exponential backoff and a sleep that ends
// when its context does.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the full-jitter wait before a retry: uniform in
// [0, min(max, base·2^attempt)), and 0 when that bound is not positive.
func Backoff(attempt int, base, max time.Duration) time.Duration {
	d := max
	if attempt < 30 && base<<attempt < max {
		d = base << attempt
	}
	if d <= 0 {
		return 0
	}
	return rand.N(d)
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
// is cancelled with the error that stopped it. (Under an errgroup, where the
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

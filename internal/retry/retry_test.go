package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaits: both jitters stay under the doubling ceiling, equal jitter
// never below half of it, and both reach most of their range.
func TestWaits(t *testing.T) {
	const base, limit = 50 * time.Millisecond, 5 * time.Second
	tests := []struct {
		name   string
		wait   func(attempt int, base, max time.Duration) time.Duration
		floor  func(ceiling time.Duration) time.Duration // the least wait
		closed bool                                      // the ceiling itself can be drawn
	}{
		{"full", Backoff, func(time.Duration) time.Duration { return 0 }, false},
		{"equal", EqualJitter, func(c time.Duration) time.Duration { return c / 2 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for attempt := range 40 {
				c := min(limit, base<<min(attempt, 30))
				lo, hi := c, time.Duration(0)
				for range 200 {
					d := tt.wait(attempt, base, limit)
					if d < tt.floor(c) || d > c || (!tt.closed && d == c) {
						t.Fatalf("attempt %d: %v outside the range under ceiling %v", attempt, d, c)
					}
					lo, hi = min(lo, d), max(hi, d)
				}
				// 200 uniform draws cover far more than the middle half.
				if span := c - tt.floor(c); hi-lo < span/2 {
					t.Errorf("attempt %d: 200 draws span only [%v, %v] of [%v, %v]", attempt, lo, hi, tt.floor(c), c)
				}
			}
		})
	}
}

// TestWaitsWithoutBound: no positive ceiling, no wait; a negative attempt
// is the first.
func TestWaitsWithoutBound(t *testing.T) {
	tests := []struct {
		name             string
		attempt          int
		base, max, limit time.Duration
	}{
		{"zero base and max", 3, 0, 0, 0},
		{"negative max", 1, time.Second, -time.Second, 0},
		{"negative attempt", -1, 10 * time.Millisecond, time.Second, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, wait := range []func(int, time.Duration, time.Duration) time.Duration{Backoff, EqualJitter} {
				if d := wait(tt.attempt, tt.base, tt.max); d < 0 || d > tt.limit {
					t.Errorf("wait(%d, %v, %v) = %v, want in [0, %v]", tt.attempt, tt.base, tt.max, d, tt.limit)
				}
			}
		})
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
	if err := SleepCause(context.Background(), time.Millisecond); err != nil {
		t.Errorf("SleepCause: %v", err)
	}
	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	for _, d := range []time.Duration{time.Hour, 0} {
		start := time.Now()
		if err := Sleep(ctx, d); err != context.Canceled {
			t.Errorf("Sleep(%v) on a canceled context = %v, want context.Canceled", d, err)
		}
		if err := SleepCause(ctx, d); !errors.Is(err, cause) {
			t.Errorf("SleepCause(%v) on a canceled context = %v, want its cause", d, err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("sleeping %v on a canceled context waited", d)
		}
	}
}

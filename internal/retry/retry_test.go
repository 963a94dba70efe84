package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBackoff: full jitter under a doubling cap.
func TestBackoff(t *testing.T) {
	for attempt := range 40 {
		limit := min(5*time.Second, 50*time.Millisecond<<min(attempt, 30))
		for range 50 {
			if d := Backoff(attempt, 50*time.Millisecond, 5*time.Second); d < 0 || d >= limit {
				t.Fatalf("attempt %d: %v not in [0, %v)", attempt, d, limit)
			}
		}
	}
	if d := Backoff(3, 0, 0); d != 0 {
		t.Errorf("Backoff with no bound = %v, want 0", d)
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
			t.Errorf("Sleep(%v) on a cancelled context = %v, want context.Canceled", d, err)
		}
		if err := SleepCause(ctx, d); !errors.Is(err, cause) {
			t.Errorf("SleepCause(%v) on a cancelled context = %v, want its cause", d, err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("sleeping %v on a cancelled context waited", d)
		}
	}
}

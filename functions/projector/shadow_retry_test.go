package projector

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/projections"
)

// TestShadowStartsLater: a shadow that cannot start at init (its table
// unreadable: not created yet, say) keeps every batch for redrive, and
// tries again once a minute: once its table can be read, it applies the
// batches that come, without a new environment.
func TestShadowStartsLater(t *testing.T) {
	ctx := context.Background()
	event, err := os.ReadFile("testdata/event.json")
	if err != nil {
		t.Fatal(err)
	}
	st := boltstoretest.Open(t)
	unreadable := &sim.FaultyStore{Store: st, Seed: 1, ReadFail: 1}
	keep := t.TempDir()
	cfg := Config{Table: "live", ShadowTable: "shadow", ShadowFailures: keep}
	h, err := New(ctx, cfg, seed.Environment(), boltstoretest.Open(t), slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard,
		WithShadow(unreadable.Table(st), objstore.NewDir(keep)))
	if err != nil {
		t.Fatal(err)
	}
	invoke := func() {
		t.Helper()
		if out, err := h.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("live response %s %v", out, err)
		}
	}
	invoke()
	unreadable.ReadFail = 0
	invoke() // within the minute: not tried again
	if h.ShadowFailures() != 2 {
		t.Fatalf("%d shadow failures, want 2 (not started, not tried again within the minute)", h.ShadowFailures())
	}
	h.shadow.lastTry = time.Now().Add(-shadowRetry)
	invoke()
	if h.ShadowFailures() != 2 {
		t.Errorf("%d shadow failures, want 2: the shadow did not start once its table could be read", h.ShadowFailures())
	}
	v, err := projections.ReadView(ctx, st)
	if err != nil || len(v.Aggregates) == 0 {
		t.Errorf("the shadow's table holds nothing after it started: %v", err)
	}
}

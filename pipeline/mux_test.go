package pipeline_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

type seen struct {
	name string
	log  *[]string
}

func (s seen) Handle(_ context.Context, c pipeline.Change) error {
	*s.log = append(*s.log, s.name+":"+c.Kind.String())
	return nil
}

func TestDispatch(t *testing.T) {
	changes, err := pipeline.DecodeStreamsEvent(read(t, "streams/event.json"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	typeChange := changes[1]
	typeChange.NewType = "ArchivedOrder"

	var log []string
	m := pipeline.NewMux[pipeline.Handler]()
	m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	m.Register("Order", seen{"orders", &log})
	m.Register("Order", seen{"audit", &log})
	m.Register("ArchivedOrder", seen{"archive", &log})
	h := pipeline.Dispatch(m)
	for _, c := range []pipeline.Change{changes[0], typeChange, changes[2]} {
		if err := h.Handle(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"orders:INSERT", "audit:INSERT", "orders:REMOVE", "audit:REMOVE", "archive:INSERT"}
	if len(log) != len(want) {
		t.Fatalf("dispatched %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("dispatched %v, want %v", log, want)
		}
	}
	if got := m.Skipped()["Player"]; got != 1 {
		t.Errorf("skipped Player = %d, want 1", got)
	}

	m.Policy = pipeline.FailUnknown
	err = h.Handle(context.Background(), changes[2])
	var ute *pipeline.UnknownTypeError
	if !errors.As(err, &ute) || ute.Type != "Player" || !errors.Is(err, pipeline.ErrPermanent) {
		t.Fatalf("FailUnknown: got %v", err)
	}
	if ute.Key != "PK=PLAYER#u8231 SK=PROFILE" {
		t.Errorf("key = %q", ute.Key)
	}
	missing := changes[0]
	missing.NewType = ""
	if err := h.Handle(context.Background(), missing); !errors.As(err, &ute) || ute.Type != "" {
		t.Fatalf("missing type under FailUnknown: got %v", err)
	}
}

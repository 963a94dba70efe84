package pipeline_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

// TestMuxOthers: RegisterOthers takes the images of every type nothing
// is registered for, and those without a type; IgnoreUnknown skips such
// images, counted, without a log line.
func TestMuxOthers(t *testing.T) {
	changes, err := pipeline.DecodeStreamsEvent(read(t, "streams/event.json"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	order, player := changes[0], changes[2]
	missing := order
	missing.NewType = ""
	lookup := func(m *pipeline.Mux[string], c pipeline.Change) []string {
		t.Helper()
		got, err := m.Lookup(context.Background(), &c, c.Image(), c.EntityType())
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	copies := pipeline.NewMux[string]()
	copies.Policy = pipeline.FailUnknown
	copies.Register("Order", "orders")
	copies.RegisterOthers("copy")
	for _, tt := range []struct {
		c    pipeline.Change
		want []string
	}{{order, []string{"orders"}}, {player, []string{"copy"}}, {missing, []string{"copy"}}} {
		if got := lookup(copies, tt.c); !slices.Equal(got, tt.want) {
			t.Errorf("%q: Lookup = %v, want %v", tt.c.EntityType(), got, tt.want)
		}
	}
	if !copies.Has("Player") || !copies.Has("") || !slices.Equal(copies.Types(), []string{"Order"}) {
		t.Errorf("with others registered: Has(Player) %v, Has(\"\") %v, Types() %v", copies.Has("Player"), copies.Has(""), copies.Types())
	}

	var logs bytes.Buffer
	quiet := pipeline.NewMux[string]()
	quiet.Policy = pipeline.IgnoreUnknown
	quiet.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	quiet.Register("Order", "orders")
	for _, c := range []pipeline.Change{player, missing, player} {
		if got := lookup(quiet, c); got != nil {
			t.Errorf("%q: Lookup = %v, want nothing", c.EntityType(), got)
		}
	}
	if got := quiet.Skipped(); got["Player"] != 2 || got["(none)"] != 1 || logs.Len() != 0 {
		t.Errorf("Skipped() = %v and logs %q, want Player twice, (none) once, no log line", got, logs.String())
	}
}

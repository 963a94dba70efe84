package pipeline_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

// TestMuxLookup: Lookup gives what is registered for an image's type, in
// registration order; unknown and missing types are skipped and counted
// under SkipUnknown, and fail permanently, naming the item, under
// FailUnknown; ignored types are skipped either way.
func TestMuxLookup(t *testing.T) {
	changes, err := pipeline.DecodeStreamsEvent(read(t, "streams/event.json"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	order, player := changes[0], changes[2]
	missing := order
	missing.NewType = ""

	m := pipeline.NewMux[string]()
	m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	m.Register("Order", "orders")
	m.Register("Order", "audit")
	m.Register("ArchivedOrder", "archive")
	m.Ignore("User")
	user := order
	user.NewType = "User"

	tests := []struct {
		name   string
		policy pipeline.UnknownPolicy
		c      pipeline.Change
		want   []string
		// wantType is the type an *UnknownTypeError names; "-": no error.
		wantType string
	}{
		{"registered twice", pipeline.SkipUnknown, order, []string{"orders", "audit"}, "-"},
		{"unknown skipped", pipeline.SkipUnknown, player, nil, "-"},
		{"missing skipped", pipeline.SkipUnknown, missing, nil, "-"},
		{"ignored", pipeline.FailUnknown, user, nil, "-"},
		{"unknown fails", pipeline.FailUnknown, player, nil, "Player"},
		{"missing fails", pipeline.FailUnknown, missing, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m.Policy = tt.policy
			got, err := m.Lookup(context.Background(), &tt.c, tt.c.Image(), tt.c.EntityType())
			if !slices.Equal(got, tt.want) {
				t.Errorf("Lookup = %v, want %v", got, tt.want)
			}
			var ute *pipeline.UnknownTypeError
			switch {
			case tt.wantType == "-" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.wantType != "-" && (!errors.As(err, &ute) || ute.Type != tt.wantType || !errors.Is(err, pipeline.ErrPermanent)):
				t.Errorf("err = %v, want a permanent *UnknownTypeError for %q", err, tt.wantType)
			case ute != nil && ute.Key != pipeline.KeyString(tt.c.Keys):
				t.Errorf("the error names %q, want the item's key %q", ute.Key, pipeline.KeyString(tt.c.Keys))
			}
		})
	}
	if got := m.Skipped(); got["Player"] != 1 || got["(none)"] != 1 || got["User"] != 1 {
		t.Errorf("Skipped() = %v, want Player, (none) and User once each", got)
	}
	if got := m.Types(); !slices.Equal(got, []string{"ArchivedOrder", "Order"}) || !m.Has("Order") || m.Has("User") {
		t.Errorf("Types() = %v", got)
	}
}

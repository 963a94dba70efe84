package projections_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tributary/tributary/projections"
)

func TestItemError(t *testing.T) {
	tests := []struct {
		err  *projections.ItemError
		want string
	}{
		{&projections.ItemError{Projection: "order-totals", PK: "USER#u42", SK: "ORDER#o1", Attr: "total", Err: projections.ErrMissing},
			"order-totals: item USER#u42/ORDER#o1: total: missing"},
		{&projections.ItemError{Projection: "p", PK: "A", Err: errors.New("bad")}, "p: item A/?: bad"},
		{&projections.ItemError{Projection: "p", PK: "a b", SK: "x\x1b]0;t\a", Attr: "SK", Err: errors.New("bad")},
			`p: item "a b"/"x\x1b]0;t\a": SK: bad`},
		{&projections.ItemError{Projection: "p", PK: "\xff", SK: "s", Err: errors.New("bad")}, `p: item "\xff"/s: bad`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %s, want %s", got, tt.want)
		}
	}
	wrapped := fmt.Errorf("record 3: %w", tests[0].err)
	var ie *projections.ItemError
	if !errors.As(wrapped, &ie) || ie.Attr != "total" || !errors.Is(wrapped, projections.ErrMissing) {
		t.Errorf("errors.As/Is through %v: %+v", wrapped, ie)
	}
}

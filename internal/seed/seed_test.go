package seed_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

var one = decimal.FromInt(1)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestAll(t *testing.T) {
	want := []struct {
		name  string
		types []string
	}{
		{"season-standings", []string{"Match"}},
		{"season-leaderboard", []string{"Player"}},
		{"workspace-activity", []string{"Document", "Comment"}},
		{"order-totals", []string{"Order"}},
		{"cart-contents", []string{"CartItem"}},
	}
	all := seed.All()
	if len(all) != len(want) {
		t.Fatalf("All() has %d projections, want %d", len(all), len(want))
	}
	for i, p := range all {
		if p.Name() != want[i].name {
			t.Errorf("All()[%d].Name() = %q, want %q", i, p.Name(), want[i].name)
		}
		if got := p.EntityTypes(); !slices.Equal(got, want[i].types) {
			t.Errorf("%s: EntityTypes() = %q, want %q", p.Name(), got, want[i].types)
		}
		// A caller that edits the slice must not change the projection.
		p.EntityTypes()[0] = "Mutated"
		if got := p.EntityTypes(); !slices.Equal(got, want[i].types) {
			t.Errorf("%s: EntityTypes() shares its slice between calls", p.Name())
		}
	}
	again := seed.All()
	for i := range all {
		if all[i] == again[i] {
			t.Errorf("All() returned the same %s instance twice", all[i].Name())
		}
	}
}

// brokenCase is an image every projection must reject with a *projections.ItemError.
type brokenCase struct {
	name        string
	item        pipeline.Item
	wantMissing bool   // the error must match projections.ErrMissing
	wantSuffix  string // if set, the message after the projection's name
}

// TestContributeBrokenImages feeds every projection images that are broken
// in ways JSON fixtures cannot express, or that any projection must survive.
func TestContributeBrokenImages(t *testing.T) {
	common := []brokenCase{
		{name: "nil item", item: nil, wantMissing: true, wantSuffix: ": item ?/?: EntityType: missing"},
		{name: "empty item", item: pipeline.Item{}, wantMissing: true, wantSuffix: ": item ?/?: EntityType: missing"},
		{name: "nil EntityType value", item: pipeline.Item{"EntityType": nil}, wantMissing: true},
		{name: "nil EntityType member", item: pipeline.Item{"EntityType": (*types.AttributeValueMemberS)(nil)}, wantMissing: true},
		{name: "EntityType NULL", item: pipeline.Item{"EntityType": &types.AttributeValueMemberNULL{Value: true}}, wantSuffix: ": item ?/?: EntityType: want S, got NULL"},
		{name: "EntityType unknown member", item: pipeline.Item{"EntityType": &types.UnknownUnionMember{Tag: "X"}}},
		{name: "EntityType other", item: pipeline.Item{"EntityType": s("Invoice")}},
		{name: "odd keys", item: pipeline.Item{"PK": s("A B\n"), "SK": s("\xff")}, wantMissing: true, wantSuffix: `: item "A B\n"/"\xff": EntityType: missing`},
	}
	for _, p := range seed.All() {
		typ := s(p.EntityTypes()[0])
		cases := append(slices.Clone(common),
			brokenCase{name: "type without keys", item: pipeline.Item{"EntityType": typ}, wantMissing: true, wantSuffix: ": item ?/?: PK: missing"},
			brokenCase{name: "nil PK member", item: pipeline.Item{"EntityType": typ, "PK": (*types.AttributeValueMemberS)(nil)}, wantMissing: true},
			brokenCase{name: "PK binary", item: pipeline.Item{"EntityType": typ, "PK": &types.AttributeValueMemberB{Value: []byte("x")}}, wantSuffix: ": item eA==/?: PK: want S, got B"},
		)
		for _, tt := range cases {
			t.Run(p.Name()+"/"+tt.name, func(t *testing.T) {
				c, err := p.Contribute(tt.item)
				if err == nil {
					t.Fatalf("Contribute = %+v, want an error", c)
				}
				checkItemError(t, p, err)
				if got := errors.Is(err, projections.ErrMissing); got != tt.wantMissing {
					t.Errorf("errors.Is(%q, projections.ErrMissing) = %t, want %t", err, got, tt.wantMissing)
				}
				if tt.wantSuffix != "" && err.Error() != p.Name()+tt.wantSuffix {
					t.Errorf("error = %q\nwant    %q", err, p.Name()+tt.wantSuffix)
				}
				if len(c.Counters) != 0 || len(c.Rows) != 0 {
					t.Errorf("Contribute returned %+v with its error, want nothing", c)
				}
			})
		}
	}
}

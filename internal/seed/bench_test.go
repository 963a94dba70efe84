package seed_test

import (
	"testing"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections"
)

func BenchmarkContribute(b *testing.B) {
	benches := []struct {
		p       projections.Projection
		fixture string
	}{
		{&seed.SeasonStandings{}, "season_standings/win"},
		{&seed.SeasonLeaderboard{}, "season_leaderboard/ranked"},
		{&seed.WorkspaceActivity{}, "workspace_activity/comment"},
		{&seed.OrderTotals{}, "order_totals/paid"},
		{&seed.CartContents{}, "cart_contents/line"},
	}
	for _, bb := range benches {
		b.Run(bb.p.Name(), func(b *testing.B) {
			item := readItem(b, "testdata/"+bb.fixture+".input.json")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bb.p.Contribute(item); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

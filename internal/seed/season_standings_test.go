package seed_test

import (
	"testing"

	"github.com/tributary/tributary/internal/seed"
)

func TestSeasonStandings(t *testing.T) {
	testGolden(t, &seed.SeasonStandings{}, "season_standings", []goldenCase{
		{name: "win"},
		{name: "loss"},
		{name: "draw"},
		{name: "error_unknown_result", wantErr: true},
		{name: "error_score_type", wantErr: true},
		{name: "error_score_not_number", wantErr: true},
		{name: "error_sk_shape", wantErr: true},
		{name: "error_missing_season", wantErr: true},
		{name: "error_entity_type", wantErr: true},
	})
}

func TestSeasonStandingsOneOutcome(t *testing.T) {
	tests := []struct {
		result string
		want   string
	}{
		{"WIN", "wins"},
		{"LOSS", "losses"},
		{"DRAW", "draws"},
	}
	for _, tt := range tests {
		t.Run(tt.result, func(t *testing.T) {
			item := readItem(t, "testdata/season_standings/win.input.json")
			item["result"] = s(tt.result)
			c, err := (&seed.SeasonStandings{}).Contribute(item)
			if err != nil {
				t.Fatal(err)
			}
			player := c.Counters[0].Values
			for _, name := range []string{"wins", "losses", "draws"} {
				v, ok := player[name]
				switch {
				case name == tt.want && (!ok || v.Cmp(one) != 0):
					t.Errorf("%s = %v (present %t), want 1", name, v, ok)
				case name != tt.want && ok:
					t.Errorf("%s present, want only %s", name, tt.want)
				}
			}
		})
	}
}

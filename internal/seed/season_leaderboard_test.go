package seed_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/tributary/tributary/internal/seed"
)

func TestSeasonLeaderboard(t *testing.T) {
	testGolden(t, &seed.SeasonLeaderboard{}, "season_leaderboard", []goldenCase{
		{name: "ranked"},
		{name: "rating_zero"},
		{name: "rating_max"},
		{name: "rating_scaled"},
		{name: "no_season"},
		{name: "null_season"},
		{name: "error_negative_rating", wantErr: true},
		{name: "error_fractional_rating", wantErr: true},
		{name: "error_rating_too_large", wantErr: true},
		{name: "error_handle_type", wantErr: true},
		{name: "error_season_hash", wantErr: true},
		{name: "error_sk_shape", wantErr: true},
		{name: "error_missing_pk", wantErr: true},
	})
}

// TestSeasonLeaderboardSortOrder checks that the rows' sort keys order
// players by rating, as a Query on the partition reads them.
func TestSeasonLeaderboardSortOrder(t *testing.T) {
	ratings := []int64{0, 7, 10, 99, 100, 1842, 1843, 20000, 9_999_999_999}
	var sorts []string
	for i, r := range ratings {
		item := readItem(t, "testdata/season_leaderboard/ranked.input.json")
		item["PK"] = s("PLAYER#u" + strconv.Itoa(len(ratings)-i))
		item["rating"] = n(strconv.FormatInt(r, 10))
		c, err := (&seed.SeasonLeaderboard{}).Contribute(item)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Rows) != 1 {
			t.Fatalf("rating %d: %d rows, want 1", r, len(c.Rows))
		}
		sorts = append(sorts, c.Rows[0].Sort)
	}
	if !slices.IsSorted(sorts) {
		t.Errorf("sort keys not in rating order: %q", sorts)
	}
}

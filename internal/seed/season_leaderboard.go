package seed

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// SeasonLeaderboard materialises a season leaderboard from Player items: one
// row per player with a season, sorted by zero-padded rating, so that one
// Query in descending order reads the top of the board. The zero value is
// ready to use.
type SeasonLeaderboard struct{}

var _ projections.Projection = (*SeasonLeaderboard)(nil)

var profileSK = shape("SK", "PROFILE")

// maxRating is the largest rating that fits the 10-digit sort key.
const maxRating = 9_999_999_999

// Name returns "season-leaderboard".
func (*SeasonLeaderboard) Name() string { return "season-leaderboard" }

// EntityTypes returns Player.
func (*SeasonLeaderboard) EntityTypes() []string { return []string{"Player"} }

// Definition describes what the projection computes (see
// projections.Definer): a change to it is a change of definition.
func (*SeasonLeaderboard) Definition() string {
	return "v1: Player PK=PLAYER#<id> SK=PROFILE -> row SEASON#<season> / RATING#<rating, 10 digits>#PLAYER#<id> {player, handle, rating, season}; no season: nothing"
}

// Contribute returns, for player <id> with a season, the row with partition
// SEASON#<season> and sort key RATING#<rating as 10 digits>#PLAYER#<id>,
// holding player, handle, rating and season; for a player without a season
// (absent or NULL), nothing. The rating must be an integer from 0 to
// 9999999999.
func (p *SeasonLeaderboard) Contribute(item pipeline.Item) (projections.Contribution, error) {
	c, err := p.contribute(item)
	if err != nil {
		return projections.Contribution{}, fail(p.Name(), item, err)
	}
	return c, nil
}

func (*SeasonLeaderboard) contribute(item pipeline.Item) (projections.Contribution, error) {
	if _, err := entityType(item, "Player"); err != nil {
		return projections.Contribution{}, err
	}
	pk, err := playerPK.parse(item)
	if err != nil {
		return projections.Contribution{}, err
	}
	if _, err := profileSK.parse(item); err != nil {
		return projections.Contribution{}, err
	}
	handle, err := str(item, "handle")
	if err != nil {
		return projections.Contribution{}, err
	}
	rating, err := integer(item, "rating", 0, maxRating)
	if err != nil {
		return projections.Contribution{}, err
	}
	season, ok, err := optStr(item, "season")
	if err != nil {
		return projections.Contribution{}, err
	}
	if !ok {
		return projections.Contribution{}, nil
	}
	if err := checkKeyPart("season", season); err != nil {
		return projections.Contribution{}, err
	}
	id := pk[0]
	return projections.Contribution{Rows: []projections.Row{{
		Partition: "SEASON#" + season,
		Sort:      fmt.Sprintf("RATING#%010d#PLAYER#%s", rating, id),
		Attrs: pipeline.Item{
			"player": &types.AttributeValueMemberS{Value: id},
			"handle": &types.AttributeValueMemberS{Value: handle},
			"rating": &types.AttributeValueMemberN{Value: fmt.Sprint(rating)},
			"season": &types.AttributeValueMemberS{Value: season},
		},
	}}}, nil
}

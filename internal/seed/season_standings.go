package seed

import (
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// SeasonStandings keeps per-season player standings from Match items: each
// player's matches, wins, losses, draws and points in a season, and the
// season's match count. The zero value is ready to use.
type SeasonStandings struct{}

var _ projections.Projection = (*SeasonStandings)(nil)

var (
	playerPK = shape("PK", "PLAYER#<id>")
	matchSK  = shape("SK", "MATCH#<ISO-8601>#<matchId>")
)

// Name returns "season-standings".
func (*SeasonStandings) Name() string { return "season-standings" }

// EntityTypes returns Match.
func (*SeasonStandings) EntityTypes() []string { return []string{"Match"} }

// Definition describes what the projection computes (see
// projections.Definer): a change to it is a change of definition.
func (*SeasonStandings) Definition() string {
	return "v1: Match PK=PLAYER#<id> SK=MATCH#<time>#<match> result in WIN|LOSS|DRAW -> SEASON#<season>#PLAYER#<id> matches=1 wins|losses|draws=1 points=score; SEASON#<season> (8 shards) matches=1"
}

// Contribute returns, for a match of player <id> in season <season>, the
// counter SEASON#<season>#PLAYER#<id> with matches=1, one of wins, losses or
// draws =1 for the result, and points=score; and the 8-shard counter
// SEASON#<season> with matches=1.
func (p *SeasonStandings) Contribute(item pipeline.Item) (projections.Contribution, error) {
	c, err := p.contribute(item)
	if err != nil {
		return projections.Contribution{}, fail(p.Name(), item, err)
	}
	return c, nil
}

func (*SeasonStandings) contribute(item pipeline.Item) (projections.Contribution, error) {
	if _, err := entityType(item, "Match"); err != nil {
		return projections.Contribution{}, err
	}
	pk, err := playerPK.parse(item)
	if err != nil {
		return projections.Contribution{}, err
	}
	if _, err := matchSK.parse(item); err != nil {
		return projections.Contribution{}, err
	}
	season, err := keyPart(item, "season")
	if err != nil {
		return projections.Contribution{}, err
	}
	result, err := oneOf(item, "result", "WIN", "LOSS", "DRAW")
	if err != nil {
		return projections.Contribution{}, err
	}
	score, err := num(item, "score")
	if err != nil {
		return projections.Contribution{}, err
	}
	outcome := "draws"
	switch result {
	case "WIN":
		outcome = "wins"
	case "LOSS":
		outcome = "losses"
	}
	return projections.Contribution{Counters: []projections.Counter{
		{
			Key: "SEASON#" + season + "#PLAYER#" + pk[0],
			Values: map[string]decimal.Decimal{
				"matches": one,
				outcome:   one,
				"points":  score,
			},
		},
		{
			Key:    "SEASON#" + season,
			Values: map[string]decimal.Decimal{"matches": one},
			Shards: hotShards,
		},
	}}, nil
}

package sim

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

var seasons = []string{"2026-Q4", "2026-Q3", "2026-Q2"}

// season returns a season: 2026-Q4 three times in four.
func (g *generator) season() string {
	switch u := g.r.Float64(); {
	case u < 0.75:
		return seasons[0]
	case u < 0.9:
		return seasons[1]
	}
	return seasons[2]
}

// setPlayerSeason sets a player's season, or leaves it out or NULL (then the
// player has no leaderboard row).
func (g *generator) setPlayerSeason(item pipeline.Item) {
	switch u := g.r.Float64(); {
	case u < 0.05:
		delete(item, "season")
	case u < 0.08:
		item["season"] = &types.AttributeValueMemberNULL{Value: true}
	default:
		item["season"] = str(g.season())
	}
}

var handles = []string{"nightowl", "zoë", `quote"d`, "back\\slash", "tab\there", "🦉owl", "日本", "#1fan", "plain"}

func (g *generator) player() Op {
	i := g.players.pick(g.r)
	pk := "PLAYER#p" + strconv.Itoa(i)
	cur := g.t.Get(pk, "PROFILE")
	if cur == nil {
		item := pipeline.Item{
			attrPK: str(pk), attrSK: str("PROFILE"), attrType: str("Player"),
			"handle":  str(handles[i%len(handles)] + strconv.Itoa(i)),
			"rating":  num(int64(1000 + g.r.IntN(1000))),
			"country": str(g.pickString(countries)),
			"active":  &types.AttributeValueMemberBOOL{Value: true},
		}
		g.setPlayerSeason(item)
		return g.put(item, "player-create")
	}
	item := content(cur)
	switch u := g.r.Float64(); {
	case u < 0.70:
		rating := max(0, intAttr(cur, "rating")+int64(g.r.IntN(81)-40))
		if rating == intAttr(cur, "rating") {
			rating++
		}
		item["rating"] = num(rating)
		return g.put(item, "player-rating")
	case u < 0.82:
		g.setPlayerSeason(item)
		return g.put(item, "player-season")
	case u < 0.88:
		item["handle"] = str(g.pickString(handles) + strconv.Itoa(g.r.IntN(1000)))
		return g.put(item, "player-handle")
	case u < 0.94:
		active, _ := cur["active"].(*types.AttributeValueMemberBOOL)
		item["active"] = &types.AttributeValueMemberBOOL{Value: active == nil || !active.Value}
		return g.put(item, "player-active")
	}
	return g.del(cur, "player-delete")
}

var countries = []string{"IE", "FR", "DE", "JP", "BR", "US"}

var results = []string{"WIN", "LOSS", "DRAW"}

func (g *generator) newMatch(pk, sk, id string) pipeline.Item {
	score := strconv.Itoa(g.r.IntN(3000))
	if g.r.IntN(10) == 0 {
		score += ".5" // points are exact decimals
	}
	return pipeline.Item{
		attrPK: str(pk), attrSK: str(sk), attrType: str("Match"),
		"matchId":         str(id),
		"season":          str(g.season()),
		"result":          str(g.pickString(results)),
		"score":           &types.AttributeValueMemberN{Value: score},
		"opponent":        str("PLAYER#p" + strconv.Itoa(g.players.pick(g.r))),
		"durationSeconds": num(int64(300 + g.r.IntN(3000))),
		"rounds":          &types.AttributeValueMemberL{Value: []types.AttributeValue{num(int64(g.r.IntN(10))), num(int64(g.r.IntN(10)))}},
	}
}

func (g *generator) match() Op {
	i := g.players.pick(g.r)
	pk := "PLAYER#p" + strconv.Itoa(i)
	if len(g.matches[i]) == 0 || g.r.Float64() < 0.45 {
		id := g.id("m")
		sk := "MATCH#" + g.stamp() + "#" + id
		g.matches[i] = append(g.matches[i], sk)
		return g.put(g.newMatch(pk, sk, id), "match-create")
	}
	sk := g.matches[i][g.r.IntN(len(g.matches[i]))]
	cur := g.t.Get(pk, sk)
	if cur == nil {
		_, id, _ := strings.Cut(strings.TrimPrefix(sk, "MATCH#"), "#")
		return g.put(g.newMatch(pk, sk, id), "match-recreate")
	}
	item := content(cur)
	switch u := g.r.Float64(); {
	case u < 0.6:
		item["score"] = num(int64(g.r.IntN(3000)))
		return g.put(item, "match-score")
	case u < 0.8:
		item["result"] = str(g.pickString(results))
		return g.put(item, "match-result")
	case u < 0.88:
		item["season"] = str(g.season())
		return g.put(item, "match-season")
	}
	return g.del(cur, "match-delete")
}

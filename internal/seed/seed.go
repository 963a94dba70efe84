// Package seed holds the projections of Tributary's seed domains, the
// three single-table designs of the demo and the tests: the leaderboard (Player, Match), the documents SaaS (Document, Comment) and
// retail (CartItem, Order). They serve as examples, fixtures and benchmark
// workloads, and as the reference for how a projection reads an item image.
//
// Each projection is a pure function of one item image. What it contributes to
// its aggregate table (counter values are added; rows are owned by their source
// item):
//
//	projection          reads              aggregate key / row                            values / attributes
//	season-standings    Match              SEASON#<season>#PLAYER#<id>                    matches=1, wins|losses|draws=1, points=score
//	                                       SEASON#<season> (8 shards)                     matches=1
//	season-leaderboard  Player             row SEASON#<season> /                          player, handle, rating, season
//	                                           RATING#<rating, 10 digits>#PLAYER#<id>     (no season: nothing)
//	workspace-activity  Document           WS#<ws>                                        documents=1
//	                    Comment            WS#<ws>                                        comments=1
//	                                       WS#<ws>#DOC#<doc>                              comments=1
//	order-totals        Order              ORDERS#<status>#DAY#<orderDate>                orders=1, revenue=total
//	                                       ORDERS#<status> (8 shards)                     orders=1, revenue=total
//	cart-contents       CartItem           CART#<cart>                                    lines=1, quantity=quantity
//
// Source item shapes (every item also has EntityType S and version N, which
// the projections do not read beyond checking EntityType):
//
//	Player    PK=PLAYER#<id>  SK=PROFILE                    handle S, season S (optional; absent or NULL: none), rating N (integer 0…9999999999)
//	Match     PK=PLAYER#<id>  SK=MATCH#<ISO-8601>#<matchId> season S, result S (WIN, LOSS, DRAW), score N
//	Document  PK=WS#<ws>      SK=DOC#<doc>
//	Comment   PK=WS#<ws>      SK=DOC#<doc>#CMT#<comment>    ttl (optional, ignored)
//	CartItem  PK=CART#<cart>  SK=ITEM#<product>             quantity N (integer)
//	Order     PK=USER#<user>  SK=ORDER#<date>#<order>       status S (PENDING, PAID, SHIPPED, CANCELLED), total N, orderDate S (YYYY-MM-DD)
//
// Every <...> part of a key must be non-empty and free of '#', and so must a
// season or orderDate that becomes part of an aggregate key, so that no two
// sources can build the same key by accident. An image that does not fit its
// shape is rejected with a *projections.ItemError naming the projection, the item's PK/SK
// and the attribute or key at fault; Contribute never panics, whatever the
// image.
package seed

import (
	"github.com/tributary/tributary/projections"
)

// Set returns the set of every seed projection: what the stock functions and
// the stock tributary run.
func Set() *projections.Set { return projections.MustSet(All()...) }

// All returns a fresh instance of every seed projection, in a stable order.
func All() []projections.Projection {
	return []projections.Projection{
		&SeasonStandings{},
		&SeasonLeaderboard{},
		&WorkspaceActivity{},
		&OrderTotals{},
		&CartContents{},
	}
}

// Environment returns the seed tables' environment: the default attributes
// (EntityType, version, PK and SK, ttl), every seed projection and the
// comments-table transform. It loads no spec: a main that takes one sets
// LoadSpec (spec.Load), as the stock mains do.
func Environment() *projections.Environment {
	return &projections.Environment{Projections: Set(), Transforms: []*projections.Transform{CommentsTable()}}
}

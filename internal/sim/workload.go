package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// Workload describes a simulated table's traffic over the seed domains
// (DESIGN.md; item shapes as projections/seed validates them):
//
//	Player    PLAYER#p<i> / PROFILE                  rating changes, season moves (sometimes none or NULL)
//	Match     PLAYER#p<i> / MATCH#<time>#m<n>        score edits, result flips, season moves
//	Workspace WS#w<i> / META                         read by no projection
//	Document  WS#w<i> / DOC#d<n>                     edits; Document <-> Template (only without live comments)
//	Comment   WS#w<i> / DOC#d<n>#CMT#c<n>            often with ttl; edits, pins (ttl removed), TTL expiry
//	User      USER#u<i> / PROFILE                    read by no projection
//	Cart      CART#c<i> / META                       read by no projection
//	CartItem  CART#c<i> / ITEM#p<j>                  quantity changes (0 included), removal, re-adding
//	Order     USER#u<i> / ORDER#<date>#o<n>          PENDING -> PAID -> SHIPPED, or CANCELLED;
//	                                                 Order <-> ArchivedOrder; deletes
//
// Every item has EntityType and version. Keys are drawn with a Zipf law of
// exponent Skew (hot and cold keys), and some values are hot whatever Skew is:
// most players and matches are in season 2026-Q4, most orders are placed on
// the start day and end up PAID or SHIPPED. Deletes happen in every domain,
// and a deleted item is often created again, sometimes by the very next
// operation (its version restarts at 1). A small share of operations rewrite
// an item unchanged: no-op writes, for which DynamoDB emits no record.
type Workload struct {
	Seed uint64
	// Changes is the number of stream records to produce (no-op writes do
	// not count). Default 1,000.
	Changes int
	// Key-space sizes. Defaults: 200 players, 20 workspaces, 200 users (and
	// carts), 50 products.
	Players, Workspaces, Users, Products int
	// Skew is the Zipf exponent s of key popularity: key k is drawn with
	// weight 1/(k+1)^s. 0 is uniform; around 1 is a typical hot-key workload.
	Skew float64
	// Shards is the number of stream shards. Default 4.
	Shards int
	// Start is the simulated clock's start. Default 2026-11-30T10:00:00Z.
	Start time.Time
	// NoopRate is the share of operations that rewrite an item unchanged.
	// Default 0.02; negative for none; at most 0.5.
	NoopRate float64
}

// DefaultStart is the default Workload.Start.
var DefaultStart = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func (w Workload) withDefaults() Workload {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&w.Changes, 1000)
	def(&w.Players, 200)
	def(&w.Workspaces, 20)
	def(&w.Users, 200)
	def(&w.Products, 50)
	def(&w.Shards, 4)
	if w.Start.IsZero() {
		w.Start = DefaultStart
	}
	w.Start = w.Start.UTC().Truncate(time.Millisecond)
	switch {
	case w.NoopRate == 0:
		w.NoopRate = 0.02
	case w.NoopRate < 0:
		w.NoopRate = 0
	case w.NoopRate > 0.5:
		w.NoopRate = 0.5
	}
	if w.Skew < 0 || math.IsNaN(w.Skew) {
		w.Skew = 0
	}
	return w
}

// WithDefaults returns w with every unset field at its default.
func (w Workload) WithDefaults() Workload { return w.withDefaults() }

// History is a simulated run: the records of the table's stream and the
// table they leave.
type History struct {
	Workload Workload // with defaults filled in
	Records  []Record
	Table    *Table // the items after the last record
	Ops      int    // operations applied, no-op writes included
}

// Run generates the workload and applies it through a Stream. With d =
// w.WithDefaults(), it gives the same records as Generate feeding
// NewStream(d.Shards, d.Start, d.Seed).Apply.
func (w Workload) Run() (*History, error) {
	w = w.withDefaults()
	s := NewStream(w.Shards, w.Start, w.Seed)
	h := &History{Workload: w, Records: make([]Record, 0, w.Changes), Table: s.table}
	err := w.run(s.table, true, func(op Op, rec Record, ok bool) error {
		s.tick()
		if ok {
			s.stamp(&rec)
			h.Records = append(h.Records, rec)
		}
		h.Ops++
		return nil
	})
	return h, err
}

// Generate calls fn with each operation of the workload, in order, until
// Changes of them have changed the table (no-op writes are passed to fn too).
// fn may keep the operations. It stops at fn's first error and returns it.
func (w Workload) Generate(fn func(Op) error) error {
	return w.withDefaults().run(NewTable(), false, func(op Op, _ Record, _ bool) error { return fn(op) })
}

// run drives the generator over table t, which it applies each operation to
// before passing it on with the record it caused. With owned, t keeps the
// generator's fresh items rather than copying them: fn must not keep or
// modify op.Item.
func (w Workload) run(t *Table, owned bool, fn func(op Op, rec Record, ok bool) error) error {
	g := newGenerator(w, t)
	for changes := 0; changes < w.Changes; g.ops++ {
		op := g.next()
		rec, ok, err := t.apply(op, owned)
		if err != nil {
			return fmt.Errorf("sim: workload op %d (%s): %w", g.ops, op.Action, err)
		}
		if ok {
			changes++
			g.observe(rec)
		}
		if err := fn(op, rec, ok); err != nil {
			return err
		}
	}
	return nil
}

// generator holds the workload's random state and the indexes it needs to
// pick items; the table holds the items themselves.
type generator struct {
	w   Workload
	r   *rand.Rand
	t   *Table
	ops int

	players, workspaces, users, products zipf

	nextID  int
	matches [][]string    // per player: SKs of its matches, ever
	docs    [][]*doc      // per workspace: its documents, ever
	orders  [][]string    // per user: SKs of their orders, ever
	keys    []itemKey     // every key created, for no-op writes
	deleted pipeline.Item // the item the last operation removed, if any
}

func newGenerator(w Workload, t *Table) *generator {
	return &generator{
		w:          w,
		r:          rand.New(rand.NewPCG(w.Seed, workloadSalt)),
		t:          t,
		players:    newZipf(w.Players, w.Skew),
		workspaces: newZipf(w.Workspaces, w.Skew),
		users:      newZipf(w.Users, w.Skew),
		products:   newZipf(w.Products, w.Skew),
		matches:    make([][]string, w.Players),
		docs:       make([][]*doc, w.Workspaces),
		orders:     make([][]string, w.Users),
	}
}

// next returns the next operation.
func (g *generator) next() Op {
	if old := g.deleted; old != nil {
		g.deleted = nil
		if g.r.Float64() < 0.25 {
			return g.recreate(old)
		}
	}
	if g.r.Float64() < g.w.NoopRate && len(g.keys) > 0 {
		k := g.keys[g.r.IntN(len(g.keys))]
		if cur := g.t.Get(k[0], k[1]); cur != nil {
			return Op{Kind: Put, Item: content(cur), Action: "noop"}
		}
	}
	switch u := g.r.Float64(); {
	case u < 0.25:
		return g.player()
	case u < 0.42:
		return g.match()
	case u < 0.46:
		return g.workspace()
	case u < 0.55:
		return g.document()
	case u < 0.68:
		return g.comment()
	case u < 0.72:
		return g.user()
	case u < 0.75:
		return g.cart()
	case u < 0.86:
		return g.cartItem()
	default:
		return g.order()
	}
}

// observe updates the generator's indexes after a change.
func (g *generator) observe(rec Record) {
	if rec.Kind == pipeline.Remove {
		g.deleted = rec.Old
		return
	}
	if rec.Kind == pipeline.Insert {
		pk, sk, _ := keyStrings(rec.Keys)
		g.keys = append(g.keys, tableKey(pk, sk))
	}
}

// recreate creates a removed item again, under the same key: version 1.
func (g *generator) recreate(old pipeline.Item) Op {
	item := content(old)
	switch entityType(old) {
	case "Order", "ArchivedOrder":
		item[attrType] = str("Order")
		item["status"] = str("PENDING")
		delete(item, "paidAt")
		delete(item, "paymentRef")
	case "CartItem":
		item["quantity"] = num(1)
	case "Comment":
		item["body"] = str(g.pickString(commentBodies))
	}
	item["restoredAt"] = str(g.stamp())
	return Op{Kind: Put, Item: item, Action: "recreate"}
}

// Leaderboard.

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

// Documents SaaS.

var plans = []string{"FREE", "TEAM", "ENTERPRISE"}

func (g *generator) workspace() Op {
	i := g.workspaces.pick(g.r)
	pk := "WS#w" + strconv.Itoa(i)
	cur := g.t.Get(pk, "META")
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str("META"), attrType: str("Workspace"),
			"name": str("Workspace " + strconv.Itoa(i)),
			"plan": str(g.pickString(plans)),
		}, "workspace-create")
	}
	if g.r.Float64() < 0.9 {
		item := content(cur)
		item["plan"] = str(g.pickString(plans))
		item["updatedAt"] = str(g.stamp())
		return g.put(item, "workspace-update")
	}
	return g.del(cur, "workspace-delete")
}

var titles = []string{"Roadmap", "Launch plan", "Q1 \"OKRs\"", "Notes — café", "Runbook\nv2"}

func (g *generator) newDocument(pk, sk, id string) pipeline.Item {
	return pipeline.Item{
		attrPK: str(pk), attrSK: str(sk), attrType: str("Document"),
		"docId": str(id),
		"title": str(g.pickString(titles)),
		"tags":  &types.AttributeValueMemberSS{Value: []string{"draft", g.pickString([]string{"eng", "ops", "sales"})}},
		"meta": &types.AttributeValueMemberM{Value: pipeline.Item{
			"words": num(int64(g.r.IntN(5000))),
			"lang":  str(g.pickString([]string{"en", "fr", "ja"})),
		}},
	}
}

// doc is a document the workload created, and the comments made on it.
type doc struct {
	id, sk   string
	comments []string // SKs
}

func (g *generator) document() Op {
	i := g.workspaces.pick(g.r)
	pk := "WS#w" + strconv.Itoa(i)
	if len(g.docs[i]) == 0 || g.r.Float64() < 0.3 {
		id := g.id("d")
		d := &doc{id: id, sk: "DOC#" + id}
		g.docs[i] = append(g.docs[i], d)
		return g.put(g.newDocument(pk, d.sk, id), "doc-create")
	}
	d := g.docs[i][g.r.IntN(len(g.docs[i]))]
	cur := g.t.Get(pk, d.sk)
	if cur == nil {
		return g.put(g.newDocument(pk, d.sk, d.id), "doc-recreate")
	}
	item := content(cur)
	switch u := g.r.Float64(); {
	case u < 0.45:
		item["title"] = str(g.pickString(titles) + " " + strconv.Itoa(g.r.IntN(100)))
		return g.put(item, "doc-edit")
	case u < 0.6:
		item["tags"] = &types.AttributeValueMemberSS{Value: []string{"final", g.pickString([]string{"eng", "ops", "sales"})}}
		return g.put(item, "doc-tags")
	case u < 0.8:
		switch entityType(cur) {
		case "Template":
			item[attrType] = str("Document")
			return g.put(item, "template-to-doc")
		case "Document":
			if g.commentless(pk, d) {
				item[attrType] = str("Template")
				return g.put(item, "doc-to-template")
			}
		}
		item["title"] = str(g.pickString(titles))
		return g.put(item, "doc-edit")
	}
	return g.del(cur, "doc-delete")
}

// commentless reports whether a document has no live comments.
func (g *generator) commentless(pk string, d *doc) bool {
	for _, sk := range d.comments {
		if g.t.Get(pk, sk) != nil {
			return false
		}
	}
	return true
}

var commentBodies = []string{"LGTM", "Can we move the launch to Q1?", "Typo in section 2.", "line 1\nline 2", `He said "ship it"`, "🎉 done", "ctl\x01char", "a/b\\c"}

func (g *generator) newComment(pk, sk, docID, id string) pipeline.Item {
	item := pipeline.Item{
		attrPK: str(pk), attrSK: str(sk), attrType: str("Comment"),
		"commentId": str(id),
		"docId":     str(docID),
		"authorId":  str("u" + strconv.Itoa(g.users.pick(g.r))),
		"body":      str(g.pickString(commentBodies)),
		"createdAt": str(g.stamp()),
	}
	if g.r.Float64() < 0.7 {
		// Already past: DynamoDB deletes expired items in the background,
		// typically within days, so the simulation may expire them any time.
		item[attrTTL] = num(g.w.Start.Unix() - int64(g.r.IntN(14*24*3600)))
	}
	return item
}

func (g *generator) comment() Op {
	i := g.workspaces.pick(g.r)
	pk := "WS#w" + strconv.Itoa(i)
	// Comments go on Documents only, never on Templates.
	var d *doc
	for try := 0; try < 3 && len(g.docs[i]) > 0; try++ {
		c := g.docs[i][g.r.IntN(len(g.docs[i]))]
		if item := g.t.Get(pk, c.sk); item != nil && entityType(item) == "Document" {
			d = c
			break
		}
	}
	if d == nil {
		return g.document()
	}
	if len(d.comments) == 0 || g.r.Float64() < 0.45 {
		id := g.id("c")
		sk := d.sk + "#CMT#" + id
		d.comments = append(d.comments, sk)
		return g.put(g.newComment(pk, sk, d.id, id), "comment-create")
	}
	sk := d.comments[g.r.IntN(len(d.comments))]
	cur := g.t.Get(pk, sk)
	if cur == nil {
		_, id, _ := strings.Cut(sk, "#CMT#")
		return g.put(g.newComment(pk, sk, d.id, id), "comment-recreate")
	}
	item := content(cur)
	_, hasTTL := cur[attrTTL]
	switch u := g.r.Float64(); {
	case u < 0.35:
		item["body"] = str(g.pickString(commentBodies) + " (edited)")
		return g.put(item, "comment-edit")
	case u < 0.42 && hasTTL:
		delete(item, attrTTL)
		return g.put(item, "comment-pin")
	case u < 0.8 && hasTTL:
		return Op{Kind: Expire, Item: keysOf(cur), Action: "comment-expire"}
	}
	return g.del(cur, "comment-delete")
}

// Retail.

func (g *generator) user() Op {
	i := g.users.pick(g.r)
	pk := "USER#u" + strconv.Itoa(i)
	cur := g.t.Get(pk, "PROFILE")
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str("PROFILE"), attrType: str("User"),
			"userId": str("u" + strconv.Itoa(i)),
			"email":  str("u" + strconv.Itoa(i) + "@example.com"),
			"tier":   str("basic"),
		}, "user-create")
	}
	if g.r.Float64() < 0.9 {
		item := content(cur)
		item["tier"] = str(g.pickString([]string{"basic", "plus", "pro"}))
		item["lastSeen"] = str(g.stamp())
		return g.put(item, "user-update")
	}
	return g.del(cur, "user-delete")
}

func (g *generator) cart() Op {
	i := g.users.pick(g.r)
	pk := "CART#c" + strconv.Itoa(i)
	cur := g.t.Get(pk, "META")
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str("META"), attrType: str("Cart"),
			"userId":    str("u" + strconv.Itoa(i)),
			"updatedAt": str(g.stamp()),
		}, "cart-create")
	}
	if g.r.Float64() < 0.85 {
		item := content(cur)
		item["updatedAt"] = str(g.stamp())
		return g.put(item, "cart-touch")
	}
	return g.del(cur, "cart-delete")
}

func (g *generator) cartItem() Op {
	i, j := g.users.pick(g.r), g.products.pick(g.r)
	pk, sk := "CART#c"+strconv.Itoa(i), "ITEM#p"+strconv.Itoa(j)
	cur := g.t.Get(pk, sk)
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str(sk), attrType: str("CartItem"),
			"productId": str("p" + strconv.Itoa(j)),
			"quantity":  num(int64(1 + g.r.IntN(3))),
			"unitPrice": numS(cents(int64(199 + 100*j))),
			"addedAt":   str(g.stamp()),
		}, "cart-add")
	}
	if g.r.Float64() < 0.75 {
		q := intAttr(cur, "quantity")
		nq := int64(g.r.IntN(9)) // 0 included: a line kept at zero
		if nq >= q {
			nq++
		}
		item := content(cur)
		item["quantity"] = num(nq)
		return g.put(item, "cart-quantity")
	}
	return g.del(cur, "cart-remove")
}

// orderDay returns an order date: the start day four times in five.
func (g *generator) orderDay() string {
	day := g.w.Start
	if g.r.Float64() >= 0.8 {
		day = day.AddDate(0, 0, -1-g.r.IntN(6))
	}
	return day.Format(time.DateOnly)
}

func (g *generator) newOrder(pk, sk, id, day string, user int) pipeline.Item {
	return pipeline.Item{
		attrPK: str(pk), attrSK: str(sk), attrType: str("Order"),
		"orderId":   str(id),
		"userId":    str("u" + strconv.Itoa(user)),
		"orderDate": str(day),
		"status":    str("PENDING"),
		"total":     numS(cents(int64(500 + g.r.IntN(50000)))),
		"currency":  str("EUR"),
		"itemCount": num(int64(1 + g.r.IntN(5))),
	}
}

func (g *generator) order() Op {
	i := g.users.pick(g.r)
	pk := "USER#u" + strconv.Itoa(i)
	if len(g.orders[i]) == 0 || g.r.Float64() < 0.35 {
		id, day := g.id("o"), g.orderDay()
		sk := "ORDER#" + day + "#" + id
		g.orders[i] = append(g.orders[i], sk)
		return g.put(g.newOrder(pk, sk, id, day, i), "order-create")
	}
	sk := g.orders[i][g.r.IntN(len(g.orders[i]))]
	cur := g.t.Get(pk, sk)
	if cur == nil {
		parts := strings.Split(sk, "#") // ORDER, day, id
		return g.put(g.newOrder(pk, sk, parts[2], parts[1], i), "order-recreate")
	}
	item := content(cur)
	u := g.r.Float64()
	if entityType(cur) == "ArchivedOrder" {
		if u < 0.4 {
			item[attrType] = str("Order")
			return g.put(item, "order-restore")
		}
		return g.del(cur, "order-purge")
	}
	switch status := strAttr(cur, "status"); {
	case status == "PENDING" && u < 0.7:
		item["status"] = str("PAID")
		item["paidAt"] = str(g.stamp())
		item["paymentRef"] = str("pay_" + strconv.Itoa(g.r.IntN(1e6)))
		return g.put(item, "order-pay")
	case status == "PENDING" && u < 0.85, status == "PAID" && u >= 0.8:
		item["status"] = str("CANCELLED")
		return g.put(item, "order-cancel")
	case status == "PENDING":
		item["total"] = numS(cents(int64(500 + g.r.IntN(50000))))
		return g.put(item, "order-total")
	case status == "PAID":
		item["status"] = str("SHIPPED")
		return g.put(item, "order-ship")
	case u < 0.5:
		item[attrType] = str("ArchivedOrder")
		return g.put(item, "order-archive")
	case u < 0.7:
		return g.del(cur, "order-delete")
	}
	item["note"] = str("note " + strconv.Itoa(g.r.IntN(100)))
	return g.put(item, "order-note")
}

// Helpers.

func (g *generator) put(item pipeline.Item, action string) Op {
	return Op{Kind: Put, Item: item, Action: action}
}

func (g *generator) del(cur pipeline.Item, action string) Op {
	return Op{Kind: Delete, Item: keysOf(cur), Action: action}
}

// id returns a new ID, unique in the workload: prefix and a counter.
func (g *generator) id(prefix string) string {
	g.nextID++
	return prefix + strconv.Itoa(g.nextID)
}

// stamp returns an ISO-8601 time for attribute values: about 2 ms per
// operation after Start (the stream's clock is separate).
func (g *generator) stamp() string {
	return g.w.Start.Add(time.Duration(g.ops) * 2 * time.Millisecond).Format(time.RFC3339)
}

func (g *generator) pickString(s []string) string { return s[g.r.IntN(len(s))] }

// content returns a copy of item without its version: what a Put writes.
func content(item pipeline.Item) pipeline.Item {
	out := make(pipeline.Item, len(item)+2) // room for new attributes
	for k, v := range item {
		if k != attrVersion {
			out[k] = v
		}
	}
	return out
}

// keysOf returns item's keys.
func keysOf(item pipeline.Item) pipeline.Item {
	return pipeline.Item{attrPK: item[attrPK], attrSK: item[attrSK]}
}

func str(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// cents renders an amount in cents as DynamoDB normalises a number: no
// trailing zeros after the point ("120.5", "99", "0.05").
func cents(c int64) string {
	s := strconv.FormatInt(c/100, 10)
	if f := c % 100; f != 0 {
		frac := strings.TrimRight(fmt.Sprintf("%02d", f), "0")
		s += "." + frac
	}
	return s
}

// numS returns a number value written as s.
func numS(s string) *types.AttributeValueMemberN { return &types.AttributeValueMemberN{Value: s} }

func intAttr(item pipeline.Item, name string) int64 {
	if n, ok := item[name].(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}

func strAttr(item pipeline.Item, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// zipf draws integers in [0, n) with weight 1/(k+1)^s; s = 0 is uniform.
// Unlike rand.Zipf it accepts any s >= 0.
type zipf struct {
	n   int
	cdf []float64 // nil when uniform
}

func newZipf(n int, s float64) zipf {
	z := zipf{n: n}
	if s <= 0 {
		return z
	}
	z.cdf = make([]float64, n)
	total := 0.0
	for k := range n {
		total += math.Pow(float64(k+1), -s)
		z.cdf[k] = total
	}
	for k := range z.cdf {
		z.cdf[k] /= total
	}
	return z
}

func (z zipf) pick(r *rand.Rand) int {
	if z.cdf == nil {
		return r.IntN(z.n)
	}
	return min(sort.SearchFloat64s(z.cdf, r.Float64()), z.n-1)
}

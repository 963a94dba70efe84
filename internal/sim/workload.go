package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// Workload describes a simulated table's traffic over the seed domains
// (item shapes as internal/seed documents and validates them):
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

// History is a simulated run: the records of the table's stream and the
// table they leave.
type History struct {
	Workload Workload // with defaults filled in
	Records  []Record
	Table    *Table // the items after the last record
	Ops      int    // operations applied, no-op writes included
}

// Run generates the workload and applies it through a Stream. With d =
// h.Workload (w with its defaults filled in), it gives the same records as
// Generate feeding NewStream(d.Shards, d.Start, d.Seed).Apply.
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

// Helpers shared by the domains (leaderboard.go, documents.go, retail.go).

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

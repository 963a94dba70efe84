package spec_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// seedSpec loads the stock spec, internal/seed/seed.yaml.
func seedSpec(t testing.TB) *spec.Spec {
	t.Helper()
	sp, err := spec.Parse("seed.yaml", seed.SpecYAML)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestSeedSpecIsTheSeedSet: the stock spec declares the Go seed set's
// projections, by name and entity types, in the same order.
func TestSeedSpecIsTheSeedSet(t *testing.T) {
	got := seedSpec(t).Projections()
	want := seed.All()
	if len(got) != len(want) {
		t.Fatalf("%d projections, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name() != want[i].Name() || !slices.Equal(got[i].EntityTypes(), want[i].EntityTypes()) {
			t.Errorf("projection %d: %s %v, want %s %v", i, got[i].Name(), got[i].EntityTypes(), want[i].Name(), want[i].EntityTypes())
		}
	}
	if _, err := seedSpec(t).Set(); err != nil {
		t.Fatal(err)
	}
}

// TestSeedSpecRecompute: over the demo's workload (the stock demo's seed
// and size), recomputing with the stock spec gives exactly the Go seed
// set's aggregates and rows.
func TestSeedSpecRecompute(t *testing.T) {
	h, err := sim.Workload{Seed: 1, Changes: 20000}.Run()
	if err != nil {
		t.Fatal(err)
	}
	items := h.Table.Items()
	want, err := projections.Recompute(items, "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := projections.Recompute(items, seedSpec(t).TypeAttribute(), seedSpec(t).Projections()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Aggregates) < 100 || len(want.Rows) < 10 {
		t.Fatalf("workload too thin to prove anything: %d aggregates, %d rows", len(want.Aggregates), len(want.Rows))
	}
	if d := projections.Diff(got, want); len(d) > 0 {
		if len(d) > 20 {
			d = append(d[:20], "...")
		}
		t.Fatalf("the spec's recomputation differs from the Go projections':\n%s", strings.Join(d, "\n"))
	}
	t.Logf("%d items: %d aggregates, %d rows agree", len(items), len(want.Aggregates), len(want.Rows))
}

// pair is a Go seed projection and its spec twin.
type pair struct{ goP, specP projections.Projection }

func pairs(t testing.TB) []pair {
	sp := seedSpec(t).Projections()
	var out []pair
	for i, p := range seed.All() {
		out = append(out, pair{p, sp[i]})
	}
	return out
}

// compare contributes item to both projections of pr: the spec twin fails
// exactly when the Go projection does, and otherwise contributes the same.
// It returns whether they failed.
func (pr pair) compare(t testing.TB, item pipeline.Item) (failed bool) {
	t.Helper()
	gc, gerr := pr.goP.Contribute(item)
	sc, serr := pr.specP.Contribute(item)
	switch {
	case (gerr == nil) != (serr == nil):
		t.Fatalf("%s on %s:\n  Go:   %v\n  spec: %v", pr.goP.Name(), pipeline.AppendItem(nil, item), gerr, serr)
	case serr != nil:
		var ie *projections.ItemError
		if !errors.As(serr, &ie) || ie.Projection != pr.goP.Name() {
			t.Fatalf("%s: spec error %v (%T) is not the projection's *projections.ItemError", pr.goP.Name(), serr, serr)
		}
		return true
	default:
		if g, s := render(gc), render(sc); g != s {
			t.Fatalf("%s on %s:\n  Go:\n%s\n  spec:\n%s", pr.goP.Name(), pipeline.AppendItem(nil, item), g, s)
		}
	}
	return false
}

// seedImages returns every image of the demo workload's history, by
// entity type.
var seedImages = sync.OnceValues(func() (map[string][]pipeline.Item, error) {
	h, err := sim.Workload{Seed: 1, Changes: 20000}.Run()
	if err != nil {
		return nil, err
	}
	out := map[string][]pipeline.Item{}
	for _, r := range h.Records {
		for _, img := range []pipeline.Item{r.New, r.Old} {
			if et, ok := img["EntityType"].(*types.AttributeValueMemberS); ok {
				out[et.Value] = append(out[et.Value], img)
			}
		}
	}
	return out, nil
})

// mutations are what TestSeedSpecAgreesOnItems does to one attribute: the
// faults an image can have, and values on both sides of every rule the
// seed projections apply.
var mutations = func() []func(types.AttributeValue) types.AttributeValue {
	set := func(v types.AttributeValue) func(types.AttributeValue) types.AttributeValue {
		return func(types.AttributeValue) types.AttributeValue { return v }
	}
	out := []func(types.AttributeValue) types.AttributeValue{
		set(nil), // delete
		set(null),
		set((*types.AttributeValueMemberS)(nil)),
		set((*types.AttributeValueMemberN)(nil)),
		set((*types.AttributeValueMemberM)(nil)),
		set(&types.AttributeValueMemberBOOL{Value: true}),
		set(&types.AttributeValueMemberM{}),
		set(&types.AttributeValueMemberSS{Value: []string{"WIN"}}),
		set(&types.UnknownUnionMember{Tag: "X"}),
		func(av types.AttributeValue) types.AttributeValue { // S ↔ N
			switch v := av.(type) {
			case *types.AttributeValueMemberS:
				if v != nil {
					return n(v.Value)
				}
			case *types.AttributeValueMemberN:
				if v != nil {
					return s(v.Value)
				}
			}
			return av
		},
		func(av types.AttributeValue) types.AttributeValue { // a '#' at the end
			if v, ok := av.(*types.AttributeValueMemberS); ok && v != nil {
				return s(v.Value + "#")
			}
			return av
		},
		func(av types.AttributeValue) types.AttributeValue { // one more segment
			if v, ok := av.(*types.AttributeValueMemberS); ok && v != nil {
				return s(v.Value + "#x")
			}
			return av
		},
		func(av types.AttributeValue) types.AttributeValue { // the first segment dropped
			if v, ok := av.(*types.AttributeValueMemberS); ok && v != nil {
				_, rest, _ := strings.Cut(v.Value, "#")
				return s(rest)
			}
			return av
		},
		func(av types.AttributeValue) types.AttributeValue { // the last segment emptied
			if v, ok := av.(*types.AttributeValueMemberS); ok && v != nil {
				if i := strings.LastIndexByte(v.Value, '#'); i >= 0 {
					return s(v.Value[:i+1])
				}
			}
			return av
		},
		func(av types.AttributeValue) types.AttributeValue { // lower case
			if v, ok := av.(*types.AttributeValueMemberS); ok && v != nil {
				return s(strings.ToLower(v.Value))
			}
			return av
		},
	}
	for _, v := range []string{"", "#", "x", "Match", "Player", "Document", "Comment", "Order", "CartItem", "User",
		"WIN", "LOSS", "DRAW", "PENDING", "PAID", "SHIPPED", "CANCELLED", "PROFILE", "2026-Q4", "a b", "\xff",
		"2026-11-30", "2026-02-30", "2024-02-29", "2023-02-29", "0000-02-29", "0000-01-01", "9999-12-31", "2026-1-30", "2026-11-30T00:00:00Z", "20261130", " 2026-11-30",
		"PLAYER#u1", "PLAYER#", "PLAYER#u1#x", "MATCH#t#m", "MATCH#t#", "MATCH##m", "WS#w", "DOC#d", "DOC#d#CMT#c", "DOC#d#CMT#", "USER#u", "ORDER#d#o", "ORDER#d", "CART#c", "ITEM#p", "ITEM#"} {
		out = append(out, set(s(v)))
	}
	for _, v := range []string{"0", "-0", "1", "-1", "2.5", "3.00", "1e3", "1E+2", "-5E-1", "9999999999", "9999999999.0", "10000000000", "1e10",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "1E-130", "1E+125", "1E+126",
		"12345678901234567890123456789012345678", "123456789012345678901234567890123456789", "abc", "", "1,5", "0x10", "NaN", "Infinity", ".5", "5."} {
		out = append(out, set(n(v)))
	}
	return out
}()

// readAttrs are the attributes the seed projections read, and two they
// do not.
var readAttrs = []string{"EntityType", "PK", "SK", "season", "result", "score", "handle", "rating", "status", "total", "orderDate", "quantity", "ttl", "version"}

// TestSeedSpecAgreesOnItems: for the demo workload's images, and for
// those images with each attribute the seed projections read (and two
// they do not) deleted, made NULL, given another type, or set to values on
// both sides of every rule, the stock spec fails exactly when the Go
// projection does, and otherwise contributes exactly the same.
func TestSeedSpecAgreesOnItems(t *testing.T) {
	images, err := seedImages()
	if err != nil {
		t.Fatal(err)
	}
	perType := 12
	if testing.Short() {
		perType = 3
	}
	var ok, failed int
	for _, pr := range pairs(t) {
		for _, et := range pr.goP.EntityTypes() {
			imgs := images[et]
			if len(imgs) < perType {
				t.Fatalf("the workload has %d %s images", len(imgs), et)
			}
			for _, img := range imgs {
				if pr.compare(t, img) {
					failed++
				} else {
					ok++
				}
			}
			// Mutants of images spread over the history.
			for k := range perType {
				base := imgs[k*len(imgs)/perType]
				for _, attr := range readAttrs {
					for _, m := range mutations {
						item := maps.Clone(base)
						if v := m(item[attr]); v == nil {
							delete(item, attr)
						} else {
							item[attr] = v
						}
						if pr.compare(t, item) {
							failed++
						} else {
							ok++
						}
					}
				}
			}
		}
		for _, item := range []pipeline.Item{nil, {}, {"EntityType": nil}} {
			if !pr.compare(t, item) {
				t.Fatalf("%s accepted %v", pr.goP.Name(), item)
			}
		}
	}
	t.Logf("%d items contributed alike, %d failed alike", ok, failed)
	if ok < 1000 || failed < 1000 {
		t.Fatalf("too few of each: %d contributed, %d failed", ok, failed)
	}
}

// FuzzSeedSpec is TestSeedSpecAgreesOnItems over fuzzed items: an image of
// the demo workload (which picks it) with attributes changed by ops, two
// bytes each: which attribute of readAttrs, and what it becomes (a
// mutation, or the fuzzed string as an S or an N). The stock spec fails
// exactly when the Go projection does, and otherwise contributes the same.
func FuzzSeedSpec(f *testing.F) {
	f.Add(uint16(0), []byte{}, "")
	f.Add(uint16(7), []byte{10, 200}, "2026-02-30")
	f.Add(uint16(3), []byte{6, 201, 3, 0}, "1E+10")
	f.Add(uint16(11), []byte{1, 200, 2, 200}, "PLAYER#u1#x")
	f.Fuzz(func(t *testing.T, which uint16, ops []byte, text string) {
		images, err := seedImages()
		if err != nil {
			t.Fatal(err)
		}
		prs := pairs(t)
		pr := prs[int(which)%len(prs)]
		imgs := images[pr.goP.EntityTypes()[int(which/5)%len(pr.goP.EntityTypes())]]
		item := maps.Clone(imgs[int(which)%len(imgs)])
		for i := 0; i+1 < len(ops); i += 2 {
			attr := readAttrs[int(ops[i])%len(readAttrs)]
			var v types.AttributeValue
			switch k := int(ops[i+1]); {
			case k == 200:
				v = s(text)
			case k == 201:
				v = n(text)
			default:
				v = mutations[k%len(mutations)](item[attr])
			}
			if v == nil {
				delete(item, attr)
			} else {
				item[attr] = v
			}
		}
		pr.compare(t, item)
	})
}

// TestSeedSpecConcurrent: a spec projection is safe for concurrent use
// (run with -race): goroutines contributing the same images at once get
// what one gets alone.
func TestSeedSpecConcurrent(t *testing.T) {
	images, err := seedImages()
	if err != nil {
		t.Fatal(err)
	}
	p := seedSpec(t).Projections()[3] // order-totals
	imgs := images["Order"][:300]
	want := make([]string, len(imgs))
	for i, img := range imgs {
		want[i] = render(mustContribute(t, p, img))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for i, img := range imgs {
				c, err := p.Contribute(img)
				if got := render(c); err != nil || got != want[i] {
					errs <- fmt.Sprintf("image %d: %v\n%s\nwant\n%s", i, err, got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSeedSpecMessages: the stock spec's errors for items that do not fit,
// as docs/projections-spec.md shows them; where the Go projection words
// its error the same, the messages are equal.
func TestSeedSpecMessages(t *testing.T) {
	order := pipeline.Item{"PK": s("USER#u42"), "SK": s("ORDER#2026-11-30#o1"), "EntityType": s("Order"),
		"status": s("PAID"), "total": n("120.50"), "orderDate": s("2026-11-30")}
	match := pipeline.Item{"PK": s("PLAYER#u1"), "SK": s("MATCH#t#m1"), "EntityType": s("Match"),
		"season": s("2026-Q2"), "result": s("WIN"), "score": n("3")}
	player := pipeline.Item{"PK": s("PLAYER#u1"), "SK": s("PROFILE"), "EntityType": s("Player"),
		"handle": s("h"), "rating": n("1842"), "season": s("2026-Q2")}
	cases := []struct {
		name     string
		p        int // index in seed.All()
		item     pipeline.Item
		want     string
		sameAsGo bool
	}{
		{"wrong type", 3, edit(order, "status", n("1")), "order-totals: item USER#u42/ORDER#2026-11-30#o1: status: want S, got N", true},
		{"missing", 3, edit(order, "total", nil), "order-totals: item USER#u42/ORDER#2026-11-30#o1: total: missing", true},
		{"unknown status", 3, edit(order, "status", s("LOST")), `order-totals: item USER#u42/ORDER#2026-11-30#o1: status: want PENDING, PAID, SHIPPED or CANCELLED, got "LOST"`, true},
		{"no such date", 3, edit(order, "orderDate", s("2026-02-30")), `order-totals: item USER#u42/ORDER#2026-11-30#o1: orderDate: want a date YYYY-MM-DD, got "2026-02-30" (parsing time "2026-02-30": day out of range)`, false},
		{"# in a key part", 0, edit(match, "season", s("2026#Q2")), `season-standings: item PLAYER#u1/MATCH#t#m1: season: "2026#Q2" contains '#'`, true},
		{"empty key segment", 1, edit(player, "PK", s("PLAYER#")), `season-leaderboard: item PLAYER#/PROFILE: PK: want PLAYER#<id>, got "PLAYER#"`, false},
		{"rating too large", 1, edit(player, "rating", n("1E+10")), `season-leaderboard: item PLAYER#u1/PROFILE: rating: want an integer from 0 to 9999999999, got 1E+10`, true},
	}
	prs := pairs(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prs[tc.p].specP.Contribute(tc.item)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n got %v\nwant %s", err, tc.want)
			}
			_, goErr := prs[tc.p].goP.Contribute(tc.item)
			if goErr == nil || (goErr.Error() == tc.want) != tc.sameAsGo {
				t.Errorf("the Go projection says %v", goErr)
			}
		})
	}
}

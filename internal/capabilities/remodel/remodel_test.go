package remodel_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

const streamARN = "arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-30T00:00:00.000"

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// change is a DynamoDB Streams change of one item: an insert without old,
// a removal without new.
func change(seq string, at time.Time, old, new pipeline.Item) pipeline.Change {
	c := pipeline.Change{Kind: pipeline.Modify, Old: old, New: new, Time: at.Truncate(time.Second), Precision: pipeline.Second,
		Position: pipeline.Position{Source: pipeline.SourceStreams, Stream: streamARN, SequenceNumber: seq}}
	img := new
	switch {
	case old == nil:
		c.Kind = pipeline.Insert
	case new == nil:
		c.Kind, img = pipeline.Remove, old
	}
	c.Keys = pipeline.Item{"PK": img["PK"], "SK": img["SK"]}
	c.OldType, c.NewType = str(old, "EntityType"), str(new, "EntityType")
	if v, ok := img["version"].(*types.AttributeValueMemberN); ok {
		c.Version, _ = strconv.ParseInt(v.Value, 10, 64)
		c.HasVersion = true
	}
	return c
}

// byEmail is a transform keyed by an attribute that does not identify
// its item: two users with one email collide.
func byEmail() *projections.Transform {
	return &projections.Transform{Name: "users-by-email", Version: "1", ByType: map[string]projections.TransformFunc{
		"User": func(it pipeline.Item) ([]pipeline.Item, error) {
			out := clone(it)
			out["PK"], out["SK"] = s("EMAIL#"+str(it, "email")), s("USER")
			out["userPK"] = it["PK"]
			return []pipeline.Item{out}, nil
		},
	}}
}

func user(id, email string) pipeline.Item {
	return pipeline.Item{"PK": s("USER#" + id), "SK": s("PROFILE"), "EntityType": s("User"), "email": s(email)}
}

// TestCollisionIsPermanentNamingBoth: two live source items the transform
// maps to one target key. The second's change fails as permanent, naming
// both source items and the target key; nothing of it is written, the
// first's target item stands, and a change of a third item in the same
// batch goes on.
func TestCollisionIsPermanentNamingBoth(t *testing.T) {
	ctx := context.Background()
	r := mustRemodel(t, byEmail())
	ts := openTarget(t, r)
	// Ten minutes after the changes: past the claim's wait.
	e := openEngine(t, r, ts, engine.Config{Logger: quiet(), Now: func() time.Time { return t0.Add(10 * time.Minute) }})
	a, b, c := user("a", "x@example.com"), user("b", "x@example.com"), user("c", "c@example.com")
	if err := e.HandleBatch(ctx, []pipeline.Change{change("100", t0, nil, a)}); err != nil {
		t.Fatal(err)
	}
	err := e.HandleBatch(ctx, []pipeline.Change{change("200", t0.Add(time.Second), nil, b), change("201", t0.Add(time.Second), nil, c)})
	var be *pipeline.BatchError
	if !errors.As(err, &be) || be.Index != 0 || !errors.Is(err, pipeline.ErrPermanent) {
		t.Fatalf("the colliding change: %v, want a permanent failure of the batch's first change", err)
	}
	for _, want := range []string{"transform users-by-email, target item PK=EMAIL#x@example.com SK=USER", "item PK=USER#b SK=PROFILE claims it", "item PK=USER#a SK=PROFILE holds it", "two live source items that the transform maps to one target key collide"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the failure does not say %q:\n%v", want, err)
		}
	}
	got := targetItems(t, ts)
	ka, _ := r.Key().Ref(r.Name(), pipeline.Item{"PK": s("EMAIL#x@example.com"), "SK": s("USER")})
	kc, _ := r.Key().Ref(r.Name(), pipeline.Item{"PK": s("EMAIL#c@example.com"), "SK": s("USER")})
	if len(got) != 2 || !strings.Contains(got[ka], `"userPK":{"S":"USER#a"}`) || got[kc] == "" {
		t.Fatalf("the target after the collision: %v, want a's item and c's", got)
	}
	// a moves away: b's change, redriven, now applies.
	a2 := clone(a)
	a2["email"] = s("a@example.com")
	if err := e.HandleBatch(ctx, []pipeline.Change{change("300", t0.Add(2*time.Second), a, a2)}); err != nil {
		t.Fatal(err)
	}
	if err := e.HandleBatch(ctx, []pipeline.Change{change("200", t0.Add(time.Second), nil, b)}); err != nil {
		t.Fatalf("b redriven once a left its key: %v", err)
	}
	sameTarget(t, "after the redrive", ts, expected(t, r, []pipeline.Item{a2, b, c}))
}

// TestTransientClaimIsRetried: a moves off a key on one shard while b
// moves onto it on another, and b's change arrives first. b's change
// fails as retryable (Lambda retries it), not as permanent; once a's
// change is applied, b's retry applies, and the target is the transform
// of the final items. Two changes of one batch so ordered are applied
// without a failure at all.
func TestTransientClaimIsRetried(t *testing.T) {
	ctx := context.Background()
	r := mustRemodel(t, byEmail())
	a, b := user("a", "x@example.com"), user("b", "y@example.com")
	a2, b2 := clone(a), clone(b)
	a2["email"], b2["email"] = s("z@example.com"), s("x@example.com")
	created := []pipeline.Change{change("100", t0, nil, a), change("101", t0, nil, b)}
	aMoves, bMoves := change("200", t0.Add(time.Second), a, a2), change("201", t0.Add(time.Second), b, b2)
	want := expected(t, r, []pipeline.Item{a2, b2})

	t.Run("across batches", func(t *testing.T) {
		ts := openTarget(t, r)
		e := openEngine(t, r, ts, engine.Config{Logger: quiet(), Now: func() time.Time { return t0.Add(3 * time.Second) }})
		if err := e.HandleBatch(ctx, created); err != nil {
			t.Fatal(err)
		}
		err := e.HandleBatch(ctx, []pipeline.Change{bMoves})
		if err == nil || errors.Is(err, pipeline.ErrPermanent) || !strings.Contains(err.Error(), "retried until") {
			t.Fatalf("b's change before a's: %v, want a retryable failure", err)
		}
		if err := e.HandleBatch(ctx, []pipeline.Change{aMoves}); err != nil {
			t.Fatal(err)
		}
		if err := e.HandleBatch(ctx, []pipeline.Change{bMoves}); err != nil {
			t.Fatalf("b's change retried after a's: %v", err)
		}
		sameTarget(t, "after the retry", ts, want)
	})
	t.Run("in one batch", func(t *testing.T) {
		ts := openTarget(t, r)
		e := openEngine(t, r, ts, engine.Config{Logger: quiet(), Now: func() time.Time { return t0.Add(3 * time.Second) }})
		if err := e.HandleBatch(ctx, created); err != nil {
			t.Fatal(err)
		}
		if err := e.HandleBatch(ctx, []pipeline.Change{bMoves, aMoves}); err != nil {
			t.Fatalf("b's move and a's in one batch: %v", err)
		}
		sameTarget(t, "one batch", ts, want)
	})
	t.Run("past the claim's wait", func(t *testing.T) {
		ts := openTarget(t, r)
		e := openEngine(t, r, ts, engine.Config{Logger: quiet(), Now: func() time.Time { return t0.Add(time.Hour) }})
		if err := e.HandleBatch(ctx, created); err != nil {
			t.Fatal(err)
		}
		if err := e.HandleBatch(ctx, []pipeline.Change{bMoves}); !errors.Is(err, pipeline.ErrPermanent) {
			t.Fatalf("b's change an hour on, a still on the key: %v, want a permanent failure", err)
		}
	})
}

// TestSameSecondSecondWins: two updates of one item within one second —
// which DynamoDB Streams' times cannot tell apart — end with the second,
// whether they arrive in one batch, one after the other, or the first
// again after the second (a replay); the first's target item, under
// another key, is removed. With a version attribute and without one: the
// stream's sequence numbers order them.
func TestSameSecondSecondWins(t *testing.T) {
	ctx := context.Background()
	r := mustRemodel(t, newDesign())
	for _, versioned := range []bool{true, false} {
		order := func(status string, version string) pipeline.Item {
			it := pipeline.Item{"PK": s("USER#u1"), "SK": s("ORDER#2026-11-30#o1"), "EntityType": s("Order"), "orderId": s("o1"), "status": s(status)}
			if versioned {
				it["version"] = n(version)
			}
			return it
		}
		pending, paid, shipped := order("PENDING", "1"), order("PAID", "2"), order("SHIPPED", "3")
		created := change("100", t0, nil, pending)
		pay := change("101", t0.Add(200*time.Millisecond), pending, paid)
		ship := change("102", t0.Add(700*time.Millisecond), paid, shipped)
		if pay.Time != ship.Time {
			t.Fatal("the two updates must share their Streams time")
		}
		want := expected(t, r, []pipeline.Item{shipped})
		for _, tt := range []struct {
			name    string
			batches [][]pipeline.Change
		}{
			{"one batch", [][]pipeline.Change{{created, pay, ship}}},
			{"one after the other", [][]pipeline.Change{{created}, {pay}, {ship}}},
			{"the first replayed after the second", [][]pipeline.Change{{created, pay, ship}, {pay}, {created, pay}}},
			{"the second before the first in one batch", [][]pipeline.Change{{created}, {ship, pay}}},
		} {
			t.Run(tt.name+", version "+strconv.FormatBool(versioned), func(t *testing.T) {
				ts := openTarget(t, r)
				e := openEngine(t, r, ts, engine.Config{Logger: quiet()})
				for _, batch := range tt.batches {
					if err := e.HandleBatch(ctx, batch); err != nil {
						t.Fatal(err)
					}
				}
				sameTarget(t, tt.name, ts, want)
			})
		}
	}
}

// TestRemovalRemovesEveryTargetItem: a removal removes every target item
// of the old image (a match makes two), and a late, older change of the
// item does not bring them back; a re-creation after it does.
func TestRemovalRemovesEveryTargetItem(t *testing.T) {
	ctx := context.Background()
	r := mustRemodel(t, newDesign())
	ts := openTarget(t, r)
	e := openEngine(t, r, ts, engine.Config{Logger: quiet()})
	m := pipeline.Item{"PK": s("PLAYER#p1"), "SK": s("MATCH#2026-11-30T10:00:00Z#m1"), "EntityType": s("Match"), "matchId": s("m1"), "result": s("WIN")}
	m2 := clone(m)
	m2["result"] = s("LOSS")
	if err := e.HandleBatch(ctx, []pipeline.Change{change("100", t0, nil, m), change("101", t0, m, m2)}); err != nil {
		t.Fatal(err)
	}
	if got := targetItems(t, ts); len(got) != 2 {
		t.Fatalf("a match makes two target items, got %v", got)
	}
	gone := change("200", t0.Add(time.Minute), m2, nil)
	gone.TTL = true
	if err := e.HandleBatch(ctx, []pipeline.Change{gone}); err != nil {
		t.Fatal(err)
	}
	sameTarget(t, "after the removal", ts, map[driver.RowRef]string{})
	if err := e.HandleBatch(ctx, []pipeline.Change{change("101", t0, m, m2)}); err != nil {
		t.Fatal(err)
	}
	sameTarget(t, "after a late, older change", ts, map[driver.RowRef]string{})
	if err := e.HandleBatch(ctx, []pipeline.Change{change("300", t0.Add(2*time.Minute), nil, m)}); err != nil {
		t.Fatal(err)
	}
	sameTarget(t, "after a re-creation", ts, expected(t, r, []pipeline.Item{m}))
}

// TestCopyOthers: a transform that copies the types it does not name
// copies them as they are (items without a type too); one that does not
// leaves them out of the target, quietly.
func TestCopyOthers(t *testing.T) {
	ctx := context.Background()
	items := []pipeline.Item{
		user("a", "a@example.com"),
		{"PK": s("CART#c1"), "SK": s("META"), "EntityType": s("Cart"), "n": n("1")},
		{"PK": s("CONFIG"), "SK": s("GLOBAL"), "flag": s("on")},
	}
	var batch []pipeline.Change
	for i, it := range items {
		batch = append(batch, change(strconv.Itoa(100+i), t0, nil, it))
	}
	for _, copyOthers := range []bool{true, false} {
		tr := byEmail()
		tr.CopyOthers = copyOthers
		r := mustRemodel(t, tr)
		ts := openTarget(t, r)
		e := openEngine(t, r, ts, engine.Config{Logger: quiet()})
		if err := e.HandleBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		want := expected(t, r, items)
		if n := len(want); (copyOthers && n != 3) || (!copyOthers && n != 1) {
			t.Fatalf("copy others %v: the transform of the items makes %d target items", copyOthers, n)
		}
		sameTarget(t, "copy others "+strconv.FormatBool(copyOthers), ts, want)
		if s := e.Stats(); !copyOthers && s.Unprojected != 2 {
			t.Errorf("copy others false: %d changes skipped, want the 2 of other types", s.Unprojected)
		}
	}
}

// TestTargetItemRefused: a target item DynamoDB would refuse (a key of
// the wrong type, an empty set) fails its source item's change as
// permanent, naming it, and its neighbours in the batch are applied.
func TestTargetItemRefused(t *testing.T) {
	ctx := context.Background()
	tr := byEmail()
	tr.ByType["Bad"] = func(it pipeline.Item) ([]pipeline.Item, error) {
		out := clone(it)
		switch str(it, "what") {
		case "key":
			out["PK"] = n("1")
		case "set":
			out["tags"] = &types.AttributeValueMemberSS{}
		}
		return []pipeline.Item{out}, nil
	}
	r := mustRemodel(t, tr)
	ts := openTarget(t, r)
	e := openEngine(t, r, ts, engine.Config{Logger: quiet()})
	for _, tt := range []struct{ what, want string }{
		{"key", `key attribute "PK" is an N, but the target table's is S`},
		{"set", `attribute "tags": an empty set`},
	} {
		bad := pipeline.Item{"PK": s("BAD#" + tt.what), "SK": s("1"), "EntityType": s("Bad"), "what": s(tt.what)}
		good := user(tt.what, tt.what+"@example.com")
		err := e.HandleBatch(ctx, []pipeline.Change{change("1", t0, nil, good), change("2", t0, nil, bad)})
		var be *pipeline.BatchError
		if !errors.As(err, &be) || be.Index != 1 || !errors.Is(err, pipeline.ErrPermanent) ||
			!strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "users-by-email: item BAD#"+tt.what+"/1: ") ||
			strings.Count(err.Error(), "users-by-email") != 1 {
			t.Errorf("%s: %v, want the second change failed as permanent, naming the transform once and the item, saying %q", tt.what, err, tt.want)
		}
	}
	if got := targetItems(t, ts); len(got) != 2 {
		t.Errorf("the good items beside the bad ones: %v", got)
	}
}

// staleReads is a target whose ledger reads of some keys return nothing,
// as an eventually consistent read may just after the entry is written.
type staleReads struct {
	*boltstore.TargetStore
	hide map[string]bool
}

func (s staleReads) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	got, err := s.TargetStore.ReadLedgers(ctx, keys)
	for k := range s.hide {
		delete(got, k)
	}
	return got, err
}

// TestStaleReadNeverTakesOver: a collision whose holder's ledger entry
// reads as absent (a stale read) is not taken for a claim left behind: the
// takeover is checked against the entry's revision in the same
// transaction, refused, and the holder's target item stands; read again,
// it is the collision it is.
func TestStaleReadNeverTakesOver(t *testing.T) {
	ctx := context.Background()
	r := mustRemodel(t, byEmail())
	ts := openTarget(t, r)
	a, b := user("a", "x@example.com"), user("b", "x@example.com")
	now := func() time.Time { return t0.Add(10 * time.Minute) }
	if err := openEngine(t, r, ts, engine.Config{Logger: quiet(), Now: now}).HandleBatch(ctx, []pipeline.Change{change("100", t0, nil, a)}); err != nil {
		t.Fatal(err)
	}
	holder := engine.LedgerKey(pipeline.Item{"PK": a["PK"], "SK": a["SK"]})
	stale := openEngine(t, r, staleReads{ts, map[string]bool{holder: true}}, engine.Config{Logger: quiet(), Now: now})
	err := stale.HandleBatch(ctx, []pipeline.Change{change("200", t0.Add(time.Second), nil, b)})
	if err == nil || !strings.Contains(err.Error(), "taking it over from item PK=USER#a SK=PROFILE was refused") || errors.Is(err, pipeline.ErrPermanent) {
		t.Fatalf("b's change on a stale read of a's entry: %v, want a retryable refusal", err)
	}
	sameTarget(t, "after the refused takeover", ts, expected(t, r, []pipeline.Item{a}))
	fresh := openEngine(t, r, ts, engine.Config{Logger: quiet(), Now: now})
	if err := fresh.HandleBatch(ctx, []pipeline.Change{change("200", t0.Add(time.Second), nil, b)}); !errors.Is(err, pipeline.ErrPermanent) {
		t.Fatalf("b's change read afresh: %v, want the collision's permanent failure", err)
	}
}

package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// attrs builds an item from name, value pairs: strings become S, values
// written as N:123 become N.
func attrs(kv ...string) pipeline.Item {
	it := pipeline.Item{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if n, ok := strings.CutPrefix(v, "N:"); ok {
			it[kv[i]] = &types.AttributeValueMemberN{Value: n}
		} else {
			it[kv[i]] = &types.AttributeValueMemberS{Value: v}
		}
	}
	return it
}

func order(user, id, status, total string, v int) pipeline.Item {
	return attrs("PK", "USER#"+user, "SK", "ORDER#2026-11-30#"+id, "EntityType", "Order", "status", status,
		"total", "N:"+total, "orderDate", "2026-11-30", "version", fmt.Sprintf("N:%d", v))
}

func player(id, season, rating string, v int) pipeline.Item {
	it := attrs("PK", "PLAYER#"+id, "SK", "PROFILE", "EntityType", "Player", "handle", "h-"+id, "rating", "N:"+rating, "version", fmt.Sprintf("N:%d", v))
	if season != "" {
		it["season"] = &types.AttributeValueMemberS{Value: season}
	}
	return it
}

func match(pl, id, season, result, score string, v int) pipeline.Item {
	return attrs("PK", "PLAYER#"+pl, "SK", "MATCH#2026-11-30T10:00:00Z#"+id, "EntityType", "Match", "season", season,
		"result", result, "score", "N:"+score, "version", fmt.Sprintf("N:%d", v))
}

func doc(ws, id string, v int) pipeline.Item {
	return attrs("PK", "WS#"+ws, "SK", "DOC#"+id, "EntityType", "Document", "title", "t", "version", fmt.Sprintf("N:%d", v))
}

func comment(ws, d, id string, v int) pipeline.Item {
	return attrs("PK", "WS#"+ws, "SK", "DOC#"+d+"#CMT#"+id, "EntityType", "Comment", "body", "b", "ttl", "N:1796000000", "version", fmt.Sprintf("N:%d", v))
}

func cartItem(cart, p, qty string, v int) pipeline.Item {
	return attrs("PK", "CART#"+cart, "SK", "ITEM#"+p, "EntityType", "CartItem", "quantity", "N:"+qty, "version", fmt.Sprintf("N:%d", v))
}

func with(it pipeline.Item, kv ...string) pipeline.Item {
	out := pipeline.Item{}
	for k, v := range it {
		out[k] = v
	}
	for k, v := range attrs(kv...) {
		out[k] = v
	}
	return out
}

// stream records writes to a simulated table and renders them as Lambda
// DynamoDB Streams events, keeping the table's final items.
type stream struct {
	seq   int64
	clock time.Time
	recs  []string
	items map[string]pipeline.Item
}

func newStream() *stream {
	return &stream{clock: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), items: map[string]pipeline.Item{}}
}

func keysOf(it pipeline.Item) pipeline.Item {
	return pipeline.Item{"PK": it["PK"], "SK": it["SK"]}
}

// write records old → new (either may be nil).
func (s *stream) write(old, new pipeline.Item) { s.record(old, new, false) }

// expire records a TTL removal.
func (s *stream) expire(old pipeline.Item) { s.record(old, nil, true) }

func (s *stream) record(old, new pipeline.Item, ttl bool) {
	s.seq += 100
	s.clock = s.clock.Add(1500 * time.Millisecond)
	img := new
	name := "MODIFY"
	switch {
	case old == nil:
		name = "INSERT"
	case new == nil:
		name, img = "REMOVE", old
	}
	key := pipeline.ItemKey(keysOf(img))
	if new == nil {
		delete(s.items, key)
	} else {
		s.items[key] = new
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"eventID":"e%d","eventName":%q,"eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1",`+
		`"eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000",`, s.seq, name)
	if ttl {
		b.WriteString(`"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},`)
	}
	fmt.Fprintf(&b, `"dynamodb":{"ApproximateCreationDateTime":%d,"Keys":%s`, s.clock.Unix(), pipeline.AppendItem(nil, keysOf(img)))
	if new != nil {
		fmt.Fprintf(&b, `,"NewImage":%s`, pipeline.AppendItem(nil, new))
	}
	if old != nil {
		fmt.Fprintf(&b, `,"OldImage":%s`, pipeline.AppendItem(nil, old))
	}
	fmt.Fprintf(&b, `,"SequenceNumber":"442158450000000001745%07d","SizeBytes":100,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`, s.seq)
	s.recs = append(s.recs, b.String())
}

func (s *stream) event() []byte { return []byte(`{"Records":[` + strings.Join(s.recs, ",") + `]}`) }

func (s *stream) finalItems() []pipeline.Item {
	out := make([]pipeline.Item, 0, len(s.items))
	for _, it := range s.items {
		out = append(out, it)
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEngine(st driver.Store) *engine.Engine {
	return engine.New(st, engine.Config{Logger: quiet(), Ignore: []string{"User", "Workspace", "Cart"}}, seed.All()...)
}

func process(t testing.TB, e *engine.Engine, event []byte) pipeline.Result {
	t.Helper()
	p := pipeline.NewStreamsProcessor(e, pipeline.Config{Logger: quiet()})
	res, err := p.Process(context.Background(), event)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustView(t testing.TB, r driver.Reader) *projections.View {
	t.Helper()
	v, err := projections.ReadView(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

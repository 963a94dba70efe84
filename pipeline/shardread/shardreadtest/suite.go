package shardreadtest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
)

// Stream is one empty stream made for a test, and how to change it.
type Stream interface {
	// Source reads the stream.
	Source() shardread.Source
	// Write makes version v of the item with partition key pk (sort key
	// "ITEM", entity type "Thing"): a change that lands in the stream.
	// Version 1 is an insert, later ones modify the item.
	Write(ctx context.Context, pk string, v int) error
	// Split splits the shard, if the stream can be resharded by hand.
	Split(ctx context.Context, shard string) error
}

// Harness makes streams for the suite.
type Harness struct {
	// New makes an empty stream with the given number of shards (a DynamoDB
	// stream has what it has).
	New func(t *testing.T, shards int) Stream
	// Split: the stream can be resharded (Kinesis). Without it the split
	// test is skipped.
	Split bool
	// TimeResolution is the resolution of the records' times: the suite
	// waits that long, and a little more, on either side of a time it cuts
	// a window at. Default 10 ms.
	TimeResolution time.Duration
}

// Run runs the conformance suite: what every Source must do for a Reader to
// read it exactly.
func Run(t *testing.T, h Harness) {
	if h.TimeResolution <= 0 {
		h.TimeResolution = 10 * time.Millisecond
	}
	t.Run("ReadAllInOrder", func(t *testing.T) { testReadAll(t, h) })
	t.Run("ResumeFromPositions", func(t *testing.T) { testResume(t, h) })
	t.Run("Window", func(t *testing.T) { testWindow(t, h) })
	t.Run("SplitLineage", func(t *testing.T) {
		if !h.Split {
			t.Skip("this stream cannot be resharded by hand")
		}
		testSplit(t, h)
	})
}

// Payload returns the JSON that DynamoDB's Kinesis streaming destination
// writes for version v of the suite's item pk, made at time at.
func Payload(pk string, v int, at time.Time) []byte {
	keys := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "ITEM"}}
	img := func(v int) pipeline.Item {
		return pipeline.Item{
			"PK": keys["PK"], "SK": keys["SK"],
			"EntityType": &types.AttributeValueMemberS{Value: "Thing"},
			"version":    &types.AttributeValueMemberN{Value: strconv.Itoa(v)},
		}
	}
	name := "INSERT"
	b := []byte(`{"awsRegion":"eu-west-1","eventID":"`)
	h := fnv.New64a()
	h.Write([]byte(pk))
	b = fmt.Appendf(b, "%08x-0000-4000-8000-%012x", v, h.Sum64()&0xffffffffffff)
	b = append(b, `","eventName":"`...)
	if v > 1 {
		name = "MODIFY"
	}
	b = append(b, name...)
	b = append(b, `","userIdentity":null,"recordFormat":"application/json","tableName":"app","dynamodb":{"ApproximateCreationDateTime":`...)
	b = strconv.AppendInt(b, at.UnixMilli(), 10)
	b = append(b, `,"Keys":`...)
	b = pipeline.AppendItem(b, keys)
	b = append(b, `,"NewImage":`...)
	b = pipeline.AppendItem(b, img(v))
	if v > 1 {
		b = append(b, `,"OldImage":`...)
		b = pipeline.AppendItem(b, img(v-1))
	}
	return append(b, `,"SizeBytes":100},"eventSource":"aws:dynamodb"}`...)
}

// got collects what a read hands over.
type got struct {
	mu   sync.Mutex
	recs []shardread.Record
	byPK map[string][]int
}

func (g *got) HandleRecords(_ context.Context, _ string, recs []shardread.Record) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byPK == nil {
		g.byPK = map[string][]int{}
	}
	for _, r := range recs {
		if r.Err != nil {
			return fmt.Errorf("record %s could not be decoded: %w", r.Seq, r.Err)
		}
		g.recs = append(g.recs, r)
		pk := r.Change.Keys["PK"].(*types.AttributeValueMemberS).Value
		g.byPK[pk] = append(g.byPK[pk], int(r.Change.Version))
	}
	return nil
}

// check fails unless every item's versions from..to arrived, each once, in
// order.
func (g *got) check(t *testing.T, want map[string][2]int) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for pk, r := range want {
		var exp []int
		for v := r[0]; v <= r[1]; v++ {
			exp = append(exp, v)
		}
		if !slices.Equal(g.byPK[pk], exp) {
			t.Errorf("item %s: versions read %v, want %v", pk, g.byPK[pk], exp)
		}
	}
	for pk := range g.byPK {
		if _, ok := want[pk]; !ok {
			t.Errorf("item %s read, want none of it", pk)
		}
	}
}

func quick() shardread.Config {
	return shardread.Config{Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, EmptyReads: 2, BatchSize: 7}
}

func write(t *testing.T, s Stream, pks []string, from, to int) {
	t.Helper()
	for v := from; v <= to; v++ {
		for _, pk := range pks {
			if err := s.Write(context.Background(), pk, v); err != nil {
				t.Fatalf("write %s v%d: %v", pk, v, err)
			}
		}
	}
}

func want(pks []string, from, to int) map[string][2]int {
	m := map[string][2]int{}
	for _, pk := range pks {
		m[pk] = [2]int{from, to}
	}
	return m
}

var items = []string{"ORDER#a", "ORDER#b", "ORDER#c", "ORDER#d", "ORDER#e", "ORDER#f"}

// testReadAll: from the trim horizon, every record once, each item's in
// order; the read ends caught up.
func testReadAll(t *testing.T, h Harness) {
	s := h.New(t, 2)
	write(t, s, items, 1, 4)
	g := &got{}
	r := shardread.NewReader(s.Source(), quick())
	stats, err := r.Run(context.Background(), nil, g)
	if err != nil {
		t.Fatal(err)
	}
	g.check(t, want(items, 1, 4))
	if stats.Records != int64(len(items)*4) || stats.ShardsCaughtUp == 0 {
		t.Errorf("stats %+v: want %d records and caught up", stats, len(items)*4)
	}
	for _, rec := range g.recs {
		if rec.Change.Position.Shard == "" || rec.Change.Position.SequenceNumber != rec.Seq || rec.Time.IsZero() {
			t.Fatalf("record %+v: want its shard, sequence number and time", rec)
		}
	}
}

// testResume: a read limited to some records stops with positions from
// which a second read gets exactly the rest; records written later are read
// by a third.
func testResume(t *testing.T, h Harness) {
	s := h.New(t, 2)
	write(t, s, items, 1, 3)
	g := &got{}
	var saved map[string]shardread.Position
	cfg := quick()
	cfg.MaxRecords = 5
	cfg.Checkpoint = func(_ context.Context, p map[string]shardread.Position) error { saved = p; return nil }
	stats, err := shardread.NewReader(s.Source(), cfg).Run(context.Background(), nil, g)
	if err != nil {
		t.Fatal(err)
	}
	if !stats.Limited || stats.Records != 5 || len(g.recs) != 5 {
		t.Fatalf("limited read: stats %+v, %d records handled; want 5", stats, len(g.recs))
	}
	cfg.MaxRecords = 0
	if _, err := shardread.NewReader(s.Source(), cfg).Run(context.Background(), saved, g); err != nil {
		t.Fatal(err)
	}
	g.check(t, want(items, 1, 3))

	write(t, s, items[:2], 4, 5)
	g2 := &got{}
	if _, err := shardread.NewReader(s.Source(), cfg).Run(context.Background(), saved, g2); err != nil {
		t.Fatal(err)
	}
	g2.check(t, want(items[:2], 4, 5))
}

// testWindow: a window from a time to a time reads what was written
// between them.
func testWindow(t *testing.T, h Harness) {
	s := h.New(t, 2)
	pause := h.TimeResolution + h.TimeResolution/2 + 20*time.Millisecond
	write(t, s, items, 1, 2)
	time.Sleep(pause)
	from := time.Now()
	time.Sleep(pause)
	write(t, s, items, 3, 4)
	time.Sleep(pause)
	until := time.Now()
	time.Sleep(pause)
	write(t, s, items, 5, 5)

	g := &got{}
	cfg := quick()
	cfg.Start = shardread.Start{Type: shardread.AtTimestamp, Time: from}
	cfg.Until = until
	stats, err := shardread.NewReader(s.Source(), cfg).Run(context.Background(), nil, g)
	if err != nil {
		t.Fatal(err)
	}
	g.check(t, want(items, 3, 4))
	if stats.AfterUntil == 0 {
		t.Errorf("stats %+v: want records left after the window", stats)
	}
}

// testSplit: a shard split while records are written; read in lineage
// order, every item's versions arrive in order, and a parent's reading ends
// before its children's starts.
func testSplit(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t, 1)
	write(t, s, items, 1, 3)
	shards, err := s.Source().Shards(ctx)
	if err != nil || len(shards) != 1 {
		t.Fatalf("shards %v, %v", shards, err)
	}
	parent := shards[0].ID
	// Read part of it, then split, then write more.
	g := &got{}
	var saved map[string]shardread.Position
	cfg := quick()
	cfg.MaxRecords = 4
	cfg.Checkpoint = func(_ context.Context, p map[string]shardread.Position) error { saved = p; return nil }
	if _, err := shardread.NewReader(s.Source(), cfg).Run(ctx, nil, g); err != nil {
		t.Fatal(err)
	}
	if err := s.Split(ctx, parent); err != nil {
		t.Fatal(err)
	}
	write(t, s, items, 4, 6)

	shards, err = s.Source().Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, sh := range shards {
		switch {
		case sh.ID == parent && !sh.Closed():
			t.Errorf("parent %s still open after the split: %+v", parent, sh)
		case slices.Contains(sh.Parents, parent):
			children = append(children, sh.ID)
		}
	}
	if len(children) != 2 {
		t.Fatalf("children of %s: %v; want 2 (listing %+v)", parent, children, shards)
	}

	var (
		mu     sync.Mutex
		events []shardread.Event
	)
	cfg.MaxRecords = 0
	cfg.Trace = func(ev shardread.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }
	if _, err := shardread.NewReader(s.Source(), cfg).Run(ctx, saved, g); err != nil {
		t.Fatal(err)
	}
	// A source may deliver a parent's records again in its children (moto
	// moves them there on a split), which the engine takes as duplicates.
	// What must hold: each version is first met after every lower one.
	g.mu.Lock()
	for pk, vs := range g.byPK {
		var first []int
		for _, v := range vs {
			if !slices.Contains(first, v) {
				first = append(first, v)
			}
		}
		g.byPK[pk] = first
	}
	g.mu.Unlock()
	g.check(t, want(items, 1, 6))
	parentDone := -1
	for i, ev := range events {
		if ev.Shard == parent && ev.Kind == "done" {
			parentDone = i
		}
	}
	if parentDone < 0 {
		t.Fatalf("parent %s never finished: %v", parent, events)
	}
	for i, ev := range events {
		if slices.Contains(children, ev.Shard) && ev.Kind == "start" && i < parentDone {
			t.Errorf("child %s started (event %d) before its parent finished (event %d): %v", ev.Shard, i, parentDone, events)
		}
	}
}

// ErrNoSplit is what Stream.Split returns for a stream that cannot be
// resharded by hand.
var ErrNoSplit = errors.New("shardreadtest: this stream cannot be split")

// MemStream is Mem as a Stream for Run.
type MemStream struct{ *Mem }

// Source returns the Mem.
func (m MemStream) Source() shardread.Source { return m.Mem }

// Write puts the item's version-v payload, partition key pk.
func (m MemStream) Write(_ context.Context, pk string, v int) error {
	m.Put(pk, Payload(pk, v, m.now()))
	return nil
}

// Split splits the shard.
func (m MemStream) Split(_ context.Context, shard string) error { return m.Mem.Split(shard) }

package shardread_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
	"github.com/tributary/tributary/pipeline/shardread/shardreadtest"
)

func TestMemConformance(t *testing.T) {
	for _, streams := range []bool{false, true} {
		t.Run(fmt.Sprintf("streams=%v", streams), func(t *testing.T) {
			shardreadtest.Run(t, shardreadtest.Harness{
				New: func(t *testing.T, n int) shardreadtest.Stream {
					m := shardreadtest.NewMem("mem", n)
					m.Streams = streams
					return shardreadtest.MemStream{Mem: m}
				},
				Split: true,
			})
		})
	}
}

// collector records what a read hands over, per item.
type collector struct {
	mu     sync.Mutex
	n      int
	byPK   map[string][]int64
	shards []string // shard of each batch, in handling order
	hook   func(n int) error
}

func (c *collector) HandleRecords(_ context.Context, shard string, recs []shardread.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPK == nil {
		c.byPK = map[string][]int64{}
	}
	c.shards = append(c.shards, shard)
	for _, r := range recs {
		if r.Err != nil {
			return r.Err
		}
		pk := r.Change.Keys["PK"].(*types.AttributeValueMemberS).Value
		c.byPK[pk] = append(c.byPK[pk], r.Change.Version)
		c.n++
	}
	if c.hook != nil {
		return c.hook(c.n)
	}
	return nil
}

func (c *collector) versions(pk string) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.byPK[pk])
}

func put(m *shardreadtest.Mem, pks []string, from, to int) {
	for v := from; v <= to; v++ {
		for _, pk := range pks {
			m.Put(pk, shardreadtest.Payload(pk, v, time.Now()))
		}
	}
}

func seq(from, to int) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, int64(v))
	}
	return out
}

var pks = []string{"P#1", "P#2", "P#3", "P#4", "P#5", "P#6", "P#7", "P#8"}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func fast() shardread.Config {
	return shardread.Config{BatchSize: 5, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Logger: quiet()}
}

func checkAll(t *testing.T, c *collector, from, to int) {
	t.Helper()
	for _, pk := range pks {
		if got, want := c.versions(pk), seq(from, to); !slices.Equal(got, want) {
			t.Errorf("%s: got versions %v, want %v", pk, got, want)
		}
	}
}

// TestLineageAcrossSplitsAndMerges reads a stream resharded twice before the
// read: every child is read after its parents, so each item's versions
// arrive in order even though they moved between shards.
func TestLineageAcrossSplitsAndMerges(t *testing.T) {
	m := shardreadtest.NewMem("s", 2)
	put(m, pks, 1, 3)
	if err := m.Split("shardId-000000000000"); err != nil {
		t.Fatal(err)
	}
	put(m, pks, 4, 6)
	// Merge the two children of the split back into one.
	if err := m.Merge("shardId-000000000002", "shardId-000000000003"); err != nil {
		t.Fatal(err)
	}
	put(m, pks, 7, 9)
	if err := m.Split("shardId-000000000001"); err != nil {
		t.Fatal(err)
	}
	put(m, pks, 10, 12)

	var (
		mu     sync.Mutex
		events []shardread.Event
	)
	cfg := fast()
	cfg.Concurrency = 8
	cfg.Trace = func(ev shardread.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }
	c := &collector{}
	stats, err := shardread.NewReader(m, cfg).Run(context.Background(), nil, c)
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, c, 1, 12)
	shards, _ := m.Shards(context.Background())
	if stats.Shards != len(shards) || stats.ShardsDone != 4 || stats.ShardsCaughtUp != 3 {
		t.Errorf("stats %+v: want %d shards, 4 done (closed), 3 caught up", stats, len(shards))
	}
	// No shard starts before each of its parents is done.
	done := map[string]int{}
	for i, ev := range events {
		if ev.Kind == "done" {
			done[ev.Shard] = i
		}
	}
	for i, ev := range events {
		if ev.Kind != "start" {
			continue
		}
		for _, sh := range shards {
			if sh.ID != ev.Shard {
				continue
			}
			for _, p := range sh.Parents {
				if d, ok := done[p]; !ok || d > i {
					t.Errorf("%s started at event %d before parent %s was done (%v)", sh.ID, i, p, events)
				}
			}
		}
	}
}

// TestReshardingDuringRead splits a shard while the read is under way: the
// reader finishes the parent and goes on into the children it did not know
// when it started.
func TestReshardingDuringRead(t *testing.T) {
	m := shardreadtest.NewMem("s", 1)
	put(m, pks, 1, 4)
	c := &collector{}
	var once sync.Once
	c.hook = func(n int) error {
		once.Do(func() {
			if err := m.Split("shardId-000000000000"); err != nil {
				panic(err)
			}
			put(m, pks, 5, 8)
		})
		return nil
	}
	stats, err := shardread.NewReader(m, fast()).Run(context.Background(), nil, c)
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, c, 1, 8)
	if stats.Shards != 3 || stats.ShardsDone != 1 || stats.Lists < 2 {
		t.Errorf("stats %+v: want 3 shards listed, the parent done, several listings", stats)
	}
}

// TestSplitAfterCaughtUp: the only shard catches up, then is split before
// the read ends; the final listing finds it closed and its children.
func TestSplitAfterCaughtUp(t *testing.T) {
	m := shardreadtest.NewMem("s", 1)
	put(m, pks, 1, 2)
	var listings atomic.Int32
	m.Fault = func(op, shard string) error {
		if op == "shards" && listings.Add(1) == 2 {
			// Between the first listing and the last one.
			if err := m.Split("shardId-000000000000"); err != nil {
				return err
			}
			put(m, pks, 3, 3)
		}
		return nil
	}
	c := &collector{}
	if _, err := shardread.NewReader(m, fast()).Run(context.Background(), nil, c); err != nil {
		t.Fatal(err)
	}
	checkAll(t, c, 1, 3)
}

// TestThrottlingBacksOffWithJitter: throttled reads, iterators and listings
// are waited out with exponential backoff and jitter, then succeed.
func TestThrottlingBacksOffWithJitter(t *testing.T) {
	m := shardreadtest.NewMem("s", 2)
	put(m, pks, 1, 5)
	var calls atomic.Int32
	m.Fault = func(op, shard string) error {
		if n := calls.Add(1); n <= 6 || n%4 == 0 {
			return fmt.Errorf("%s %s: %w", op, shard, shardread.ErrThrottled)
		}
		return nil
	}
	cfg := fast()
	cfg.Backoff, cfg.MaxBackoff = 100*time.Millisecond, 400*time.Millisecond
	waits := recordSleeps(&cfg)
	c := &collector{}
	stats, err := shardread.NewReader(m, cfg).Run(context.Background(), nil, c)
	if err != nil {
		t.Fatal(err)
	}
	sleeps := waits.all()
	checkAll(t, c, 1, 5)
	if stats.Throttles < 6 || int(stats.Throttles) != len(sleeps) {
		t.Errorf("throttles %d, sleeps %d: want at least 6, one sleep each", stats.Throttles, len(sleeps))
	}
	// The first six calls are throttled in a row: ceilings of 100, 200, 400,
	// 400 ms..., each wait with equal jitter in [ceiling/2, ceiling].
	for i, c := range []time.Duration{100, 200, 400, 400, 400, 400} {
		if c *= time.Millisecond; sleeps[i] < c/2 || sleeps[i] > c {
			t.Errorf("sleep %d = %v, want in [%v, %v] (all: %v)", i, sleeps[i], c/2, c, sleeps)
		}
	}
	for _, d := range sleeps {
		if d < 50*time.Millisecond || d > 400*time.Millisecond {
			t.Errorf("sleep %v outside [backoff/2, max]", d)
		}
	}
}

func TestThrottlingGivesUpAfterMaxThrottles(t *testing.T) {
	m := shardreadtest.NewMem("s", 1)
	put(m, pks, 1, 1)
	m.Fault = func(op, _ string) error {
		if op == "read" {
			return shardread.ErrThrottled
		}
		return nil
	}
	cfg := fast()
	cfg.MaxThrottles = 5
	_, err := shardread.NewReader(m, cfg).Run(context.Background(), nil, &collector{})
	if !errors.Is(err, shardread.ErrThrottled) {
		t.Fatalf("err = %v, want throttled", err)
	}
}

// TestExpiredIterators: iterators that expire between reads are renewed
// after the last record read: nothing lost, nothing read twice.
func TestExpiredIterators(t *testing.T) {
	m := shardreadtest.NewMem("s", 2)
	put(m, pks, 1, 6)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	m.Now = func() time.Time { return time.Unix(0, now.Load()) }
	m.IteratorTTL = 5 * time.Minute
	c := &collector{}
	c.hook = func(int) error {
		now.Add(int64(6 * time.Minute)) // handling takes longer than an iterator lives
		return nil
	}
	stats, err := shardread.NewReader(m, fast()).Run(context.Background(), nil, c)
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, c, 1, 6)
	if stats.ExpiredIterators == 0 {
		t.Errorf("stats %+v: no iterator expired", stats)
	}
}

// TestInterruptedReadResumes cancels a read in the middle; a second read
// from the saved positions gets exactly what the first did not handle.
func TestInterruptedReadResumes(t *testing.T) {
	m := shardreadtest.NewMem("s", 3)
	put(m, pks, 1, 10)
	ctx, cancel := context.WithCancel(context.Background())
	var saved map[string]shardread.Position
	cfg := fast()
	cfg.Checkpoint = func(_ context.Context, p map[string]shardread.Position) error { saved = p; return nil }
	c := &collector{}
	c.hook = func(n int) error {
		if n >= 20 {
			cancel()
		}
		return nil
	}
	_, err := shardread.NewReader(m, cfg).Run(ctx, nil, c)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	first := c.n
	if first >= 80 {
		t.Fatalf("the first read handled everything (%d)", first)
	}
	c.hook = nil
	if _, err := shardread.NewReader(m, cfg).Run(context.Background(), saved, c); err != nil {
		t.Fatal(err)
	}
	checkAll(t, c, 1, 10)
}

// TestHandlerPartialFailure: a handler that applies part of a batch and
// fails stops the read with the position just before the failure.
func TestHandlerPartialFailure(t *testing.T) {
	m := shardreadtest.NewMem("s", 1)
	put(m, pks[:1], 1, 10)
	var saved map[string]shardread.Position
	cfg := fast()
	cfg.Checkpoint = func(_ context.Context, p map[string]shardread.Position) error { saved = p; return nil }
	boom := errors.New("store unavailable")
	var applied []int64
	h := shardread.HandlerFunc(func(_ context.Context, _ string, recs []shardread.Record) error {
		for i, r := range recs {
			if r.Change.Version == 7 {
				return &pipeline.BatchError{Index: i, Err: boom}
			}
			applied = append(applied, r.Change.Version)
		}
		return nil
	})
	_, err := shardread.NewReader(m, cfg).Run(context.Background(), nil, h)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	c := &collector{}
	if _, err := shardread.NewReader(m, cfg).Run(context.Background(), saved, c); err != nil {
		t.Fatal(err)
	}
	if got := c.versions(pks[0]); !slices.Equal(applied, seq(1, 6)) || !slices.Equal(got, seq(7, 10)) {
		t.Errorf("applied %v then %v; want 1..6 then 7..10", applied, got)
	}
}

// TestStartPositions: a hand-given position starts its shard there and
// goes on into its children; its ancestors, and the shards that are
// neither, are not read.
func TestStartPositions(t *testing.T) {
	m := shardreadtest.NewMem("s", 2)
	put(m, pks, 1, 2)
	if err := m.Split("shardId-000000000000"); err != nil { // children 2 and 3
		t.Fatal(err)
	}
	put(m, pks, 3, 6)
	if err := m.Split("shardId-000000000002"); err != nil { // children 4 and 5
		t.Fatal(err)
	}
	put(m, pks, 7, 8)
	// Start at the first record of version 5 in shard 2.
	ctx := context.Background()
	it, _ := m.Iterator(ctx, "shardId-000000000002", shardread.Start{Type: shardread.TrimHorizon})
	page, _ := m.Read(ctx, "shardId-000000000002", it, 100)
	var at string
	var inShard []string
	for _, r := range page.Records {
		pk := r.Change.Keys["PK"].(*types.AttributeValueMemberS).Value
		if r.Change.Version == 5 && at == "" {
			at = r.Seq
		}
		if !slices.Contains(inShard, pk) {
			inShard = append(inShard, pk)
		}
	}
	spec, err := shardread.ParseStart("shardId-000000000002:" + at)
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string]shardread.Position
	cfg := fast()
	cfg.At = spec.At
	cfg.Checkpoint = func(_ context.Context, p map[string]shardread.Position) error { saved = p; return nil }
	c := &collector{}
	if _, err := shardread.NewReader(m, cfg).Run(ctx, nil, c); err != nil {
		t.Fatal(err)
	}
	for _, pk := range pks {
		got := c.versions(pk)
		switch {
		case slices.Contains(inShard, pk):
			if first := got[0]; first != 5 && first != 6 || got[len(got)-1] != 8 {
				t.Errorf("%s (in the positioned shard): versions %v, want from 5 (or 6) to 8", pk, got)
			}
		case len(got) > 0:
			t.Errorf("%s, in a shard outside the position's lineage: read %v", pk, got)
		}
	}
	for _, id := range []string{"shardId-000000000000", "shardId-000000000001", "shardId-000000000003"} {
		if p := saved[id]; !p.Skipped || !p.Done {
			t.Errorf("%s: %+v, want skipped", id, p)
		}
	}
	// A shard made later from a skipped one is skipped too.
	if err := m.Split("shardId-000000000001"); err != nil {
		t.Fatal(err)
	}
	put(m, pks, 9, 9)
	c2 := &collector{}
	if _, err := shardread.NewReader(m, fast()).Run(ctx, saved, c2); err != nil {
		t.Fatal(err)
	}
	for _, pk := range pks {
		if got := c2.versions(pk); slices.Contains(inShard, pk) != (len(got) == 1) {
			t.Errorf("%s after a split of a skipped shard: read %v", pk, got)
		}
	}
	if _, err := shardread.NewReader(m, shardread.Config{At: map[string]string{"shardId-9": "1"}, Logger: quiet()}).Run(ctx, nil, c); err == nil {
		t.Error("a position in a shard the stream lacks: no error")
	}
}

// TestExpiredShard: a shard that vanishes between listing and reading is
// taken as finished, with a warning, and its children are read.
func TestExpiredShard(t *testing.T) {
	m := shardreadtest.NewMem("s", 1)
	put(m, pks, 1, 1)
	m.Fault = func(op, shard string) error {
		if op == "iterator" && shard == "shardId-000000000000" {
			return shardread.ErrShardNotFound
		}
		return nil
	}
	stats, err := shardread.NewReader(m, fast()).Run(context.Background(), nil, &collector{})
	if err != nil || stats.ShardsExpired != 1 {
		t.Fatalf("stats %+v, err %v", stats, err)
	}
}

func TestUntilMarksShardsDone(t *testing.T) {
	m := shardreadtest.NewMem("s", 2)
	// The records' arrival times come from m's clock: versions 1 and 2
	// arrive before until, 3 and 4 after it.
	clock := time.Now()
	m.Now = func() time.Time { return clock }
	put(m, pks, 1, 2)
	clock = clock.Add(5 * time.Millisecond)
	until := clock
	clock = clock.Add(5 * time.Millisecond)
	put(m, pks, 3, 4)
	var saved map[string]shardread.Position
	cfg := fast()
	cfg.Until = until
	cfg.Checkpoint = func(_ context.Context, p map[string]shardread.Position) error { saved = p; return nil }
	c := &collector{}
	stats, err := shardread.NewReader(m, cfg).Run(context.Background(), nil, c)
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, c, 1, 2)
	for id, p := range saved {
		if !p.Done {
			t.Errorf("shard %s not done after the window: %+v", id, p)
		}
	}
	if stats.ShardsDone != 2 || stats.AfterUntil == 0 {
		t.Errorf("stats %+v", stats)
	}
	// A second run of the same window has nothing left to do.
	c2 := &collector{}
	if _, err := shardread.NewReader(m, cfg).Run(context.Background(), saved, c2); err != nil || c2.n != 0 {
		t.Errorf("second run: %d records, %v", c2.n, err)
	}
}

func TestParseStart(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "", want: "TRIM_HORIZON"},
		{in: "trim_horizon", want: "TRIM_HORIZON"},
		{in: "2026-11-30T10:00:00Z", want: "2026-11-30T10:00:00Z"},
		{in: "2026-11-30T11:00:00.5+01:00", want: "2026-11-30T10:00:00.5Z"},
		{in: "shardId-000000000002:49590338271490256608559692538361571095921575989136588898,shardId-000000000001:1", want: "shardId-000000000001:1,shardId-000000000002:49590338271490256608559692538361571095921575989136588898"},
		{in: "LATEST", bad: true},
		{in: "2026-11-30T10:00", bad: true},
		{in: "yesterday", bad: true},
		{in: "shardId-1:12x", bad: true},
		{in: "shardId-1:", bad: true},
		{in: "shardId-1:1,shardId-1:2", bad: true},
	}
	for _, tt := range tests {
		spec, err := shardread.ParseStart(tt.in)
		switch {
		case tt.bad && err == nil:
			t.Errorf("ParseStart(%q) = %v, want an error", tt.in, spec)
		case !tt.bad && err != nil:
			t.Errorf("ParseStart(%q): %v", tt.in, err)
		case !tt.bad && spec.String() != tt.want:
			t.Errorf("ParseStart(%q) = %s, want %s", tt.in, spec, tt.want)
		}
	}
}

// coarseLag reports every read as 0 ms behind the tip, as a server does
// when the records after a page arrived within the same millisecond (moto
// truncates to milliseconds).
type coarseLag struct{ *shardreadtest.Mem }

func (c coarseLag) Read(ctx context.Context, shard, it string, limit int) (shardread.Page, error) {
	p, err := c.Mem.Read(ctx, shard, it, limit)
	p.Behind = 0
	return p, err
}

// TestFullPageIsNotCaughtUp: a full page "0 ms behind" may have more after
// it; the shard is caught up only at a page that is not full.
func TestFullPageIsNotCaughtUp(t *testing.T) {
	m := shardreadtest.NewMem("s", 1)
	put(m, pks, 1, 5)
	c := &collector{}
	if _, err := shardread.NewReader(coarseLag{m}, fast()).Run(context.Background(), nil, c); err != nil {
		t.Fatal(err)
	}
	checkAll(t, c, 1, 5)
}

// sleeps records the waits of a Reader, which returns from each at once.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

// recordSleeps makes cfg's Sleep record its waits.
func recordSleeps(cfg *shardread.Config) *sleeps {
	s := &sleeps{}
	cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		s.d = append(s.d, d)
		s.mu.Unlock()
		return ctx.Err()
	}
	return s
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.d)
}

// paced is a Mem stream with read limits of its own.
type paced struct {
	*shardreadtest.Mem
	pacing shardread.Pacing
}

func (p paced) Pacing() shardread.Pacing { return p.pacing }

// TestSourcePacing: a PacedSource's Pacing is the default of
// MinReadInterval and EmptyReadDelay; the Config's own values win, and a
// negative one turns the wait off.
func TestSourcePacing(t *testing.T) {
	const interval, delay = 200 * time.Millisecond, 250 * time.Millisecond
	tests := []struct {
		name                  string
		pacing                shardread.Pacing
		minInterval, empty    time.Duration // the Config's
		wantInterval, wantGap bool          // waits seen: between reads, after empty reads
		wantLongest           time.Duration
	}{
		{"the source's interval", shardread.Pacing{MinReadInterval: interval}, 0, 0, true, false, interval},
		{"the source's empty-read delay", shardread.Pacing{EmptyReadDelay: delay}, 0, 0, false, true, delay},
		{"the config's values win", shardread.Pacing{MinReadInterval: time.Hour, EmptyReadDelay: time.Hour}, interval, delay, true, true, delay},
		{"negative turns them off", shardread.Pacing{MinReadInterval: time.Hour, EmptyReadDelay: time.Hour}, -1, -1, false, false, 0},
		{"a source without pacing", shardread.Pacing{}, 0, 0, false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := shardreadtest.NewMem("s", 1)
			m.Streams = true // the tip is three empty reads in a row
			put(m, pks, 1, 12)
			var src shardread.Source = m
			if tt.pacing != (shardread.Pacing{}) {
				src = paced{m, tt.pacing}
			}
			cfg := fast()
			cfg.MinReadInterval, cfg.EmptyReadDelay = tt.minInterval, tt.empty
			slept := recordSleeps(&cfg)
			c := &collector{}
			if _, err := shardread.NewReader(src, cfg).Run(context.Background(), nil, c); err != nil {
				t.Fatal(err)
			}
			waits := slept.all()
			checkAll(t, c, 1, 12)
			var sawInterval, sawGap bool
			longest := time.Duration(0)
			for _, d := range waits {
				longest = max(longest, d)
				switch {
				case d == delay:
					sawGap = true
				case d > 0 && d <= interval:
					sawInterval = true
				}
			}
			// An interval's wait is what is left of it since the last read.
			if sawInterval != tt.wantInterval || sawGap != tt.wantGap || longest > tt.wantLongest || longest < tt.wantLongest*3/4 {
				t.Errorf("waits %v: between reads %v, after empty reads %v, longest %v; want %v, %v, %v",
					waits, sawInterval, sawGap, longest, tt.wantInterval, tt.wantGap, tt.wantLongest)
			}
		})
	}
}

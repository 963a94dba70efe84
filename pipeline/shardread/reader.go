package shardread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/internal/retry"
	"github.com/tributary/tributary/pipeline"
)

// handler handles the records a Reader reads.
type handler interface {
	// HandleRecords handles a batch of one shard's records, in shard order.
	// It returns nil when every record is handled durably; a
	// *pipeline.BatchError when the records before its Index are and the
	// rest are not; any other error when none is claimed. Any error stops
	// the read, with the positions of what was handled saved. Batches of
	// different shards may be handled concurrently.
	HandleRecords(ctx context.Context, shard string, records []Record) error
}

// HandlerFunc adapts a function to a handler.
type HandlerFunc func(ctx context.Context, shard string, records []Record) error

// HandleRecords calls f.
func (f HandlerFunc) HandleRecords(ctx context.Context, shard string, records []Record) error {
	return f(ctx, shard, records)
}

// Config configures a Reader. The zero value reads every shard from the trim
// horizon until it has caught up.
type Config struct {
	// Start is where shards without a position start. Default TrimHorizon.
	Start Start
	// At gives shards their own starting sequence number (inclusive), for
	// shards without a position; their descendants are read from their
	// start, and no other shard is read (StartSpec).
	At map[string]string
	// Until ends the window: a shard is done at its first record whose time
	// is after Until. Zero: read until caught up with the stream's tip.
	Until time.Time
	// BatchSize is the most records asked for per read. Default 1000 (the
	// most DynamoDB Streams returns; Kinesis allows 10,000).
	BatchSize int
	// Concurrency is how many shards are read at once. Default 4.
	Concurrency int
	// MaxRecords stops the read once that many records have been handled
	// (Stats.Limited). 0: no limit.
	MaxRecords int64
	// EmptyReads is how many reads in a row that return nothing make an open
	// shard count as caught up, when the source does not say how far behind
	// the tip a read is (DynamoDB Streams). Default 3.
	EmptyReads int
	// MinReadInterval is the least time between two reads of one shard, and
	// EmptyReadDelay a wait after a read that returned nothing (see Pacing).
	// Defaults: the source's Pacing when it is a PacedSource, else none; a
	// negative value: none.
	MinReadInterval, EmptyReadDelay time.Duration
	// Backoff is the ceiling of the first wait after a throttled call; it
	// doubles on each throttled call in a row, up to MaxBackoff, and each
	// wait is drawn with equal jitter under it (in [c/2, c]: calls throttled
	// together spread out, none comes back sooner than half the ceiling).
	// Defaults 100 ms and 5 s.
	Backoff, MaxBackoff time.Duration
	// MaxThrottles gives up after that many throttled calls in a row. 0:
	// never give up (the context still ends the read).
	MaxThrottles int
	// Checkpoint, if set, is called after each batch is handled (and when a
	// shard is finished) with a copy of every shard's position. Calls are
	// serialised. An error stops the read.
	Checkpoint func(ctx context.Context, positions map[string]Position) error
	// Logger receives warnings (an expired shard); nil: slog.Default().
	Logger *slog.Logger
	// Now and Sleep are the clock and the wait, for tests. Sleep must end
	// with ctx.Err() when ctx ends (the default, retry.Sleep, does).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Trace, if set, is told when a shard's reading starts and ends.
	Trace func(ev Event)
}

// Event is a moment in a shard's reading, for Config.Trace.
type Event struct {
	Shard string
	// Kind is "start", "done" (finished), "caught-up" or "stopped".
	Kind string
}

func (c Config) withDefaults() Config {
	if c.Start.Type == 0 {
		c.Start.Type = TrimHorizon
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.EmptyReads <= 0 {
		c.EmptyReads = 3
	}
	if c.Backoff <= 0 {
		c.Backoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = retry.Sleep
	}
	return c
}

// Stats count what a read did.
type Stats struct {
	// Records were read inside the window and handed to the handler.
	Records int64
	// Bytes is their size.
	Bytes int64
	// BeforeStart were read but lie before the window (a source without
	// AtTimestamp reads from the trim horizon); AfterUntil were read past its
	// end and left unhandled.
	BeforeStart, AfterUntil int64
	// Reads are reads of a shard, EmptyReads those that returned nothing.
	Reads, EmptyReads int64
	// Throttles are throttled calls (each waited out); ExpiredIterators
	// iterators renewed; Lists shard listings.
	Throttles, ExpiredIterators, Lists int64
	// Shards is how many shards the stream listed; ShardsDone how many are
	// finished (closed and read to the end, or past Until), ShardsCaughtUp how
	// many open ones were read up to the tip, ShardsExpired how many vanished
	// (expired) before they could be read.
	Shards, ShardsDone, ShardsCaughtUp, ShardsExpired int
	// ReadTime is the time spent in the source's reads, HandleTime in the
	// handler, summed over shards (reads and handling overlap: a shard reads
	// its next page while its last one is handled).
	ReadTime, HandleTime time.Duration
	// Behind is how far behind the stream's tip the read is: the largest lag
	// of the shards not yet finished. Zero when every shard caught up.
	Behind time.Duration
	// Latest is the time of the newest record handled.
	Latest time.Time
	// Limited: the read stopped at Config.MaxRecords.
	Limited bool
}

// Reader reads one stream. Make it with NewReader; it runs once.
type Reader struct {
	src Source
	cfg Config

	mu     sync.Mutex
	shards map[string]*shardState
	order  []string        // shard IDs as listed, in listing order
	listed map[string]bool // the IDs in order
	stats  Stats
	lag    map[string]time.Duration // shards being read: their last lag

	cpMu    sync.Mutex // serialises Checkpoint calls
	handled atomic.Int64
	limited atomic.Bool
}

type shardStatus uint8

const (
	idle shardStatus = iota
	reading
	caughtUp
	finished
)

type shardState struct {
	sh     Shard
	pos    Position
	status shardStatus
}

// NewReader returns a Reader of src.
func NewReader(src Source, cfg Config) *Reader {
	if p, ok := src.(PacedSource); ok {
		pace := p.Pacing()
		if cfg.MinReadInterval == 0 {
			cfg.MinReadInterval = pace.MinReadInterval
		}
		if cfg.EmptyReadDelay == 0 {
			cfg.EmptyReadDelay = pace.EmptyReadDelay
		}
	}
	return &Reader{src: src, cfg: cfg.withDefaults(), shards: map[string]*shardState{}, listed: map[string]bool{}, lag: map[string]time.Duration{}}
}

// Stats returns the counts so far; safe to call while Run runs.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Behind = 0
	for _, d := range r.lag {
		s.Behind = max(s.Behind, d)
	}
	s.Limited = r.limited.Load()
	return s
}

// Positions returns every shard's position so far.
func (r *Reader) Positions() map[string]Position {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.positionsLocked()
}

func (r *Reader) positionsLocked() map[string]Position {
	out := make(map[string]Position, len(r.shards))
	for id, st := range r.shards {
		out[id] = st.pos
	}
	return out
}

// errLimit stops a shard at Config.MaxRecords.
var errLimit = errors.New("record limit reached")

// Run reads the stream from positions (nil: from the start) and hands the
// records to h, until every shard is finished or caught up, MaxRecords is
// reached, h or the source fails, or ctx ends. It returns the counts; the
// error is nil in the first two cases. Positions are saved through
// Config.Checkpoint as batches are handled, so a read that stops for any
// reason resumes from Positions() with nothing lost (and, at most, one batch
// handled twice if the checkpoint itself failed).
func (r *Reader) Run(ctx context.Context, positions map[string]Position, h handler) (Stats, error) {
	for id, p := range positions {
		r.shards[id] = &shardState{sh: Shard{ID: id}, pos: p}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		id     string
		status shardStatus
		err    error
	}
	results := make(chan result)
	running := 0
	first := true
	relist := true
	var failure error
	for {
		if relist && failure == nil && ctx.Err() == nil && !r.limited.Load() {
			if _, err := r.list(ctx, first); err != nil {
				failure = err
			}
			first = false
			relist = false
		}
		// Start every shard that is ready, up to the concurrency.
		if failure == nil && ctx.Err() == nil && !r.limited.Load() {
			for _, id := range r.ready() {
				if running >= r.cfg.Concurrency {
					break
				}
				r.mu.Lock()
				st := r.shards[id]
				st.status = reading
				sh, pos := st.sh, st.pos
				r.mu.Unlock()
				running++
				r.trace(id, "start")
				go func() {
					status, err := r.readShard(ctx, sh, pos, h)
					results <- result{id: id, status: status, err: err}
				}()
			}
		}
		if running == 0 {
			if failure != nil || ctx.Err() != nil || r.limited.Load() {
				break
			}
			// Nothing to read: list once more, for shards a resharding made
			// while we read, or shards that closed since they caught up.
			changed, err := r.list(ctx, false)
			if err != nil {
				failure = err
				break
			}
			if !changed || len(r.ready()) == 0 {
				break
			}
			continue
		}
		res := <-results
		running--
		r.mu.Lock()
		st := r.shards[res.id]
		st.status = res.status
		delete(r.lag, res.id)
		switch res.status {
		case finished:
			r.stats.ShardsDone++
			relist = true // its children may be new to us
		case caughtUp:
			r.stats.ShardsCaughtUp++
		}
		r.mu.Unlock()
		switch {
		case res.err == nil:
		case errors.Is(res.err, errLimit):
			r.limited.Store(true)
		case failure == nil && ctx.Err() == nil:
			failure = res.err
			cancel()
		}
		if res.status != finished { // "done" is told when the position says so
			r.trace(res.id, map[shardStatus]string{caughtUp: "caught-up", idle: "stopped"}[res.status])
		}
	}
	stats := r.Stats()
	if failure != nil {
		return stats, failure
	}
	if err := ctx.Err(); err != nil {
		return stats, err
	}
	return stats, nil
}

func (r *Reader) trace(id, kind string) {
	if r.cfg.Trace != nil {
		r.cfg.Trace(Event{Shard: id, Kind: kind})
	}
}

// list lists the shards and merges them into the reader's state. It reports
// whether anything changed: a new shard, or a known one that closed.
func (r *Reader) list(ctx context.Context, first bool) (bool, error) {
	var shards []Shard
	err := r.retry(ctx, "listing shards", func() error {
		var err error
		shards, err = r.src.Shards(ctx)
		return err
	})
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Lists++
	changed := false
	listed := make(map[string]bool, len(shards))
	for _, sh := range shards {
		listed[sh.ID] = true
		st := r.shards[sh.ID]
		if st == nil {
			st = &shardState{}
			r.shards[sh.ID] = st
			changed = true
		}
		if !r.listed[sh.ID] {
			r.listed[sh.ID] = true
			r.order = append(r.order, sh.ID)
		}
		if st.status == caughtUp && sh.Closed() && !st.sh.Closed() {
			// It closed (a resharding) after it caught up: finish it.
			st.status = idle
			r.stats.ShardsCaughtUp--
			changed = true
		}
		st.sh = sh
	}
	r.stats.Shards = len(shards)
	if first && len(r.cfg.At) > 0 {
		keep := map[string]bool{}
		for id, seq := range r.cfg.At {
			if !listed[id] {
				return false, fmt.Errorf("start position: the stream has no shard %s", id)
			}
			if st := r.shards[id]; st.pos == (Position{}) {
				st.pos.At = seq
			}
			keep[id] = true
		}
		for _, sh := range shards {
			for _, a := range ancestors(shards, sh.ID) {
				if r.cfg.At[a] != "" {
					keep[sh.ID] = true
				}
			}
		}
		for _, sh := range shards {
			if st := r.shards[sh.ID]; !keep[sh.ID] && st.pos == (Position{}) {
				st.pos = Position{Done: true, Skipped: true}
			}
		}
	}
	// Children of skipped shards are skipped too, also those a resharding
	// makes later.
	for _, sh := range shards {
		st := r.shards[sh.ID]
		if st.pos != (Position{}) || len(sh.Parents) == 0 {
			continue
		}
		all := true
		for _, p := range sh.Parents {
			if ps := r.shards[p]; ps == nil || !ps.pos.Skipped {
				all = false
			}
		}
		if all {
			st.pos = Position{Done: true, Skipped: true}
		}
	}
	// Shards done in an earlier run count as finished.
	for _, st := range r.shards {
		if st.pos.Done && st.status == idle {
			st.status = finished
		}
	}
	return changed, nil
}

// ready returns the shards that can be read now: not read yet in this run,
// not finished, and every parent finished (or gone: expired shards are
// read as far as they ever will be).
func (r *Reader) ready() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range r.order {
		st := r.shards[id]
		if st.status != idle || st.pos.Done {
			continue
		}
		ok := true
		for _, p := range st.sh.Parents {
			if ps := r.shards[p]; ps != nil && ps.status != finished && !ps.pos.Done && r.listed[p] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, id)
		}
	}
	return out
}

// fetched is one page of a shard on its way from the shard's reading
// goroutine to its handling.
type fetched struct {
	records []Record
	last    string // sequence number of the page's last record, filtered ones included
	done    bool   // the shard is finished after this page
	caught  bool   // the shard caught up with the tip after this page
	err     error
}

// readShard reads one shard from pos to its end, the window's end or the tip
// of the stream, reading each page while the previous one is handled.
func (r *Reader) readShard(ctx context.Context, sh Shard, pos Position, h handler) (shardStatus, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan fetched, 1)
	go func() {
		defer close(pages)
		r.fetch(rctx, sh, pos, pages)
	}()
	defer func() {
		cancel()
		// Drain, so that the fetcher ends.
		for range pages {
		}
	}()
	for f := range pages {
		if f.err != nil {
			if errors.Is(f.err, ErrShardNotFound) {
				r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "shard expired before it was read to its end", slog.String("shard", sh.ID), slog.String("error", f.err.Error()))
				r.mu.Lock()
				r.stats.ShardsExpired++
				r.mu.Unlock()
				return finished, r.save(ctx, sh.ID, func(p *Position) { p.Done = true })
			}
			return idle, f.err
		}
		recs := f.records
		limited := false
		if n := r.cfg.MaxRecords; n > 0 && len(recs) > 0 {
			take := int64(len(recs))
			if got := r.handled.Add(take); got > n {
				over := min(got-n, take)
				r.handled.Add(-over)
				take -= over
				limited = true
			}
			recs = recs[:take]
		}
		if len(recs) > 0 {
			start := time.Now()
			err := h.HandleRecords(ctx, sh.ID, recs)
			r.mu.Lock()
			r.stats.HandleTime += time.Since(start)
			r.mu.Unlock()
			if err != nil {
				var be *pipeline.BatchError
				if errors.As(err, &be) && be.Index > 0 && be.Index <= len(recs) {
					r.count(recs[:be.Index])
					if serr := r.save(ctx, sh.ID, func(p *Position) { p.Seq, p.At = recs[be.Index-1].Seq, "" }); serr != nil {
						return idle, errors.Join(err, serr)
					}
				}
				return idle, fmt.Errorf("shard %s: %w", sh.ID, err)
			}
			r.count(recs)
		}
		last := f.last
		if len(recs) > 0 {
			last = recs[len(recs)-1].Seq
		}
		if limited {
			if len(recs) > 0 {
				if err := r.save(ctx, sh.ID, func(p *Position) { p.Seq, p.At = last, "" }); err != nil {
					return idle, err
				}
			}
			r.limited.Store(true)
			return idle, errLimit
		}
		err := r.save(ctx, sh.ID, func(p *Position) {
			if last != "" {
				p.Seq, p.At = last, ""
			}
			p.Done = p.Done || f.done
		})
		if err != nil {
			return idle, err
		}
		switch {
		case f.done:
			return finished, nil
		case f.caught:
			return caughtUp, nil
		}
		if r.limited.Load() {
			return idle, errLimit
		}
	}
	if err := ctx.Err(); err != nil {
		return idle, err
	}
	return idle, errors.New("shard " + sh.ID + ": reading stopped")
}

// count adds handled records to the stats.
func (r *Reader) count(recs []Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Records += int64(len(recs))
	for i := range recs {
		r.stats.Bytes += int64(recs[i].Size)
		if t := recs[i].Time; t.After(r.stats.Latest) {
			r.stats.Latest = t
		}
	}
}

// save updates a shard's position and passes every position to the
// checkpoint.
func (r *Reader) save(ctx context.Context, id string, update func(p *Position)) error {
	r.cpMu.Lock()
	defer r.cpMu.Unlock()
	r.mu.Lock()
	pos := &r.shards[id].pos
	wasDone := pos.Done
	update(pos)
	if pos.Done && !wasDone {
		// Told here, under the lock that ready() takes: a child cannot be
		// seen to start before its parent is seen to be done.
		r.trace(id, "done")
	}
	snapshot := r.positionsLocked()
	r.mu.Unlock()
	if r.cfg.Checkpoint == nil {
		return nil
	}
	if err := r.cfg.Checkpoint(ctx, maps.Clone(snapshot)); err != nil {
		return fmt.Errorf("saving the checkpoint: %w", err)
	}
	return nil
}

// startOf returns where a shard's reading starts.
func (r *Reader) startOf(pos Position) Start {
	switch {
	case pos.Seq != "":
		return Start{Type: AfterSequence, Seq: pos.Seq}
	case pos.At != "":
		return Start{Type: AtSequence, Seq: pos.At}
	}
	return r.cfg.Start
}

// fetch reads a shard page by page into out until it is finished, caught up
// or past the window, or ctx ends.
func (r *Reader) fetch(ctx context.Context, sh Shard, pos Position, out chan<- fetched) {
	send := func(f fetched) bool {
		select {
		case out <- f:
			return true
		case <-ctx.Done():
			return false
		}
	}
	start := r.startOf(pos)
	lastRead := pos.Seq
	it, err := r.iterator(ctx, sh.ID, start)
	if err != nil {
		send(fetched{err: err})
		return
	}
	empties := 0
	var lastCall time.Time
	for {
		if d := r.cfg.MinReadInterval - r.cfg.Now().Sub(lastCall); d > 0 && !lastCall.IsZero() {
			if err := r.cfg.Sleep(ctx, d); err != nil {
				return
			}
		}
		var page Page
		err := r.retry(ctx, "reading shard "+sh.ID, func() error {
			lastCall = r.cfg.Now()
			t0 := time.Now()
			var err error
			page, err = r.src.Read(ctx, sh.ID, it, r.cfg.BatchSize)
			r.mu.Lock()
			r.stats.ReadTime += time.Since(t0)
			r.stats.Reads++
			r.mu.Unlock()
			if errors.Is(err, ErrExpiredIterator) {
				r.mu.Lock()
				r.stats.ExpiredIterators++
				r.mu.Unlock()
				from := start
				if lastRead != "" {
					from = Start{Type: AfterSequence, Seq: lastRead}
				}
				nit, ierr := r.iterator(ctx, sh.ID, from)
				if ierr != nil {
					return ierr
				}
				it = nit
				return errRetryNow
			}
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				send(fetched{err: fmt.Errorf("shard %s: %w", sh.ID, err)})
			}
			return
		}
		f := fetched{}
		for i, rec := range page.Records {
			if !r.cfg.Until.IsZero() && rec.Time.After(r.cfg.Until) {
				// The window ends here: this record and the rest are left
				// for a later read.
				r.mu.Lock()
				r.stats.AfterUntil += int64(len(page.Records) - i)
				r.mu.Unlock()
				f.done = true
				break
			}
			if start.Type == AtTimestamp && rec.Time.Before(start.Time) {
				r.mu.Lock()
				r.stats.BeforeStart++
				r.mu.Unlock()
			} else {
				f.records = append(f.records, rec)
			}
			f.last = rec.Seq
		}
		if n := len(page.Records); n > 0 {
			lastRead = page.Records[n-1].Seq
			empties = 0
		} else {
			empties++
			r.mu.Lock()
			r.stats.EmptyReads++
			r.mu.Unlock()
		}
		ended := page.Next == "" ||
			sh.Closed() && (lastRead != "" && pipeline.CompareSequenceNumbers(lastRead, sh.EndingSeq) >= 0 ||
				len(page.Records) == 0 && page.BehindKnown && page.Behind == 0)
		f.done = f.done || ended
		if !f.done {
			if page.BehindKnown {
				// A full page may have more behind it even at "0 ms behind":
				// records that arrived within the same millisecond.
				f.caught = page.Behind == 0 && len(page.Records) < r.cfg.BatchSize
			} else {
				f.caught = len(page.Records) == 0 && empties >= r.cfg.EmptyReads
			}
		}
		r.mu.Lock()
		switch {
		case f.done || f.caught:
			r.lag[sh.ID] = 0
		case page.BehindKnown:
			r.lag[sh.ID] = page.Behind
		case len(page.Records) > 0:
			r.lag[sh.ID] = max(0, r.cfg.Now().Sub(page.Records[len(page.Records)-1].Time))
		}
		r.mu.Unlock()
		if !send(f) || f.done || f.caught {
			return
		}
		it = page.Next
		if len(page.Records) == 0 && r.cfg.EmptyReadDelay > 0 {
			if err := r.cfg.Sleep(ctx, r.cfg.EmptyReadDelay); err != nil {
				return
			}
		}
	}
}

// errRetryNow asks retry to call again at once (a renewed iterator).
var errRetryNow = errors.New("retry now")

// maxRenewals bounds iterator renewals in a row for one read: an iterator
// that expires as soon as it is made is a fault, not a delay.
const maxRenewals = 10

// iterator gets a shard iterator, waiting out throttling.
func (r *Reader) iterator(ctx context.Context, shard string, start Start) (string, error) {
	var it string
	err := r.retry(ctx, "getting an iterator for shard "+shard, func() error {
		var err error
		it, err = r.src.Iterator(ctx, shard, start)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("shard %s from %s: %w", shard, start.Type, err)
	}
	return it, nil
}

// retry calls fn until it succeeds or fails with something other than
// throttling, backing off exponentially with equal jitter between throttled
// calls.
func (r *Reader) retry(ctx context.Context, what string, fn func() error) error {
	throttled, renewed := 0, 0
	for {
		err := fn()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errRetryNow):
			if renewed++; renewed > maxRenewals {
				return fmt.Errorf("%s: iterator expired %d times in a row: %w", what, renewed, ErrExpiredIterator)
			}
			continue
		case !errors.Is(err, ErrThrottled):
			return err
		}
		throttled++
		r.mu.Lock()
		r.stats.Throttles++
		r.mu.Unlock()
		if r.cfg.MaxThrottles > 0 && throttled >= r.cfg.MaxThrottles {
			return fmt.Errorf("%s: still throttled after %d tries: %w", what, throttled, err)
		}
		if err := r.cfg.Sleep(ctx, retry.EqualJitter(throttled-1, r.cfg.Backoff, r.cfg.MaxBackoff)); err != nil {
			return err
		}
	}
}

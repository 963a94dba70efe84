// Package batchwrite is the one writer of items into an existing DynamoDB
// table: archive restore and export reimport both load through it.
//
// Items are sent with BatchWriteItem, 25 a request (DynamoDB's limit), never
// two for one key in a request (a repeated key sends the batch first).
// Items DynamoDB returns in UnprocessedItems are sent again with capped
// exponential backoff and full jitter (internal/retry), up to MaxAttempts
// requests per batch. With a Condition, each item goes instead by its own
// conditional PutItem, a batch's at once, and an item whose condition fails
// counts as skipped. A token bucket holds the load under MaxWriteUnits (one
// unit per started KB of each item, as DynamoDB charges). With a checkpoint
// store the writer records, per source, how many of its items are written
// in order, every CheckpointEvery and at Close, so that a rerun resumes
// where a stopped one was (rewriting at most the batches in flight: puts of
// the same items); saves are conditional, so of two runs of one load at
// once, the one whose checkpoint the other has saved over stops at its next
// save instead of writing on.
package batchwrite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/internal/retry"
	"github.com/tributary/tributary/pipeline"
)

// API is the part of the DynamoDB client the writer uses. *dynamodb.Client
// implements it.
type API interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// maxBatch is the most put requests one BatchWriteItem call may carry.
const maxBatch = 25

// Condition is the condition of a conditional put.
type Condition struct {
	Expression string
	Names      map[string]string
	Values     map[string]types.AttributeValue
}

// Options configures a Writer. The zero value works.
type Options struct {
	// MaxAttempts bounds the requests for one batch while DynamoDB leaves
	// some of its items unprocessed (throttling). Default 12: about two
	// minutes of backoff.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff between those requests: full
	// jitter over min(MaxDelay, BaseDelay·2^attempt). Defaults 50 ms and
	// 10 s.
	BaseDelay, MaxDelay time.Duration
	// MaxWriteUnits holds the load under this many write units per second
	// (0: no limit).
	MaxWriteUnits float64
	// Condition, when set, writes each item with its own PutItem under the
	// condition it returns (an empty Expression: unconditionally).
	Condition func(item pipeline.Item) Condition

	// Checkpoints, when set, keeps the load's progress under Job, whose
	// About describes the load: a resumed checkpoint must have the same.
	Checkpoints checkpoint.Store
	Job         string
	About       map[string]string
	// Resume continues from Job's checkpoint; otherwise the load starts
	// over (and overwrites it).
	Resume bool
	// CheckpointEvery is how often the checkpoint is saved. Default 2 s.
	CheckpointEvery time.Duration

	// Progress, when set, is called (from several goroutines) after each
	// batch with the items and write units it took.
	Progress func(items int64, units float64)
	// Sleep waits between retries and for the rate limit, and Now tells the
	// time (tests replace both). Defaults: a timer, time.Now.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// Stats are a load's counts.
type Stats struct {
	Written     int64   // items written
	Skipped     int64   // items whose Condition failed
	Resumed     int64   // items skipped because the checkpoint had them
	Units       float64 // write units consumed (estimated from item sizes)
	Requests    int64   // BatchWriteItem or PutItem calls
	Unprocessed int64   // items DynamoDB returned unprocessed, and retried
}

// Writer writes items into one table. Its methods are safe for concurrent
// use, but each source's items go through one Batch, in order.
type Writer struct {
	client API
	table  string
	opts   Options
	limit  *limiter

	mu      sync.Mutex // guards cp, stats and saveErr
	cp      *checkpoint.Checkpoint
	stats   Stats
	saveErr error

	saveMu     sync.Mutex // serialises saves
	stopSaving context.CancelFunc
	saver      sync.WaitGroup
}

// New returns a writer into table. With a checkpoint store it loads (Resume)
// or starts the job's checkpoint, and saves it every CheckpointEvery until
// Close.
func New(ctx context.Context, client API, table string, opts Options) (*Writer, error) {
	if table == "" {
		return nil, errors.New("batchwrite: no table")
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 12
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = 50 * time.Millisecond
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = 10 * time.Second
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = 2 * time.Second
	}
	if opts.Sleep == nil {
		opts.Sleep = retry.SleepCause
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Writer{client: client, table: table, opts: opts}
	if opts.MaxWriteUnits > 0 {
		w.limit = newLimiter(opts.MaxWriteUnits, opts.Now)
	}
	if opts.Checkpoints == nil {
		return w, nil
	}
	w.cp = &checkpoint.Checkpoint{Job: opts.Job, About: opts.About, Sources: map[string]int64{}}
	old, err := opts.Checkpoints.Load(ctx, opts.Job)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
	case err != nil:
		return nil, err
	case opts.Resume:
		for k, v := range opts.About {
			if old.About[k] != v {
				return nil, fmt.Errorf("batchwrite: the checkpoint of job %s is of another load (%s: %q, this load: %q); rerun without resuming", opts.Job, k, old.About[k], v)
			}
		}
		w.cp.Rev = old.Rev
		maps.Copy(w.cp.Sources, old.Sources)
	default:
		w.cp.Rev = old.Rev // start over, in place of the old one
	}
	// Save at once: the checkpoint is this run's from now on.
	if err := w.save(ctx); err != nil {
		return nil, err
	}
	saveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.stopSaving = stop
	w.saver.Add(1)
	go func() {
		defer w.saver.Done()
		t := time.NewTicker(opts.CheckpointEvery)
		defer t.Stop()
		for {
			select {
			case <-saveCtx.Done():
				return
			case <-t.C:
				if err := w.save(saveCtx); err != nil && saveCtx.Err() == nil {
					w.mu.Lock()
					w.saveErr = err
					w.mu.Unlock()
				}
			}
		}
	}()
	return w, nil
}

// save stores a snapshot of the checkpoint.
func (w *Writer) save(ctx context.Context) error {
	w.saveMu.Lock()
	defer w.saveMu.Unlock()
	w.mu.Lock()
	snap := *w.cp
	snap.Sources = maps.Clone(w.cp.Sources)
	w.mu.Unlock()
	if err := w.opts.Checkpoints.Save(ctx, &snap); err != nil {
		return fmt.Errorf("batchwrite: saving the checkpoint of job %s: %w", w.opts.Job, err)
	}
	w.mu.Lock()
	w.cp.Rev, w.cp.Updated = snap.Rev, snap.Updated
	w.mu.Unlock()
	return nil
}

// Position returns how many items of source the checkpoint says are
// written (0 without a checkpoint).
func (w *Writer) Position(source string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cp == nil {
		return 0
	}
	return w.cp.Sources[source]
}

// Resumed counts n items that an earlier run wrote.
func (w *Writer) Resumed(n int64) {
	w.mu.Lock()
	w.stats.Resumed += n
	w.mu.Unlock()
}

// statsSoFar returns the counts so far.
func (w *Writer) statsSoFar() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Close stops the checkpoint's saver and saves it one last time, with a
// context that still works after an interrupt. It returns the counts.
func (w *Writer) Close(ctx context.Context) (Stats, error) {
	if w.stopSaving == nil {
		return w.statsSoFar(), nil
	}
	w.stopSaving()
	w.saver.Wait()
	w.stopSaving = nil
	err := w.save(context.WithoutCancel(ctx))
	return w.statsSoFar(), err
}

// Batch collects one source's items, in order, into requests.
type Batch struct {
	w      *Writer
	source string
	items  []pending
	keys   map[string]bool
	end    int64
}

type pending struct {
	item  pipeline.Item
	key   string
	units float64
}

// Source returns the batch of a source's items: a part of an output, an
// archive object. Items are added in order, from one goroutine.
func (w *Writer) Source(source string) *Batch {
	return &Batch{w: w, source: source, keys: map[string]bool{}}
}

// Add adds an item, whose primary key is key (pipeline.ItemKey of its key
// attributes) and whose position in the source is pos (counting from 1);
// it sends the batch first when it is full or already holds key.
func (b *Batch) Add(ctx context.Context, key string, item pipeline.Item, pos int64) error {
	if len(b.items) == maxBatch || b.keys[key] {
		if err := b.Flush(ctx); err != nil {
			return err
		}
	}
	b.keys[key] = true
	b.items = append(b.items, pending{item: item, key: key, units: writeUnits(item)})
	b.end = pos
	return nil
}

// Flush sends what the batch holds and records its last position.
func (b *Batch) Flush(ctx context.Context) error {
	if len(b.items) == 0 {
		return nil
	}
	b.w.mu.Lock()
	err := b.w.saveErr
	b.w.mu.Unlock()
	if err != nil {
		return err
	}
	if b.w.opts.Condition != nil {
		err = b.w.putEach(ctx, b)
	} else {
		err = b.w.batchWrite(ctx, b)
	}
	b.items = b.items[:0]
	clear(b.keys)
	return err
}

// done records a sent batch.
func (w *Writer) done(b *Batch, s Stats) {
	w.mu.Lock()
	if w.cp != nil {
		w.cp.Sources[b.source] = b.end
	}
	w.stats.Written += s.Written
	w.stats.Skipped += s.Skipped
	w.stats.Units += s.Units
	w.stats.Requests += s.Requests
	w.stats.Unprocessed += s.Unprocessed
	w.mu.Unlock()
	if w.opts.Progress != nil {
		w.opts.Progress(s.Written+s.Skipped, s.Units)
	}
}

// batchWrite sends one BatchWriteItem and retries what comes back
// unprocessed.
func (w *Writer) batchWrite(ctx context.Context, b *Batch) error {
	var s Stats
	reqs := make([]types.WriteRequest, len(b.items))
	for i, p := range b.items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: p.item}}
		s.Units += p.units
	}
	for attempt := 0; len(reqs) > 0; attempt++ {
		if attempt >= w.opts.MaxAttempts {
			return fmt.Errorf("batchwrite: %s (up to item %d): %d items still unprocessed after %d attempts (the table is throttling: lower the write rate, then resume)", b.source, b.end, len(reqs), attempt)
		}
		if attempt > 0 {
			if err := w.opts.Sleep(ctx, retry.Backoff(attempt, w.opts.BaseDelay, w.opts.MaxDelay)); err != nil {
				return err
			}
		}
		if err := w.wait(ctx, reqs); err != nil {
			return err
		}
		out, err := w.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{w.table: reqs},
		})
		s.Requests++
		if err != nil {
			return fmt.Errorf("batchwrite: BatchWriteItem into %s (%s, up to item %d): %w", w.table, b.source, b.end, err)
		}
		reqs = out.UnprocessedItems[w.table]
		s.Unprocessed += int64(len(reqs))
	}
	s.Written = int64(len(b.items))
	w.done(b, s)
	return nil
}

// wait takes the write units of the requests from the rate limiter.
func (w *Writer) wait(ctx context.Context, reqs []types.WriteRequest) error {
	if w.limit == nil {
		return nil
	}
	var units float64
	for _, r := range reqs {
		units += writeUnits(r.PutRequest.Item)
	}
	return w.limit.wait(ctx, units, w.opts.Sleep)
}

// putEach writes each item of the batch with a conditional PutItem, all at
// once, and waits for them.
func (w *Writer) putEach(ctx context.Context, b *Batch) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var s Stats
	var firstErr error
	for _, p := range b.items {
		if w.limit != nil {
			if err := w.limit.wait(ctx, p.units, w.opts.Sleep); err != nil {
				return err
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: p.item}
			if c := w.opts.Condition(p.item); c.Expression != "" {
				in.ConditionExpression = aws.String(c.Expression)
				in.ExpressionAttributeNames = c.Names
				in.ExpressionAttributeValues = c.Values
			}
			_, err := w.client.PutItem(ctx, in)
			var ccf *types.ConditionalCheckFailedException
			mu.Lock()
			defer mu.Unlock()
			s.Units += p.units // a failed condition costs the write too
			s.Requests++
			switch {
			case err == nil:
				s.Written++
			case errors.As(err, &ccf):
				s.Skipped++
			case firstErr == nil:
				firstErr = fmt.Errorf("batchwrite: PutItem into %s (%s, item %s): %w", w.table, b.source, p.key, err)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	w.done(b, s)
	return nil
}

// limiter is a token bucket of write units.
type limiter struct {
	mu     sync.Mutex
	rate   float64 // units per second
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newLimiter(rate float64, now func() time.Time) *limiter {
	// A burst of one second's worth.
	return &limiter{rate: rate, burst: rate, tokens: rate, last: now(), now: now}
}

// wait reserves n units and sleeps until they are available.
func (l *limiter) wait(ctx context.Context, n float64, sleep func(context.Context, time.Duration) error) error {
	l.mu.Lock()
	now := l.now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	l.tokens -= n
	var d time.Duration
	if l.tokens < 0 {
		d = time.Duration(-l.tokens / l.rate * float64(time.Second))
	}
	l.mu.Unlock()
	return sleep(ctx, d)
}

// writeUnits estimates the write units of putting item: one per started KB
// of its size (attribute names and values, as DynamoDB counts them).
func writeUnits(item pipeline.Item) float64 {
	return float64((pipeline.ItemSize(item) + 1023) / 1024)
}

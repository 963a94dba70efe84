// Package replay runs a window of a change stream — a Kinesis data stream
// or a table's DynamoDB stream, read by a shardread.Reader — through the
// same batch handler the Lambda functions use (the projection engine), with
// a checkpoint, so that an interrupted replay resumes where it stopped and a
// finished one, run again, has nothing left to do.
//
// Replaying is safe because the engine is exactly-once per item: a change
// that is not newer than what its ledger entry records is skipped, so the
// same window replayed twice, overlapping windows, duplicated and reordered
// Kinesis records, and a replay running beside the live projector, all leave
// the aggregates equal to a recomputation from the table's items.
//
// Records that can never be applied — undecodable, or rejected by a
// projection — are counted, listed in the summary with their shard and
// sequence number, and passed over (the checkpoint moves past them), as the
// Lambda processor does under its SkipPermanent policy: the replay goes on
// and reports failure at the end. Any other error stops the replay, with the
// checkpoint at the last batch applied.
package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
)

// Config configures a Replay.
type Config struct {
	// Source is the stream to read.
	Source shardread.Source
	// Reader configures the read: start, window end, batch size, ...
	// (its Checkpoint is set by the Replay).
	Reader shardread.Config
	// Handler applies batches of changes: the projection engine.
	Handler pipeline.BatchHandler
	// Checkpoints keeps the job's progress; nil keeps none.
	Checkpoints checkpoint.Store
	// Job identifies the replay in Checkpoints (checkpoint.JobID), and About
	// describes it there for people.
	Job   string
	About map[string]string
	// Restart discards the job's checkpoint and starts from the beginning
	// of the window.
	Restart bool
	// ReadOnly loads the job's checkpoint, if any, but never saves it (a dry
	// run).
	ReadOnly bool
	// SaveEvery is the least time between two checkpoint saves while the
	// replay runs (a shard finishing, and the end, always save). Default 1 s.
	SaveEvery time.Duration
	// MaxListed is how many failed records the summary lists (all are
	// counted). Default 100.
	MaxListed int
	// Logger receives a line per failed record; nil: slog.Default().
	Logger *slog.Logger
}

// failure is a record the replay could not apply.
type failure struct {
	Shard, Seq string
	// Item is the item's key, EntityType its type, when the record decoded.
	Item, EntityType string
	Err              error
}

// Summary is what a replay did.
type Summary struct {
	// Read counts the read (records, windows, throttles, times).
	Read shardread.Stats
	// Failed counts the records that could not be applied; Failures lists
	// the first of them.
	Failed   int64
	Failures []failure
	// Bisections counts batches that failed and were applied in halves.
	Bisections int64
	// Resumed: the replay went on from a checkpoint saved by an earlier run.
	Resumed bool
	// Shards are the positions at the end.
	Shards map[string]shardread.Position
	// Finished: every shard is done (the window has closed: every shard is
	// closed and read, or read past the window's end). CaughtUp: the replay
	// reached the tip of every open shard. Neither when it was stopped.
	Finished, CaughtUp bool
}

// Replay is one run of a replay job. Make it with New; it runs once.
type Replay struct {
	cfg    Config
	reader *shardread.Reader

	mu         sync.Mutex
	failed     int64
	failures   []failure
	bisections int64
}

// New returns a replay.
func New(cfg Config) *Replay {
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = time.Second
	}
	if cfg.MaxListed <= 0 {
		cfg.MaxListed = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Replay{cfg: cfg}
}

// Progress returns the read's counts so far (zero before Run starts
// reading); safe to call while Run runs.
func (r *Replay) Progress() shardread.Stats {
	r.mu.Lock()
	rd := r.reader
	r.mu.Unlock()
	if rd == nil {
		return shardread.Stats{}
	}
	return rd.Stats()
}

// Run runs the replay until the window closes, the stream's tip is reached,
// the reader's record limit is, or an error or ctx stops it. The summary is
// valid in every case; the checkpoint holds the positions it reports.
func (r *Replay) Run(ctx context.Context) (Summary, error) {
	var (
		sum  Summary
		cp   *checkpoint.Checkpoint
		pos  map[string]shardread.Position
		cpMu sync.Mutex
	)
	store := r.cfg.Checkpoints
	if store != nil {
		if r.cfg.Restart && !r.cfg.ReadOnly {
			if err := store.Delete(ctx, r.cfg.Job); err != nil {
				return sum, err
			}
		}
		loaded, err := store.Load(ctx, r.cfg.Job)
		switch {
		case err == nil && !r.cfg.Restart:
			cp, pos, sum.Resumed = loaded, maps.Clone(loaded.Shards), true
		case err == nil, errors.Is(err, checkpoint.ErrNotFound):
			cp = &checkpoint.Checkpoint{Job: r.cfg.Job}
			if err == nil {
				cp.Rev = loaded.Rev // restart of a dry run: nothing deleted
			}
		default:
			return sum, err
		}
		cp.About = r.cfg.About
	}
	var lastSave time.Time
	save := func(ctx context.Context, p map[string]shardread.Position, force bool) error {
		if store == nil || r.cfg.ReadOnly {
			return nil
		}
		cpMu.Lock()
		defer cpMu.Unlock()
		cp.Shards = p
		if !force && time.Since(lastSave) < r.cfg.SaveEvery {
			return nil
		}
		lastSave = time.Now()
		return store.Save(ctx, cp)
	}
	rc := r.cfg.Reader
	doneBefore := map[string]bool{}
	for id, p := range pos {
		doneBefore[id] = p.Done
	}
	rc.Checkpoint = func(ctx context.Context, p map[string]shardread.Position) error {
		// Save at once when a shard has just finished: its children start
		// from that.
		force := false
		for id, q := range p {
			if q.Done && !doneBefore[id] {
				doneBefore[id], force = true, true
			}
		}
		return save(ctx, p, force)
	}
	reader := shardread.NewReader(r.cfg.Source, rc)
	r.mu.Lock()
	r.reader = reader
	r.mu.Unlock()

	stats, err := reader.Run(ctx, pos, shardread.HandlerFunc(r.handle))
	sum.Read = stats
	sum.Shards = reader.Positions()
	// The last positions, whatever stopped the run; not under ctx, which
	// may be what stopped it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if serr := save(sctx, maps.Clone(sum.Shards), true); serr != nil {
		err = errors.Join(err, fmt.Errorf("saving the checkpoint: %w", serr))
	}
	r.mu.Lock()
	sum.Failed, sum.Failures, sum.Bisections = r.failed, r.failures, r.bisections
	r.mu.Unlock()
	if err == nil && !stats.Limited {
		sum.Finished = len(sum.Shards) > 0
		for _, p := range sum.Shards {
			sum.Finished = sum.Finished && p.Done
		}
		sum.CaughtUp = !sum.Finished
	}
	return sum, err
}

// handle applies one shard's batch: undecodable records and records a
// projection rejects are failures passed over; when applying fails for any
// other reason, the batch is split in halves and each applied on its own
// (as the event source mapping bisects a failed batch), down to the change
// that fails alone, where the batch stops.
func (r *Replay) handle(ctx context.Context, shard string, recs []shardread.Record) error {
	changes := make([]pipeline.Change, 0, len(recs))
	at := make([]int, 0, len(recs)) // index in recs of each change
	for i := range recs {
		if recs[i].Err != nil {
			r.fail(ctx, failure{Shard: shard, Seq: recs[i].Seq, Err: recs[i].Err})
			continue
		}
		changes = append(changes, recs[i].Change)
		at = append(at, i)
	}
	if i, err := pipeline.CheckViews(changes, pipeline.NeedOf(r.cfg.Handler)); err != nil {
		// A stream whose view type cannot give the projections what they
		// need: stop at its first record rather than apply it wrongly.
		return &pipeline.BatchError{Index: at[i], Err: err}
	}
	if i, err := r.apply(ctx, shard, recs, changes, at, 0); err != nil {
		return &pipeline.BatchError{Index: at[i], Err: err}
	}
	return nil
}

// apply applies changes[from:] and returns, on failure, the index of the
// first change not applied.
func (r *Replay) apply(ctx context.Context, shard string, recs []shardread.Record, changes []pipeline.Change, at []int, from int) (int, error) {
	for from < len(changes) {
		part := changes[from:]
		err := r.cfg.Handler.HandleBatch(ctx, part)
		if err == nil {
			return 0, nil
		}
		idx := 0
		var be *pipeline.BatchError
		if errors.As(err, &be) && be.Index >= 0 && be.Index < len(part) {
			idx, err = be.Index, be.Err
		}
		from += idx
		if errors.Is(err, pipeline.ErrPermanent) {
			c := &changes[from]
			r.fail(ctx, failure{Shard: shard, Seq: recs[at[from]].Seq, Item: pipeline.KeyString(c.Keys), EntityType: c.EntityType(), Err: err})
			from++
			continue
		}
		if n := len(changes) - from; n == 1 || ctx.Err() != nil {
			return from, err
		}
		// Bisect what is left: a batch can fail where its halves do not
		// (a transaction over the store's limits, a timeout).
		r.mu.Lock()
		r.bisections++
		r.mu.Unlock()
		half := from + (len(changes)-from)/2
		if i, err := r.apply(ctx, shard, recs, changes[:half], at, from); err != nil {
			return i, err
		}
		from = half
	}
	return 0, nil
}

func (r *Replay) fail(ctx context.Context, f failure) {
	r.cfg.Logger.LogAttrs(ctx, slog.LevelError, "record cannot be applied; passed over",
		slog.String("shard", f.Shard), slog.String("seq", f.Seq), slog.String("item", f.Item),
		slog.String("entityType", quote.Short(f.EntityType)), slog.String("error", f.Err.Error()))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed++
	if len(r.failures) < r.cfg.MaxListed {
		r.failures = append(r.failures, f)
	}
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/internal/metrics"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/internal/retry"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// Config configures an Engine. The zero value works.
type Config struct {
	// Policy applies to images whose entity type is missing or has no
	// projection: skip and count (default), or fail the change.
	Policy pipeline.UnknownPolicy
	// Ignore lists entity types that no projection reads and that should be
	// skipped silently (no log line), e.g. "User".
	Ignore []string
	// TombstoneTTL is how long the ledger keeps a removed item's tombstone
	// before the store may expire it. It must exceed the longest replay
	// window: a change older than an expired tombstone would be applied again.
	// Default 400 days (Kinesis keeps at most 365).
	TombstoneTTL time.Duration
	// MaxAttempts bounds the commits of one transaction (ledger conflicts and
	// contention are retried; a commit refused for contention is retried
	// after an exponential backoff with equal jitter, 20 ms doubling to 2 s).
	// Default 8.
	MaxAttempts int
	// Logger receives logs; nil means slog.Default().
	Logger *slog.Logger
	// Metrics receives embedded-metric-format lines per batch; nil: none.
	Metrics io.Writer
	// Namespace for metrics. Default "Tributary".
	Namespace string
	// Function names the function in metric dimensions. Default: the
	// Lambda function's name from the environment, or "local".
	Function string
	// Component is the metrics' Component dimension: "engine" (the
	// default) for a live set, "shadow" for a shadow set kept beside it.
	Component string
	// Now returns the time; default time.Now. Used for tombstone expiry.
	Now func() time.Time
	// Sleep waits between retries; default retry.Sleep, a timer that ends
	// with ctx.Err() when ctx does.
	Sleep func(ctx context.Context, d time.Duration) error
	// ClaimWait is how long after a change its claim on a row another item
	// holds is taken for one that may pass: the other item's change that
	// releases the row may be on another shard, not applied yet, and the
	// record fails as retryable; after that (and always when the other
	// item's state is as new as the change) two items claiming one row is
	// a permanent failure naming both. Default 5 minutes.
	ClaimWait time.Duration
}

// Engine applies batches of changes to projections with an exactly-once
// effect. It implements pipeline.BatchHandler and is safe for concurrent use.
type Engine struct {
	store driver.Store
	cfg   Config
	mux   *pipeline.Mux[projections.Projection]
	names map[string]projections.Projection
	stats counters
}

// newEngine returns an engine writing to store for the given projections,
// for Open, which has checked them. It panics on a nil projection or two
// with the same name: those are wiring mistakes.
func newEngine(store driver.Store, cfg Config, ps ...projections.Projection) *Engine {
	if cfg.TombstoneTTL <= 0 {
		cfg.TombstoneTTL = 400 * 24 * time.Hour
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	metrics.Defaults(&cfg.Logger, &cfg.Namespace)
	if cfg.Function == "" {
		cfg.Function = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	if cfg.Function == "" {
		cfg.Function = "local"
	}
	if cfg.Component == "" {
		cfg.Component = "engine"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = retry.Sleep
	}
	if cfg.ClaimWait <= 0 {
		cfg.ClaimWait = 5 * time.Minute
	}
	e := &Engine{store: store, cfg: cfg, mux: pipeline.NewMux[projections.Projection](), names: map[string]projections.Projection{}}
	e.mux.Policy = cfg.Policy
	e.mux.Logger = cfg.Logger
	for _, t := range cfg.Ignore {
		e.mux.Ignore(t)
	}
	for _, p := range ps {
		if p == nil {
			panic("projections: New with a nil projection")
		}
		if e.names[p.Name()] != nil {
			panic("projections: two projections named " + p.Name())
		}
		e.names[p.Name()] = p
		for _, t := range p.EntityTypes() {
			e.mux.Register(t, p)
		}
		if o, ok := p.(OthersReader); ok && o.ReadsOtherTypes() {
			e.mux.RegisterOthers(p)
		}
	}
	return e
}

// EntityTypes returns the entity types some projection reads, sorted: the
// pipeline's Processor asks it (an interface of its own) to count the
// records of other types as skipped.
func (e *Engine) EntityTypes() []string { return e.mux.Types() }

// ImageNeed says that the engine needs new images: a projection computes
// what an item contributes from its image after the change. Removals need
// no old image: the ledger knows what the item contributed.
func (e *Engine) ImageNeed() pipeline.ImageNeed {
	return pipeline.ImageNeed{Images: pipeline.NewImages, Why: "the projections compute what an item contributes from its new image"}
}

// errNoNewImage is an insert or a modify without its new image.
var errNoNewImage = errors.New("no new image: the projections need the stream to carry new images (NEW_IMAGE or NEW_AND_OLD_IMAGES)")

// Stats are the engine's running totals.
type Stats struct {
	Changes      int64 // changes handed to the engine
	Superseded   int64 // changes replaced by a newer one of the same item in the batch
	Stale        int64 // changes already applied, or older than what was (duplicates, replays)
	Repeated     int64 // of Stale, those whose ledger entry is this very change (a redelivery, an item a resumed run applied before); the rest found a newer state
	Unprojected  int64 // changes to items no projection reads
	Items        int64 // item states written (ledger entries)
	Transactions int64 // commits that succeeded
	Conflicts    int64 // commits refused by a ledger condition, then recomputed
	Contention   int64 // commits retried after contention
	// WriteUnits is what the store estimates the commits attempted cost
	// (WriteUnitEstimator), to a tenth of a unit; 0 over a store without
	// an estimate.
	WriteUnits float64
}

type counters struct {
	changes, superseded, stale, repeated, unprojected, items, txs, conflicts, contention atomic.Int64
	wu                                                                                   atomic.Int64 // in tenths
}

// Stats returns the totals since the engine was made.
func (e *Engine) Stats() Stats {
	s := &e.stats
	return Stats{
		Changes: s.changes.Load(), Superseded: s.superseded.Load(), Stale: s.stale.Load(), Repeated: s.repeated.Load(),
		Unprojected: s.unprojected.Load(), Items: s.items.Load(), Transactions: s.txs.Load(),
		Conflicts: s.conflicts.Load(), Contention: s.contention.Load(), WriteUnits: float64(s.wu.Load()) / 10,
	}
}

// item is one source item's part of a batch.
type item struct {
	key    string
	first  int // index of its first change in the batch
	newest *pipeline.Change
	tok    Token
	shard  uint32 // the batch's write shard for new sharded contributions
	// touches: some change of the item in the batch has an image of a
	// projected type (or is a removal without an old image). When the newest
	// change alone does not (a Document turned Template, then edited), an
	// earlier one may still retract what the item contributed.
	touches bool
	// logical is what the newest image contributes, sharded aggregates not
	// yet given a physical shard; next is the same with shards chosen
	// against the ledger.
	logical contribSet
	next    contribSet
	old     *ledger // nil: no ledger entry
	rev     int64
	skip    bool // nothing to write
	// wait: a row it claims is held by an item of the batch, which may
	// release it in a transaction still to come: it is tried again after
	// them. held: its claim failed for good (or for now); it is not written.
	wait bool
	held error
	// takeover names, per row, the owner whose claim it takes over, and
	// takeoverRev the revision of that owner's ledger entry read: one
	// whose own ledger entry no longer claims the row.
	takeover    map[driver.RowRef]string
	takeoverRev map[driver.RowRef]int64
}

// written reports whether the item is to be written.
func (it *item) written() bool { return !it.skip && !it.wait && it.held == nil }

// HandleBatch applies changes: for each item, the newest change wins; its
// contributions replace what the ledger says the item contributed, in
// transactions that write the ledger entries and the aggregate deltas
// together. On failure it returns a *pipeline.BatchError whose Index is the
// first change not applied; every change before it is applied.
func (e *Engine) HandleBatch(ctx context.Context, changes []pipeline.Change) error {
	start := time.Now()
	before := e.Stats()
	err := e.handle(ctx, changes, nil)
	e.emit(ctx, before, time.Since(start))
	return err
}

// handle applies changes; with a partial, the deltas to the aggregates
// that several of a transaction's items touch go to it instead.
func (e *Engine) handle(ctx context.Context, changes []pipeline.Change, p *Partial) error {
	e.stats.changes.Add(int64(len(changes)))
	items, err := e.plan(ctx, changes)
	if err != nil {
		var be *pipeline.BatchError
		if errors.As(err, &be) {
			// A change no projection can take: apply what comes before it.
			e.stats.changes.Add(-int64(len(changes)))
			if be.Index > 0 {
				if err := e.handle(ctx, changes[:be.Index], p); err != nil {
					return err
				}
			}
		}
		return err
	}
	if len(items) == 0 {
		return nil
	}
	if err := e.readLedgers(ctx, items); err != nil {
		return &pipeline.BatchError{Index: items[0].first, Err: err}
	}
	for _, it := range items {
		e.decide(it)
	}
	reserve := 0
	if p != nil {
		reserve = 1 // the partial's own entry
	}
	batch := &batchState{items: map[string]*item{}}
	for _, it := range items {
		batch.items[it.key] = it
	}
	chunks := e.chunks(items, reserve)
	if e.commitGroup(ctx, chunks, p) {
		chunks = nil // every one applied
	}
	for k, chunk := range chunks {
		if err := e.commit(ctx, chunk, p, batch); err != nil {
			if errors.As(err, new(*driver.RangeError)) {
				return e.isolate(ctx, chunks[k:], p, batch)
			}
			// Every item of an earlier chunk is applied; the first change not
			// applied is the earliest first change of this chunk or a later one.
			first := chunk[0].first
			for _, c := range chunks[k:] {
				for _, it := range c {
					first = min(first, it.first)
				}
			}
			return &pipeline.BatchError{Index: first, Err: err}
		}
	}
	// Items whose row another item of the batch held: that item's
	// transaction has committed now, releasing it or not.
	var waiting []*item
	for _, it := range items {
		if it.wait {
			it.wait = false
			waiting = append(waiting, it)
		}
	}
	if len(waiting) > 0 {
		batch.final = true
		for _, chunk := range e.chunks(waiting, reserve) {
			if err := e.commit(ctx, chunk, p, batch); err != nil {
				return &pipeline.BatchError{Index: chunk[0].first, Err: err}
			}
		}
	}
	var held []HeldChange
	for _, it := range items {
		if it.held != nil {
			held = append(held, HeldChange{Index: it.first, Err: it.held})
		}
	}
	if len(held) > 0 {
		sort.Slice(held, func(i, j int) bool { return held[i].Index < held[j].Index })
		return &pipeline.BatchError{Index: held[0].Index, Err: &HeldError{Held: held}}
	}
	return nil
}

// HeldError is the error of a batch applied but for the changes the
// engine held back (a row another item holds, an item its source holds
// twice): every other change of the batch is applied. It is the Err of a
// *pipeline.BatchError whose Index is the first held change, and reads as
// that change's error.
type HeldError struct {
	Held []HeldChange // in order of Index
}

// HeldChange is a change the engine held back: its index in the batch and
// why (matching pipeline.ErrPermanent when no retry can apply it).
type HeldChange struct {
	Index int
	Err   error
}

func (e *HeldError) Error() string { return e.Held[0].Err.Error() }

// Unwrap returns the first held change's error.
func (e *HeldError) Unwrap() error { return e.Held[0].Err }

// DuplicateItemError is an item that one source holds at two places: two
// changes of it whose origins (pipeline.Position.Origin) name one source
// and two places in it. An export holds each item of a table once, so the
// key attributes the items were read by are not the table's, or the
// export is corrupt. It is not permanent: nothing of the second is
// applied, and a retry meets the first again.
type DuplicateItemError struct {
	Key           string // the item's keys, rendered for people
	First, Second string // the origins: the one applied (or met first), the other
}

func (e *DuplicateItemError) Error() string {
	return fmt.Sprintf("item %s: its source holds it twice, at %s and at %s", e.Key, e.First, e.Second)
}

// twice returns a *DuplicateItemError when tokens a (applied, or met
// first) and b of the item with keys come from one source at two places.
func twice(keys pipeline.Item, a, b Token) error {
	if a.Origin == "" || b.Origin == "" || a.Origin == b.Origin {
		return nil
	}
	sa, _, _ := strings.Cut(a.Origin, "/")
	sb, _, _ := strings.Cut(b.Origin, "/")
	if sa != sb {
		return nil
	}
	return &DuplicateItemError{Key: pipeline.KeyString(keys), First: a.Origin, Second: b.Origin}
}

// batchState is what the transactions of one batch share: its items by
// key, and whether the claims held within it have been waited for.
type batchState struct {
	items map[string]*item
	final bool
}

// isolate commits the items of chunks one at a time, in order of first
// change, after a transaction failed because an aggregate value would leave
// DynamoDB's number range: the first item that fails so alone is the one
// whose contribution overflows, a permanent failure of its first change,
// and every change before it is applied.
func (e *Engine) isolate(ctx context.Context, chunks [][]*item, p *Partial, batch *batchState) error {
	var items []*item
	for _, c := range chunks {
		items = append(items, c...)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].first < items[j].first })
	for _, it := range items {
		err := e.commit(ctx, []*item{it}, p, batch)
		if err == nil {
			continue
		}
		if errors.As(err, new(*driver.RangeError)) {
			err = pipeline.Permanent(fmt.Errorf("item %s: %w", pipeline.KeyString(it.newest.Keys), err))
		}
		return &pipeline.BatchError{Index: it.first, Err: err}
	}
	return nil
}

// plan groups the batch by item, keeps each item's newest change and
// computes what it contributes. Items come back in order of first change.
func (e *Engine) plan(ctx context.Context, changes []pipeline.Change) ([]*item, error) {
	// Counted only when the plan holds: a batch that fails here is run
	// again without the change that failed, and counts then.
	var superseded, unprojected int64
	byKey := make(map[string]*item, len(changes))
	var items []*item
	var shard uint32
	if len(changes) > 0 {
		shard = batchShard(&changes[0])
	}
	for i := range changes {
		c := &changes[i]
		key := ledgerKey(c.Keys)
		tok := tokenOf(c)
		it := byKey[key]
		if it == nil {
			it = &item{key: key, first: i, newest: c, tok: tok, shard: shard, touches: e.touches(c)}
			byKey[key] = it
			items = append(items, it)
			continue
		}
		it.touches = it.touches || e.touches(c)
		if err := twice(c.Keys, it.tok, tok); err != nil {
			return nil, &pipeline.BatchError{Index: i, Err: err}
		}
		if tok.Newer(it.tok) {
			it.newest, it.tok = c, tok
		}
		superseded++
	}
	out := items[:0]
	var poison *pipeline.BatchError
	for _, it := range items {
		c := it.newest
		var err error
		if c.Kind != pipeline.Remove && c.New == nil {
			// Nothing to compute its contributions from; applying it as a
			// removal would retract what the item contributes.
			err = fmt.Errorf("%v of item %s: %w", c.Kind, pipeline.KeyString(c.Keys), errNoNewImage)
		} else if !it.touches {
			// Apply the unknown-type policy to the newest image: log and
			// skip, or fail.
			_, err = e.mux.Lookup(ctx, c, c.Image(), c.EntityType())
		}
		if err == nil && !it.touches {
			unprojected++
			continue
		}
		var next contribSet
		if err == nil {
			next, err = e.contributions(ctx, c, it.key)
		}
		if err != nil {
			idx := indexOf(changes, c)
			if poison == nil || idx < poison.Index {
				poison = &pipeline.BatchError{Index: idx, Err: pipeline.Permanent(err)}
			}
			continue
		}
		it.logical = next
		out = append(out, it)
	}
	if poison != nil {
		return nil, poison
	}
	e.stats.superseded.Add(superseded)
	e.stats.unprojected.Add(unprojected)
	return out, nil
}

func indexOf(changes []pipeline.Change, c *pipeline.Change) int {
	for i := range changes {
		if &changes[i] == c {
			return i
		}
	}
	return 0
}

// touches reports whether a change can matter to any projection: its new or
// old image has a projected type, or it is a removal without an old image
// (only the ledger knows what the item contributed).
func (e *Engine) touches(c *pipeline.Change) bool { return pipeline.Touches(c, e.mux.Has) }

// contributions computes what the change's new image contributes to every
// projection of its type. A removal contributes nothing.
func (e *Engine) contributions(ctx context.Context, c *pipeline.Change, itemKey string) (set contribSet, err error) {
	if c.Kind == pipeline.Remove || c.New == nil {
		return set, nil
	}
	ps, err := e.mux.Lookup(ctx, c, c.New, c.NewType)
	if err != nil {
		return set, err
	}
	aggs := map[driver.AggregateRef]map[string]decimal.Decimal{}
	shards := map[driver.AggregateRef]int{}
	for _, p := range ps {
		con, err := contribute(p, c.New)
		if err != nil {
			var ie *projections.ItemError
			if errors.As(err, &ie) && ie.Projection == p.Name() {
				return set, err // it names the projection and the item already
			}
			return set, fmt.Errorf("projection %s, item %s: %w", p.Name(), pipeline.KeyString(c.Keys), err)
		}
		for _, ctr := range con.Counters {
			if ctr.Key == "" {
				return set, fmt.Errorf("projection %s, item %s: counter with an empty key", p.Name(), pipeline.KeyString(c.Keys))
			}
			ref := driver.AggregateRef{Projection: p.Name(), Key: ctr.Key}
			vs := aggs[ref]
			if vs == nil {
				vs = make(map[string]decimal.Decimal, len(ctr.Values))
				aggs[ref] = vs
			}
			if ctr.Shards > shards[ref] {
				shards[ref] = ctr.Shards
			}
			for name, v := range ctr.Values {
				if driver.Reserved(e.store, name) {
					return set, fmt.Errorf("projection %s, item %s: value name %q is reserved", p.Name(), pipeline.KeyString(c.Keys), name)
				}
				vs[name] = vs[name].Add(v)
			}
		}
		for _, r := range con.Rows {
			if _, limits := e.store.(driver.KeyLimiter); r.Partition == "" || (r.Sort == "" && !limits) {
				// A store that says its key limits (KeyLimiter, below) says
				// whether a row may have an empty sort key: a target
				// store's may, for a table without a sort key.
				return set, fmt.Errorf("projection %s, item %s: row with an empty partition or sort key", p.Name(), pipeline.KeyString(c.Keys))
			}
			for name := range r.Attrs {
				if driver.Reserved(e.store, name) {
					return set, fmt.Errorf("projection %s, item %s: row attribute %q is reserved", p.Name(), pipeline.KeyString(c.Keys), name)
				}
			}
			ref := driver.RowRef{Projection: p.Name(), Partition: r.Partition, Sort: r.Sort}
			for _, o := range set.Rows {
				if o.Ref == ref {
					return set, fmt.Errorf("projection %s, item %s: two rows under one key, %s/%s: each of an item's rows needs a key of its own", p.Name(), pipeline.KeyString(c.Keys), quote.Value(r.Partition), quote.Value(r.Sort))
				}
			}
			set.Rows = append(set.Rows, rowContrib{Ref: ref, Hash: hashItem(r.Attrs), Attrs: r.Attrs, Expires: r.Expires})
		}
	}
	for ref, vs := range aggs {
		set.Aggs = append(set.Aggs, aggContrib{Ref: ref, Values: vs, Shards: shards[ref]})
	}
	if err := e.checkKeys(set, c); err != nil {
		return set, err
	}
	set.sort()
	return set, nil
}

// checkKeys asks the store whether it can hold the contributions' keys
// (KeyLimiter): one it cannot fails the record alone, not the transaction
// it would share with others.
func (e *Engine) checkKeys(set contribSet, c *pipeline.Change) error {
	kl, ok := e.store.(driver.KeyLimiter)
	if !ok {
		return nil
	}
	for _, a := range set.Aggs {
		ref := a.Ref
		ref.Shard = max(a.Shards-1, 0) // the longest shard number
		if err := kl.CheckAggregate(ref); err != nil {
			return fmt.Errorf("projection %s, item %s: %w", ref.Projection, pipeline.KeyString(c.Keys), err)
		}
	}
	for _, r := range set.Rows {
		if err := kl.CheckRow(r.Ref); err != nil {
			return fmt.Errorf("projection %s, item %s: %w", r.Ref.Projection, pipeline.KeyString(c.Keys), err)
		}
	}
	return nil
}

// contribute calls a projection, turning a panic into an error.
func contribute(p projections.Projection, img pipeline.Item) (c projections.Contribution, err error) {
	defer pipeline.Recover(&err)
	return p.Contribute(img)
}

func (e *Engine) readLedgers(ctx context.Context, items []*item) error {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.key
	}
	got, err := e.store.ReadLedgers(ctx, keys)
	if err != nil {
		return fmt.Errorf("reading %d ledger entries: %w", len(keys), err)
	}
	for _, it := range items {
		if err := it.setLedger(got[it.key]); err != nil {
			return err
		}
	}
	return nil
}

func (it *item) setLedger(entry driver.LedgerEntry) error {
	it.old, it.rev = nil, entry.Rev
	if entry.Rev == 0 {
		return nil
	}
	l, err := decodeLedger(it.key, entry)
	if err != nil {
		return err
	}
	it.old = l
	return nil
}

// decide marks an item to skip when its ledger already holds this change or
// a newer one.
func (e *Engine) decide(it *item) {
	if it.old != nil && it.held == nil {
		if err := twice(it.newest.Keys, it.old.Tok, it.tok); err != nil {
			it.held = err
			return
		}
	}
	it.skip = it.old != nil && !it.tok.Newer(it.old.Tok)
	if it.skip {
		e.stats.stale.Add(1)
		if it.old.Tok.same(it.tok) {
			e.stats.repeated.Add(1)
		}
		return
	}
	it.next = placeShards(it.logical, it.old, it.shard)
}

// placeShards gives each sharded aggregate contribution its physical shard:
// the one the item already contributes to, if any (an unchanged
// contribution then costs nothing), else the batch's shard. Retractions
// always go where the ledger says the contribution was added.
func placeShards(logical contribSet, old *ledger, shard uint32) contribSet {
	out := contribSet{Rows: logical.Rows, Aggs: make([]aggContrib, len(logical.Aggs))}
	for i, a := range logical.Aggs {
		if a.Shards > 1 {
			a.Ref.Shard = int(shard % uint32(a.Shards))
			if old != nil {
				for _, o := range old.C.Aggs {
					if o.Ref.Projection == a.Ref.Projection && o.Ref.Key == a.Ref.Key {
						a.Ref.Shard = o.Ref.Shard
						break
					}
				}
			}
		}
		out.Aggs[i] = a
	}
	out.sort()
	return out
}

// settleClaim decides what becomes of an item whose claim on a row another
// item holds was refused: when the holder is an item of the batch, it is
// tried again after the batch's other transactions (the holder may release
// the row in one of them); when the holder's ledger entry no longer claims
// the row (a row left behind), the item takes it over; otherwise it is
// held: as retryable while the change is younger than ClaimWait and the
// holder's state older (the holder's change that releases it may not be
// applied yet), else as a permanent failure naming both items.
func (e *Engine) settleClaim(ctx context.Context, it *item, claim *driver.ClaimError, batch *batchState) error {
	if !batch.final && batch.items[claim.Owner] != nil {
		it.wait = true
		return nil
	}
	got, err := e.store.ReadLedgers(ctx, []string{claim.Owner})
	if err != nil {
		return fmt.Errorf("reading the ledger entry of %s, which holds row %s/%s: %w", claim.Owner, quote.Value(claim.Ref.Partition), quote.Value(claim.Ref.Sort), err)
	}
	var holder *ledger
	if entry := got[claim.Owner]; entry.Rev != 0 {
		if holder, err = decodeLedger(claim.Owner, entry); err != nil {
			return err
		}
	}
	claims := false
	if holder != nil {
		for _, r := range holder.C.Rows {
			claims = claims || r.Ref == claim.Ref
		}
	}
	if !claims {
		if it.takeover == nil {
			it.takeover, it.takeoverRev = map[driver.RowRef]string{}, map[driver.RowRef]int64{}
		}
		if it.takeover[claim.Ref] == claim.Owner {
			return fmt.Errorf("row %s/%s: taking it over from item %s was refused (its ledger entry changed since it was read): %w", quote.Value(claim.Ref.Partition), quote.Value(claim.Ref.Sort), describeOwner(claim.Owner), claim)
		}
		it.takeover[claim.Ref] = claim.Owner
		// The read may be stale: the commit checks the revision.
		it.takeoverRev[claim.Ref] = got[claim.Owner].Rev
		return nil
	}
	row := fmt.Sprintf("projection %s, row %s/%s", claim.Ref.Projection, quote.Value(claim.Ref.Partition), quote.Value(claim.Ref.Sort))
	hint := "no row is written or removed on another item's behalf (rows whose keys do not identify their item collide; `projections check` warns of them)"
	if d, ok := e.names[claim.Ref.Projection].(ClaimDescriber); ok {
		row, hint = d.DescribeClaim(claim.Ref)
	}
	what := fmt.Sprintf("%s: item %s claims it, and item %s holds it", row, pipeline.KeyString(it.newest.Keys), describeOwner(claim.Owner))
	age := e.cfg.Now().Sub(it.newest.Time)
	if it.tok.Newer(holder.Tok) && !it.newest.Time.IsZero() && age < e.cfg.ClaimWait {
		it.held = fmt.Errorf("%s since an older change, which a newer one not applied yet may release: retried until %s after the change", what, e.cfg.ClaimWait)
		return nil
	}
	it.held = pipeline.Permanent(fmt.Errorf("%s: %s", what, hint))
	return nil
}

// actions is one item's share of a transaction.
func (e *Engine) actions(it *item) (l driver.LedgerPut, deltas map[driver.AggregateRef]map[string]decimal.Decimal, puts []driver.RowPut, dels []driver.RowDelete) {
	var old contribSet
	if it.old != nil {
		old = it.old.C
	}
	removed := it.newest.Kind == pipeline.Remove
	nl := ledger{Tok: it.tok, Removed: removed, C: it.next}
	l = driver.LedgerPut{Key: it.key, ExpectRev: it.rev, Body: encodeLedger(&nl)}
	if removed {
		l.ExpiresAt = e.cfg.Now().Add(e.cfg.TombstoneTTL).Unix()
	}
	deltas = map[driver.AggregateRef]map[string]decimal.Decimal{}
	add := func(ref driver.AggregateRef, vs map[string]decimal.Decimal, neg bool) {
		d := deltas[ref]
		if d == nil {
			d = map[string]decimal.Decimal{}
			deltas[ref] = d
		}
		for k, v := range vs {
			if neg {
				v = v.Neg()
			}
			d[k] = d[k].Add(v)
		}
	}
	for _, a := range old.Aggs {
		add(a.Ref, a.Values, true)
	}
	for _, a := range it.next.Aggs {
		add(a.Ref, a.Values, false)
	}
	oldRows := map[driver.RowRef]string{}
	for _, r := range old.Rows {
		oldRows[r.Ref] = r.Hash
	}
	newRows := map[driver.RowRef]bool{}
	for _, r := range it.next.Rows {
		newRows[r.Ref] = true
		if h, ok := oldRows[r.Ref]; !ok || h != r.Hash {
			from := it.takeover[r.Ref]
			puts = append(puts, driver.RowPut{Ref: r.Ref, Attrs: r.Attrs, Owner: it.key, From: from, Held: ok,
				CheckFrom: from != "", FromRev: it.takeoverRev[r.Ref]})
		}
	}
	for _, r := range old.Rows {
		if !newRows[r.Ref] {
			dels = append(dels, driver.RowDelete{Ref: r.Ref, Owner: it.key})
		}
	}
	return l, deltas, puts, dels
}

// chunks packs the items to write into transactions of at most MaxTxActions
// actions (less reserve, kept for an action of the caller's) and
// MaxTxBytes, never splitting an item, in order of first change; items
// whose change moves no aggregate and no row get a transaction of their
// own, which the store writes as a single conditional put.
func (e *Engine) chunks(items []*item, reserve int) [][]*item {
	var (
		out   [][]*item
		cur   []*item
		aggs  = map[driver.AggregateRef]bool{}
		rows  = map[driver.RowRef]bool{}
		putBy = map[driver.RowRef]string{} // the item of cur that puts each row
		n, sz int
	)
	type planned struct {
		it     *item
		l      driver.LedgerPut
		deltas map[driver.AggregateRef]map[string]decimal.Decimal
		puts   []driver.RowPut
		dels   []driver.RowDelete
		sig    string
		hot    string // the signature of its aggregate most items touch
	}
	var (
		alone [][]*item
		todo  []planned
	)
	for _, it := range items {
		if !it.written() {
			continue
		}
		l, deltas, puts, dels := e.actions(it)
		if len(puts) == 0 && len(dels) == 0 && allZero(deltas) {
			// Only the ledger moves (the change left every aggregate as it
			// was): one conditional put, at half a transaction's price.
			alone = append(alone, []*item{it})
			continue
		}
		todo = append(todo, planned{it: it, l: l, deltas: deltas, puts: puts, dels: dels, sig: signature(deltas)})
	}
	// Items that touch the same aggregates go into the same transaction, so
	// each aggregate is written as few times as possible: first by the
	// aggregate of theirs that most items of the batch touch (a day's
	// currency total that a settled payment adds to beside its accounts',
	// which each touch alone), then by all they touch. Order does not
	// matter for correctness: each transaction stands on its own.
	shared := map[driver.AggregateRef]int{}
	for _, p := range todo {
		for ref := range p.deltas {
			shared[ref]++
		}
	}
	for i := range todo {
		todo[i].hot = hottest(todo[i].deltas, shared)
	}
	sort.SliceStable(todo, func(i, j int) bool {
		if todo[i].hot != todo[j].hot {
			return todo[i].hot < todo[j].hot
		}
		return todo[i].sig < todo[j].sig
	})
	for _, p := range todo {
		it, l, deltas, puts, dels := p.it, p.l, p.deltas, p.puts, p.dels
		// Actions the item adds to the current transaction: its ledger entry,
		// and the aggregates and rows the transaction does not write yet.
		count := func() int {
			add := 1
			for ref := range deltas {
				if !aggs[ref] {
					add++
				}
			}
			for _, p := range puts {
				if !rows[p.Ref] {
					add += e.actionsOf(&driver.Tx{Puts: []driver.RowPut{p}})
				}
			}
			for _, d := range dels {
				if !rows[d.Ref] {
					add += e.actionsOf(&driver.Tx{Deletes: []driver.RowDelete{d}})
				}
			}
			return add
		}
		// Two items that put one row go to transactions of their own: the
		// store then says who holds it.
		clash := false
		for _, p := range puts {
			if by, ok := putBy[p.Ref]; ok && by != it.key {
				clash = true
			}
		}
		add, bytes := count(), len(l.Key)+len(l.Body)+64
		for ref := range deltas {
			bytes += len(ref.Key) + 64
		}
		for _, p := range puts {
			bytes += pipeline.ItemSize(p.Attrs) + len(p.Ref.Partition) + len(p.Ref.Sort)
		}
		if len(cur) > 0 && (clash || n+add > driver.MaxTxActions-reserve || sz+bytes > driver.MaxTxBytes-64<<10-reserve*maxPartialBytes) {
			out = append(out, cur)
			cur, n, sz = nil, 0, 0
			aggs, rows, putBy = map[driver.AggregateRef]bool{}, map[driver.RowRef]bool{}, map[driver.RowRef]string{}
			add = count() // against the new, empty transaction
		}
		cur = append(cur, it)
		n += add
		sz += bytes
		for ref := range deltas {
			aggs[ref] = true
		}
		for _, p := range puts {
			rows[p.Ref] = true
			putBy[p.Ref] = it.key
		}
		for _, d := range dels {
			rows[d.Ref] = true
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return append(out, alone...)
}

// actionsOf is how many of a transaction's actions tx takes in the
// engine's store (driver.Actions).
func (e *Engine) actionsOf(tx *driver.Tx) int { return driver.Actions(e.store, tx) }

// signature lists the aggregates an item's deltas touch, for grouping.
func signature(deltas map[driver.AggregateRef]map[string]decimal.Decimal) string {
	refs := make([]driver.AggregateRef, 0, len(deltas))
	for ref, d := range deltas {
		for _, v := range d {
			if !v.IsZero() {
				refs = append(refs, ref)
				break
			}
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refLess(refs[i], refs[j]) })
	var b []byte
	for _, r := range refs {
		b = append(b, r.Projection...)
		b = append(b, 0)
		b = append(b, r.Key...)
		b = append(b, 0)
		b = strconv.AppendInt(b, int64(r.Shard), 10)
		b = append(b, 1)
	}
	return string(b)
}

// hottest returns the signature of the aggregate of deltas that the most
// items touch (shared counts them), the first in order among equals; ""
// when none is touched by more than one.
func hottest(deltas map[driver.AggregateRef]map[string]decimal.Decimal, shared map[driver.AggregateRef]int) string {
	var best driver.AggregateRef
	n := 1
	for ref := range deltas {
		if c := shared[ref]; c > n || (c == n && n > 1 && refLess(ref, best)) {
			best, n = ref, c
		}
	}
	if n < 2 {
		return ""
	}
	return signature(map[driver.AggregateRef]map[string]decimal.Decimal{best: deltas[best]})
}

func allZero(deltas map[driver.AggregateRef]map[string]decimal.Decimal) bool {
	for _, d := range deltas {
		for _, v := range d {
			if !v.IsZero() {
				return false
			}
		}
	}
	return true
}

// build assembles the transaction for a chunk of items, summing deltas per
// aggregate and dropping deltas that sum to zero. touches counts the items
// whose deltas reach each aggregate. A row one item of the chunk releases
// and another claims is put, taken from the first.
func (e *Engine) build(chunk []*item) (tx *driver.Tx, touches map[driver.AggregateRef]int) {
	tx = &driver.Tx{}
	touches = map[driver.AggregateRef]int{}
	sums := map[driver.AggregateRef]map[string]decimal.Decimal{}
	var order []driver.AggregateRef
	type rowOp struct {
		put *driver.RowPut // nil: delete
		del driver.RowDelete
	}
	rowOps := map[driver.RowRef]*rowOp{}
	var rowOrder []driver.RowRef
	for _, it := range chunk {
		if !it.written() {
			continue
		}
		l, deltas, puts, dels := e.actions(it)
		tx.Ledgers = append(tx.Ledgers, l)
		for ref, d := range deltas {
			touches[ref]++
			s := sums[ref]
			if s == nil {
				s = map[string]decimal.Decimal{}
				sums[ref] = s
				order = append(order, ref)
			}
			for k, v := range d {
				s[k] = s[k].Add(v)
			}
		}
		for _, d := range dels {
			if op, ok := rowOps[d.Ref]; ok {
				if op.put != nil && op.put.From == "" {
					op.put.From = d.Owner // claimed by an item before, released by this one
				}
				continue
			}
			rowOrder = append(rowOrder, d.Ref)
			rowOps[d.Ref] = &rowOp{del: d}
		}
		for _, p := range puts {
			put := p
			if op, ok := rowOps[p.Ref]; ok {
				if op.put == nil && put.From == "" {
					put.From = op.del.Owner // released by an item before
				}
				op.put = &put
				continue
			}
			rowOrder = append(rowOrder, p.Ref)
			rowOps[p.Ref] = &rowOp{put: &put}
		}
	}
	sort.Slice(order, func(i, j int) bool { return refLess(order[i], order[j]) })
	for _, ref := range order {
		vs := sums[ref]
		for k, v := range vs {
			if v.IsZero() {
				delete(vs, k)
			}
		}
		if len(vs) > 0 {
			tx.Adds = append(tx.Adds, driver.Add{Ref: ref, Values: vs})
		}
	}
	written := make(map[string]bool, len(tx.Ledgers))
	for _, l := range tx.Ledgers {
		written[l.Key] = true
	}
	for _, ref := range rowOrder {
		op := rowOps[ref]
		if op.put == nil {
			tx.Deletes = append(tx.Deletes, op.del)
		} else {
			if op.put.CheckFrom && written[op.put.From] {
				// The owner taken from writes its own ledger entry here,
				// conditioned on its revision: that is the check.
				op.put.CheckFrom = false
			}
			tx.Puts = append(tx.Puts, *op.put)
		}
	}
	return tx, touches
}

// commitGroup commits the transactions of chunks in one group when the
// store can (driver.GroupCommitter: the embedded store, which then syncs
// a batch once instead of once a transaction), each built as commit
// builds it, the partial's revisions following one another. It reports
// whether every one is applied; when not, none is, p is as it was, and
// the caller commits them one by one, as over any other store.
func (e *Engine) commitGroup(ctx context.Context, chunks [][]*item, p *Partial) bool {
	gc, ok := e.store.(driver.GroupCommitter)
	if !ok || len(chunks) < 2 {
		return false
	}
	var saved Partial
	if p != nil {
		saved = *p
	}
	txs := make([]*driver.Tx, 0, len(chunks))
	var items int64
	var wu float64
	fits := true
	for _, chunk := range chunks {
		tx, touches := e.build(chunk)
		if len(tx.Ledgers) == 0 {
			continue
		}
		items += int64(len(tx.Ledgers))
		if p != nil && len(tx.Adds) > 0 {
			if deferred := p.absorb(tx, touches); deferred != nil {
				p.committed(deferred)
			}
		}
		if e.actionsOf(tx) > driver.MaxTxActions {
			fits = false // commit says why
			break
		}
		txs = append(txs, tx)
		wu += driver.WriteUnitsOf(e.store, tx)
	}
	if fits && gc.CommitGroup(ctx, txs) == nil {
		e.stats.txs.Add(int64(len(txs)))
		e.stats.items.Add(items)
		e.stats.wu.Add(int64(wu * 10))
		return true
	}
	if p != nil {
		*p = saved
	}
	return false
}

// The waits after a commit refused for contention: equal jitter under a
// ceiling that doubles from contentionBase to contentionMax.
const (
	contentionBase = 20 * time.Millisecond
	contentionMax  = 2 * time.Second
)

// commit writes one chunk, recomputing after ledger conflicts and backing off
// after contention. With a partial, the chunk's deltas to aggregates that
// several of its items touch are added to the partial, written in the same
// transaction.
func (e *Engine) commit(ctx context.Context, chunk []*item, p *Partial, batch *batchState) error {
	byKey := make(map[string]*item, len(chunk))
	for _, it := range chunk {
		byKey[it.key] = it
	}
	var last error
	for attempt := 1; attempt <= e.cfg.MaxAttempts; attempt++ {
		tx, touches := e.build(chunk)
		if len(tx.Ledgers) == 0 {
			return nil
		}
		var deferred map[driver.AggregateRef]map[string]decimal.Decimal
		if p != nil && len(tx.Adds) > 0 {
			deferred = p.absorb(tx, touches)
		}
		if n := e.actionsOf(tx); n > driver.MaxTxActions {
			// One item contributes to more aggregates and rows than a
			// transaction can write: no retry will fix that.
			return pipeline.Permanent(fmt.Errorf("item %s needs %d actions, more than a transaction's %d", chunk[0].key, n, driver.MaxTxActions))
		}
		err := e.store.Commit(ctx, tx)
		e.stats.wu.Add(int64(driver.WriteUnitsOf(e.store, tx) * 10))
		if err == nil {
			e.stats.txs.Add(1)
			items := len(tx.Ledgers)
			if deferred != nil {
				p.committed(deferred)
				items--
			}
			e.stats.items.Add(int64(items))
			return nil
		}
		last = err
		var ce *driver.ConflictError
		var claim *driver.ClaimError
		switch {
		case errors.As(err, &claim):
			// A row another item holds: wait for it, take it over, or fail
			// this item alone; the others go on.
			it := byKey[claim.Claimant]
			if it == nil {
				return fmt.Errorf("commit: a claim of %s, which is not in the transaction: %w", claim.Claimant, err)
			}
			if err := e.settleClaim(ctx, it, claim, batch); err != nil {
				return err
			}
		case errors.As(err, &ce):
			// Another delivery got there first, or our read was stale: take
			// the current entries (returned with the failure) and decide again.
			e.stats.conflicts.Add(1)
			for key, entry := range ce.Current {
				if p != nil && key == p.key {
					if err := p.load(entry); err != nil {
						return err
					}
					continue
				}
				it := byKey[key]
				if it == nil {
					return fmt.Errorf("commit: conflict on %s, which is not in the transaction", key)
				}
				if err := it.setLedger(entry); err != nil {
					return err
				}
				e.decide(it)
			}
		case errors.Is(err, driver.ErrContention):
			e.stats.contention.Add(1)
			if attempt == e.cfg.MaxAttempts {
				break // no wait before giving up
			}
			if err := e.cfg.Sleep(ctx, retry.EqualJitter(attempt-1, contentionBase, contentionMax)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("commit of %d items: %w", len(tx.Ledgers), err)
		}
	}
	return fmt.Errorf("commit: gave up after %d attempts: %w", e.cfg.MaxAttempts, last)
}

func (e *Engine) emit(ctx context.Context, before Stats, d time.Duration) {
	if e.cfg.Metrics == nil {
		return
	}
	now := e.Stats()
	set := metrics.Engine.New(e.cfg.Namespace, map[string]string{"Component": e.cfg.Component, "Function": e.cfg.Function})
	set.Add("Changes", float64(now.Changes-before.Changes))
	set.Add("ItemsWritten", float64(now.Items-before.Items))
	set.Add("Stale", float64(now.Stale-before.Stale))
	set.Add("Superseded", float64(now.Superseded-before.Superseded))
	set.Add("Transactions", float64(now.Transactions-before.Transactions))
	set.Add("Conflicts", float64(now.Conflicts-before.Conflicts))
	set.Add("WriteUnits", now.WriteUnits-before.WriteUnits)
	set.AddDuration("ApplyDuration", d)
	if _, err := set.WriteTo(e.cfg.Metrics, time.Now()); err != nil {
		e.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "engine metrics not written", slog.String("error", err.Error()))
	}
}

// An OthersReader is a projection that may read items of entity types it
// does not list, and items without one: one whose ReadsOtherTypes is true
// is handed them too (a remodel that copies the types its transform does
// not name).
type OthersReader interface {
	ReadsOtherTypes() bool
}

// A ClaimDescriber is a projection that names its rows itself in a
// collision: two source items that claim one row. A remodel's rows are
// target items, and two source items the transform maps to one key are
// said so. DescribeClaim returns what the row is ("target item
// PK=DOC#1 SK=CMT#2 of comments-table") and what to do about it.
type ClaimDescriber interface {
	DescribeClaim(ref driver.RowRef) (row, hint string)
}

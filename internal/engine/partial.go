package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/retry"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// Why a backfill defers some of its additions.
//
// A backfill writes a whole table's items through the engine, in many
// workers at once (one per export data file). An aggregate that a large
// share of the items touches (every order's status, every player's season)
// would then be written by nearly every transaction of every worker, and
// concurrent transactions on one item conflict. So a worker keeps, in one
// ledger entry of its own (its partial), the sums of what its transactions
// add to the aggregates that several items of a transaction touch: each
// transaction writes its items' ledger entries, its rows, the additions
// to the other aggregates and the partial, conditioned on the partial's
// revision. Nothing is lost or added twice: an item's contribution is in
// the partial exactly when its ledger entry says it is applied, because
// both are written by one transaction. Fold then adds the partial's sums
// to the aggregates, once (each fold transaction takes what it adds out of
// the partial), so a hot aggregate is written once per worker, not once
// per transaction. Until a worker folds, the aggregates lack its deferred
// sums; a stream change applied meanwhile is exact all the same (it adds
// the difference to what the ledger says, and the fold adds the rest).

// PartialPrefix starts the ledger key of every partial. Item ledger keys
// are canonical key JSON ("{...}") or "sha256:...", never this.
const PartialPrefix = "#tributary/partial/"

// Limits of a partial: it is rewritten by every transaction of its worker,
// so it holds only the aggregates that are worth it.
const (
	maxPartialRefs  = 64
	maxPartialBytes = 16 << 10
)

// A Partial is a backfill worker's deferred sums (see Engine.HandleBatchInto
// and Engine.Fold). It is used by one goroutine at a time.
type Partial struct {
	key    string
	rev    int64
	sums   map[driver.AggregateRef]map[string]decimal.Decimal
	folded bool
	size   int // bytes of the encoded sums
}

// partialBody is a partial's stored form.
type partialBody struct {
	Sums   []partialSum `json:"s,omitempty"`
	Folded bool         `json:"f,omitempty"`
}

type partialSum struct {
	P string                     `json:"p"`
	K string                     `json:"k"`
	S int                        `json:"h,omitempty"`
	V map[string]decimal.Decimal `json:"v"`
}

// OpenPartial reads (or starts) the partial stored under key, which must
// start with PartialPrefix.
func (e *Engine) OpenPartial(ctx context.Context, key string) (*Partial, error) {
	if !strings.HasPrefix(key, PartialPrefix) || len(key) == len(PartialPrefix) {
		return nil, fmt.Errorf("projections: partial key %q does not start with %s", key, PartialPrefix)
	}
	p := &Partial{key: key}
	if err := p.read(ctx, e.store); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Partial) read(ctx context.Context, st driver.Store) error {
	got, err := st.ReadLedgers(ctx, []string{p.key})
	if err != nil {
		return fmt.Errorf("reading partial %s: %w", p.key, err)
	}
	return p.load(got[p.key])
}

// load sets p from its stored entry (Rev 0: none).
func (p *Partial) load(entry driver.LedgerEntry) error {
	p.rev, p.sums, p.folded, p.size = entry.Rev, map[driver.AggregateRef]map[string]decimal.Decimal{}, false, 0
	if entry.Rev == 0 {
		return nil
	}
	var b partialBody
	if err := json.Unmarshal(entry.Body, &b); err != nil {
		return fmt.Errorf("projections: partial %s (rev %d) is corrupt: %w", p.key, entry.Rev, err)
	}
	for _, s := range b.Sums {
		p.sums[driver.AggregateRef{Projection: s.P, Key: s.K, Shard: s.S}] = s.V
	}
	p.folded, p.size = b.Folded, len(entry.Body)
	return nil
}

// Folded reports whether the partial has been folded: its worker is done.
func (p *Partial) Folded() bool { return p.folded }

// Pending returns how many aggregates the partial holds sums for, not yet
// folded.
func (p *Partial) Pending() int { return len(p.sums) }

func encodePartial(sums map[driver.AggregateRef]map[string]decimal.Decimal, folded bool) []byte {
	b := partialBody{Folded: folded}
	for ref, vs := range sums {
		b.Sums = append(b.Sums, partialSum{P: ref.Projection, K: ref.Key, S: ref.Shard, V: vs})
	}
	sort.Slice(b.Sums, func(i, j int) bool {
		return refLess(driver.AggregateRef{Projection: b.Sums[i].P, Key: b.Sums[i].K, Shard: b.Sums[i].S},
			driver.AggregateRef{Projection: b.Sums[j].P, Key: b.Sums[j].K, Shard: b.Sums[j].S})
	})
	out, err := json.Marshal(b)
	if err != nil {
		panic(fmt.Sprintf("projections: encoding a partial: %v", err)) // strings and decimals only
	}
	return out
}

// absorb moves into the partial the additions of tx to the aggregates it
// holds already, and to those that several of tx's items touch while it
// has room, and adds the partial's ledger put to tx. It returns the sums
// the partial will hold once tx commits (committed), or nil when tx
// defers nothing.
func (p *Partial) absorb(tx *driver.Tx, touches map[driver.AggregateRef]int) map[driver.AggregateRef]map[string]decimal.Decimal {
	next := make(map[driver.AggregateRef]map[string]decimal.Decimal, len(p.sums)+4)
	for ref, vs := range p.sums {
		next[ref] = vs
	}
	size := p.size
	moved := false
	kept := tx.Adds[:0]
	for _, a := range tx.Adds {
		cur, held := next[a.Ref]
		if !held && (touches[a.Ref] < 2 || len(next) >= maxPartialRefs || size+len(a.Ref.Projection)+len(a.Ref.Key)+64*len(a.Values) > maxPartialBytes) {
			kept = append(kept, a)
			continue
		}
		sum := make(map[string]decimal.Decimal, len(cur)+len(a.Values))
		for k, v := range cur {
			sum[k] = v
		}
		for k, v := range a.Values {
			sum[k] = sum[k].Add(v)
		}
		next[a.Ref] = sum
		size += len(a.Ref.Projection) + len(a.Ref.Key) + 64*len(a.Values)
		moved = true
	}
	if !moved {
		return nil
	}
	tx.Adds = kept
	tx.Ledgers = append(tx.Ledgers, driver.LedgerPut{Key: p.key, ExpectRev: p.rev, Body: encodePartial(next, false)})
	return next
}

// committed records that the transaction absorb prepared is written.
func (p *Partial) committed(next map[driver.AggregateRef]map[string]decimal.Decimal) {
	p.rev++
	p.sums = next
	p.size = len(encodePartial(next, false))
}

// HandleBatchInto is HandleBatch for a backfill worker: the additions to
// the aggregates that several items of a transaction touch go to p, in
// the same transaction as the items' ledger entries, instead of to the
// aggregates; Fold adds them. Everything else is as HandleBatch.
func (e *Engine) HandleBatchInto(ctx context.Context, changes []pipeline.Change, p *Partial) error {
	if p == nil {
		return errors.New("projections: HandleBatchInto without a partial")
	}
	start := time.Now()
	before := e.Stats()
	err := e.handle(ctx, changes, p)
	e.emit(ctx, before, time.Since(start))
	return err
}

// Fold adds p's sums to the aggregates, exactly once: each transaction
// adds up to a transaction's worth of them and writes p without them,
// conditioned on p's revision; the last marks p folded. A partial folded
// already is left as it is. Contention is retried as the engine retries
// it; a conflict (another worker of the same partial got there first)
// reads p again and goes on with what it holds.
func (e *Engine) Fold(ctx context.Context, p *Partial) error {
	for attempt := 1; ; {
		if p.folded {
			return nil
		}
		refs := make([]driver.AggregateRef, 0, len(p.sums))
		for ref := range p.sums {
			refs = append(refs, ref)
		}
		sort.Slice(refs, func(i, j int) bool { return refLess(refs[i], refs[j]) })
		take := min(len(refs), driver.MaxTxActions-1)
		rest := make(map[driver.AggregateRef]map[string]decimal.Decimal, len(refs)-take)
		for _, ref := range refs[take:] {
			rest[ref] = p.sums[ref]
		}
		tx := &driver.Tx{Ledgers: []driver.LedgerPut{{Key: p.key, ExpectRev: p.rev, Body: encodePartial(rest, len(rest) == 0)}}}
		if len(rest) == 0 {
			tx.Ledgers[0].ExpiresAt = e.cfg.Now().Add(e.cfg.TombstoneTTL).Unix()
		}
		for _, ref := range refs[:take] {
			vs := map[string]decimal.Decimal{}
			for k, v := range p.sums[ref] {
				if !v.IsZero() {
					vs[k] = v
				}
			}
			if len(vs) > 0 {
				tx.Adds = append(tx.Adds, driver.Add{Ref: ref, Values: vs})
			}
		}
		err := e.store.Commit(ctx, tx)
		e.stats.wu.Add(int64(driver.WriteUnitsOf(e.store, tx) * 10))
		var ce *driver.ConflictError
		switch {
		case err == nil:
			e.stats.txs.Add(1)
			p.rev++
			p.sums, p.folded, p.size = rest, len(rest) == 0, len(tx.Ledgers[0].Body)
			attempt = 1
			continue
		case errors.As(err, &ce):
			e.stats.conflicts.Add(1)
			if err := p.load(ce.Current[p.key]); err != nil {
				return err
			}
		case errors.Is(err, driver.ErrContention):
			e.stats.contention.Add(1)
			if attempt >= e.cfg.MaxAttempts {
				return fmt.Errorf("folding partial %s: gave up after %d attempts: %w", p.key, attempt, err)
			}
			if err := e.cfg.Sleep(ctx, retry.EqualJitter(attempt-1, contentionBase, contentionMax)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("folding partial %s: %w", p.key, err)
		}
		attempt++
		if attempt > 10*e.cfg.MaxAttempts {
			return fmt.Errorf("folding partial %s: it kept changing", p.key)
		}
	}
}

// unfolded reports whether the partial stored under key as e holds sums
// not folded into the aggregates yet (the aggregates lack them until it
// is).
func unfolded(key string, e driver.LedgerEntry) (bool, error) {
	p := Partial{key: key}
	if err := p.load(e); err != nil {
		return false, err
	}
	return len(p.sums) > 0, nil
}

// PartialFolded reports whether a stored partial (its ledger entry) has
// been folded.
func PartialFolded(e driver.LedgerEntry) bool {
	p := Partial{}
	return e.Rev != 0 && p.load(e) == nil && p.folded
}

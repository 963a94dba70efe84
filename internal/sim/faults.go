package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// ErrInjected is wrapped by every error that FaultyStore and FlakyInvoke
// inject. These errors are transient: the same call may succeed next time.
var ErrInjected = errors.New("sim: injected fault")

// dice decides injected faults. A decision is a pure function of the seed,
// the call's content and how many times that same content was seen before,
// so it does not depend on the order in which concurrent goroutines call: a
// caller that works in parallel still gets the same faults on every run, and
// a retried call gets a fresh roll.
type dice struct {
	mu   sync.Mutex
	seen map[uint64]uint64
}

// roll returns a number uniform in [0, 1) for the call whose content hashes
// to h.
func (d *dice) roll(seed, h uint64) float64 {
	d.mu.Lock()
	if d.seen == nil {
		d.seen = make(map[uint64]uint64)
	}
	n := d.seen[h]
	d.seen[h] = n + 1
	d.mu.Unlock()
	x := splitmix(seed ^ splitmix(h^splitmix(n)))
	return float64(x>>11) / (1 << 53)
}

// splitmix is the SplitMix64 finaliser: a bijective mix of 64 bits.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// hashStrings hashes a set of strings, independently of their order.
func hashStrings(kind string, parts ...string) uint64 {
	var sum uint64
	for _, p := range parts {
		h := fnv.New64a()
		h.Write([]byte(p))
		sum += splitmix(h.Sum64())
	}
	h := fnv.New64a()
	h.Write([]byte(kind))
	return splitmix(sum ^ h.Sum64())
}

// FaultyStore wraps a projections.Store and injects transient failures at
// the given rates (probabilities per call, from 0 to 1):
//
//   - CommitFailBefore: Commit returns an error and writes nothing.
//   - CommitFailAfter: Commit writes the transaction, then returns an error:
//     a lost acknowledgement, the worst case, since the caller cannot tell it
//     from the first.
//   - ReadFail: ReadLedgers returns an error.
//
// Injected errors wrap ErrInjected; they are neither a *ConflictError nor
// projections.ErrContention. Errors of the wrapped store pass through.
// Empty transactions are passed through without faults. FaultyStore is safe
// for concurrent use, and its faults are deterministic (see Seed).
type FaultyStore struct {
	Store                                       driver.Store
	CommitFailBefore, CommitFailAfter, ReadFail float64
	// Seed seeds the faults: the same seed and the same sequence of calls give
	// the same faults.
	Seed uint64

	dice   dice
	mu     sync.Mutex
	faults StoreFaults
}

var (
	_ driver.Store              = (*FaultyStore)(nil)
	_ driver.WriteUnitEstimator = (*FaultyStore)(nil)
	_ driver.NameReserver       = (*FaultyStore)(nil)
	_ driver.ActionCounter      = (*FaultyStore)(nil)
	_ driver.KeyLimiter         = (*FaultyStore)(nil)
)

// FaultyTable is a FaultyStore over a table, what engine.Open takes:
// ledger reads and commits go through the faults, scans and row queries
// straight to the table (Reader).
type FaultyTable struct {
	*FaultyStore
	driver.Reader
}

// Table returns f over t, which must be the table f wraps.
func (f *FaultyStore) Table(t driver.Reader) FaultyTable { return FaultyTable{f, t} }

// Open opens an engine of set over f (engine.Open), again while its
// read of the table's marker meets an injected fault: as a function's init
// would be retried.
func (f FaultyTable) Open(ctx context.Context, set *projections.Set, cfg engine.Config) (*engine.Engine, error) {
	for {
		e, err := engine.Open(ctx, f, set, cfg)
		if !errors.Is(err, ErrInjected) {
			return e, err
		}
	}
}

// StoreFaults counts calls and injected faults.
type StoreFaults struct {
	Commits, Reads                                       int // calls
	CommitsFailedBefore, CommitsFailedAfter, ReadsFailed int // injected faults
}

// Total returns the number of injected faults.
func (f StoreFaults) Total() int {
	return f.CommitsFailedBefore + f.CommitsFailedAfter + f.ReadsFailed
}

// NewFaultyStore returns store wrapped with the given seed and no faults;
// set the rates on the result.
func NewFaultyStore(store driver.Store, seed uint64) *FaultyStore {
	return &FaultyStore{Store: store, Seed: seed}
}

// Faults returns the counts so far.
func (f *FaultyStore) Faults() StoreFaults {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faults
}

func (f *FaultyStore) count(fn func(*StoreFaults)) {
	f.mu.Lock()
	fn(&f.faults)
	f.mu.Unlock()
}

// ReadLedgers implements projections.Store.
func (f *FaultyStore) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	f.count(func(s *StoreFaults) { s.Reads++ })
	if f.ReadFail > 0 && f.dice.roll(f.Seed, hashStrings("read", keys...)) < f.ReadFail {
		f.count(func(s *StoreFaults) { s.ReadsFailed++ })
		return nil, fmt.Errorf("%w: ledger read of %d keys failed", ErrInjected, len(keys))
	}
	return f.Store.ReadLedgers(ctx, keys)
}

// Commit implements projections.Store.
func (f *FaultyStore) Commit(ctx context.Context, tx *driver.Tx) error {
	if tx == nil || tx.Len() == 0 {
		return f.Store.Commit(ctx, tx)
	}
	f.count(func(s *StoreFaults) { s.Commits++ })
	u := 1.0
	if f.CommitFailBefore > 0 || f.CommitFailAfter > 0 {
		u = f.dice.roll(f.Seed, txHash(tx))
	}
	if u < f.CommitFailBefore {
		f.count(func(s *StoreFaults) { s.CommitsFailedBefore++ })
		return fmt.Errorf("%w: commit of %d actions failed; nothing written", ErrInjected, tx.Len())
	}
	if err := f.Store.Commit(ctx, tx); err != nil {
		return err
	}
	if u < f.CommitFailBefore+f.CommitFailAfter {
		f.count(func(s *StoreFaults) { s.CommitsFailedAfter++ })
		return fmt.Errorf("%w: commit of %d actions written, acknowledgement lost", ErrInjected, tx.Len())
	}
	return nil
}

// WriteUnits passes on the wrapped store's estimate
// (projections.WriteUnitEstimator), or 0 when it makes none.
func (f *FaultyStore) WriteUnits(tx *driver.Tx) float64 {
	return driver.WriteUnitsOf(f.Store, tx)
}

// ReservesName passes on the wrapped store's reserved names
// (driver.Reserved).
func (f *FaultyStore) ReservesName(name string) bool { return driver.Reserved(f.Store, name) }

// PutActions passes on the wrapped store's count (driver.Actions).
func (f *FaultyStore) PutActions(p driver.RowPut) int {
	return driver.Actions(f.Store, &driver.Tx{Puts: []driver.RowPut{p}})
}

// DeleteActions passes on the wrapped store's count (driver.Actions).
func (f *FaultyStore) DeleteActions(d driver.RowDelete) int {
	return driver.Actions(f.Store, &driver.Tx{Deletes: []driver.RowDelete{d}})
}

// CheckAggregate passes on the wrapped store's key limits, if it has any
// (driver.KeyLimiter).
func (f *FaultyStore) CheckAggregate(ref driver.AggregateRef) error {
	if k, ok := f.Store.(driver.KeyLimiter); ok {
		return k.CheckAggregate(ref)
	}
	return nil
}

// CheckRow passes on the wrapped store's key limits, if it has any.
func (f *FaultyStore) CheckRow(ref driver.RowRef) error {
	if k, ok := f.Store.(driver.KeyLimiter); ok {
		return k.CheckRow(ref)
	}
	return nil
}

// txHash identifies a transaction by the ledger entries (and revisions) and
// the aggregates and rows it writes.
func txHash(tx *driver.Tx) uint64 {
	parts := make([]string, 0, tx.Len())
	for _, l := range tx.Ledgers {
		parts = append(parts, "L"+l.Key+"\x00"+strconv.FormatInt(l.ExpectRev, 10))
	}
	for _, a := range tx.Adds {
		parts = append(parts, "A"+a.Ref.Projection+"\x00"+a.Ref.Key+"\x00"+strconv.Itoa(a.Ref.Shard))
	}
	for _, p := range tx.Puts {
		parts = append(parts, "P"+p.Ref.Projection+"\x00"+p.Ref.Partition+"\x00"+p.Ref.Sort)
	}
	for _, d := range tx.Deletes {
		parts = append(parts, "D"+d.Ref.Projection+"\x00"+d.Ref.Partition+"\x00"+d.Ref.Sort)
	}
	return hashStrings("commit", parts...)
}

// FlakyInvoke wraps a function and makes its invocation fail at the given
// rates: FailBefore, before the function runs (a throttle, a crashed init);
// FailAfter, after it ran (a timeout once its work was done: the work stays,
// the response is lost). Either way the event source mapping sees an
// invocation error, retries the batch and, with bisection, splits it. Faults
// are deterministic as for FaultyStore.
type FlakyInvoke struct {
	Invoke                InvokeFunc
	FailBefore, FailAfter float64
	Seed                  uint64

	dice   dice
	mu     sync.Mutex
	calls  int
	failed int
}

// Call is the InvokeFunc.
func (f *FlakyInvoke) Call(ctx context.Context, payload []byte) ([]byte, error) {
	h := fnv.New64a()
	h.Write(payload)
	u := f.dice.roll(f.Seed, splitmix(h.Sum64()))
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if u < f.FailBefore {
		f.fail()
		return nil, fmt.Errorf("%w: invocation failed before the function ran", ErrInjected)
	}
	resp, err := f.Invoke(ctx, payload)
	if err == nil && u < f.FailBefore+f.FailAfter {
		f.fail()
		return nil, fmt.Errorf("%w: invocation timed out after the function ran", ErrInjected)
	}
	return resp, err
}

func (f *FlakyInvoke) fail() {
	f.mu.Lock()
	f.failed++
	f.mu.Unlock()
}

// Faults returns the number of calls and of injected failures so far.
func (f *FlakyInvoke) Faults() (calls, failed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.failed
}

package archive

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/objstore"
)

// testStore is the directory store (objstore.Dir, without fsync) the
// archive's tests write to, counting its successful Puts: the tests run on
// the real store, never on a fake of it.
type testStore struct {
	*objstore.Dir
	puts atomic.Int64 // successful Put calls
}

func newTestStore(t testing.TB) *testStore {
	return &testStore{Dir: objstore.NewDir(t.TempDir()).WithoutSync()}
}

func (s *testStore) Put(ctx context.Context, key string, body []byte) error {
	err := s.Dir.Put(ctx, key, body)
	if err == nil {
		s.puts.Add(1)
	}
	return err
}

// objects returns every object, by key.
func (s *testStore) objects(t testing.TB) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	err := s.List(ctx, "", func(o objstore.Object) error {
		b, err := objstore.ReadAll(ctx, s, o.Key)
		out[o.Key] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// set writes an object behind the handler's back (uncounted).
func (s *testStore) set(t testing.TB, key string, body []byte) {
	t.Helper()
	if err := s.Dir.Put(context.Background(), key, body); err != nil {
		t.Fatal(err)
	}
}

// remove deletes an object behind the handler's back.
func (s *testStore) remove(t testing.TB, key string) {
	t.Helper()
	if err := s.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
}

// faultStore wraps a Putter and fails writes as a schedule says. Every
// decision is a hash of (seed, invocation, key), not a draw from a shared
// random source, so concurrent writes do not change the outcome.
type faultStore struct {
	inner Putter
	seed  uint64
	// invocation is set by the simulated event source mapping before each
	// invocation.
	invocation atomic.Int64

	// Per invocation: the chance that every write fails (an S3 outage).
	pWholeOutage float64
	// Per invocation: the chance that writes fail one by one, each with
	// pObject.
	pPartial, pObject float64
	// Per write: the chance that the object is stored but the call still
	// fails (a timeout after S3 committed the write).
	pAmbiguous float64

	failed, ambiguous atomic.Int64
}

var errInjected = errors.New("injected S3 failure")

// chance returns a deterministic number in [0, 1) for the parts.
func (f *faultStore) chance(parts ...string) float64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(f.seed >> (8 * i))
	}
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return float64(h.Sum64()>>11) / (1 << 53)
}

func (f *faultStore) Put(ctx context.Context, key string, body []byte) error {
	inv := strconv.FormatInt(f.invocation.Load(), 10)
	if f.chance(inv, "outage") < f.pWholeOutage {
		f.failed.Add(1)
		return errInjected
	}
	if f.chance(inv, "partial") < f.pPartial && f.chance(inv, key, "object") < f.pObject {
		f.failed.Add(1)
		return errInjected
	}
	if f.chance(inv, key, "ambiguous") < f.pAmbiguous {
		if err := f.inner.Put(ctx, key, body); err != nil {
			return err
		}
		f.ambiguous.Add(1)
		return errInjected
	}
	return f.inner.Put(ctx, key, body)
}

// countingPutter records the most writes in flight at once. Its first
// writes wait until wave of them are in flight, so that writes the
// handler lets run at once do overlap, however fast each one is; should
// the handler never have wave in flight (it writes one by one), they go on
// after a while, and max tells. Every write is then held a moment, which a
// handler within its bound cannot notice, so that one letting more writes
// run at once shows it.
type countingPutter struct {
	inner    Putter
	wave     int64
	inFlight atomic.Int64
	max      atomic.Int64
	full     chan struct{} // closed once wave writes are in flight
	open     sync.Once
}

func newCountingPutter(inner Putter, wave int64) *countingPutter {
	return &countingPutter{inner: inner, wave: wave, full: make(chan struct{})}
}

func (c *countingPutter) Put(ctx context.Context, key string, body []byte) error {
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			break
		}
	}
	if n >= c.wave {
		c.open.Do(func() { close(c.full) })
	}
	select {
	case <-c.full:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		c.open.Do(func() { close(c.full) })
	}
	time.Sleep(2 * time.Millisecond)
	return c.inner.Put(ctx, key, body)
}

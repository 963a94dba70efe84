package archive

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// memStore is an in-memory Store for tests: whole objects, replaced
// atomically, like S3.
type memStore struct {
	mu   sync.Mutex
	objs map[string][]byte
	puts atomic.Int64 // successful Put calls
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{objs: map[string][]byte{}} }

func (m *memStore) Put(ctx context.Context, key string, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	m.objs[key] = bytes.Clone(body)
	m.mu.Unlock()
	m.puts.Add(1)
	return nil
}

func (m *memStore) List(ctx context.Context, prefix string, fn func(Object) error) error {
	m.mu.Lock()
	var objs []Object
	for k, v := range m.objs {
		if strings.HasPrefix(k, prefix) {
			objs = append(objs, Object{Key: k, Size: int64(len(v))})
		}
	}
	m.mu.Unlock()
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	for _, o := range objs {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[key]
	if !ok {
		return nil, ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
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

// countingPutter records the most writes in flight at once.
type countingPutter struct {
	inner    Putter
	inFlight atomic.Int64
	max      atomic.Int64
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
	time.Sleep(2 * time.Millisecond)
	return c.inner.Put(ctx, key, body)
}

package objstoretest

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
)

// Faults are what a Faulty store does wrong with its part of the objects.
type Faults struct {
	// AfterEnd fails every read after a body's end (its first io.EOF), as
	// a connection broken after the last byte would: what a reader that
	// drains a body past the end of its decoding meets.
	AfterEnd error
	// Close fails a body's Close (joined to the store's own close error, if
	// any).
	Close error
	// Swap fails every Swap: a claim that cannot be released, a checkpoint
	// that cannot be replaced.
	Swap error
	// List fails every List of a prefix that contains the part.
	List error
}

// Faulty wraps st so that the objects whose keys contain part ("": every
// object) misbehave as f says, their bodies reading whole first: for the
// tests of the stores' users, which must report such an object rather than
// carry on as if all were well.
func Faulty(st objstore.Store, part string, f Faults) objstore.Store {
	return faulty{st, part, f}
}

type faulty struct {
	objstore.Store
	part string
	f    Faults
}

func (s faulty) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := s.Store.Open(ctx, key)
	if err != nil || !strings.Contains(key, s.part) {
		return rc, err
	}
	return &faultyBody{rc: rc, f: s.f}, nil
}

func (s faulty) Swap(ctx context.Context, key string, body []byte, version string) (string, error) {
	if s.f.Swap != nil && strings.Contains(key, s.part) {
		return "", s.f.Swap
	}
	return s.Store.Swap(ctx, key, body, version)
}

func (s faulty) List(ctx context.Context, prefix string, fn func(objstore.Object) error) error {
	if s.f.List != nil && strings.Contains(prefix, s.part) {
		return s.f.List
	}
	return s.Store.List(ctx, prefix, fn)
}

type faultyBody struct {
	rc    io.ReadCloser
	f     Faults
	ended bool
}

func (b *faultyBody) Read(p []byte) (int, error) {
	if b.ended && b.f.AfterEnd != nil {
		return 0, b.f.AfterEnd
	}
	n, err := b.rc.Read(p)
	b.ended = b.ended || err == io.EOF
	return n, err
}

func (b *faultyBody) Close() error { return errors.Join(b.rc.Close(), b.f.Close) }

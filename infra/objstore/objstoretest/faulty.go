package objstoretest

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
)

// BodyFaults are what the bodies of a Faulty store's objects do wrong.
type BodyFaults struct {
	// AfterEnd fails every read after a body's end (its first io.EOF), as
	// a connection broken after the last byte would: what a reader that
	// drains a body past the end of its decoding meets.
	AfterEnd error
	// Close fails the body's Close (joined to the store's own close error,
	// if any).
	Close error
}

// Faulty wraps st so that the bodies of the objects it opens whose keys
// contain part ("": every object) read whole and then misbehave as f says:
// for the tests of readers, which must report such an object rather than
// read on as if all were well.
func Faulty(st objstore.Store, part string, f BodyFaults) objstore.Store {
	return faulty{st, part, f}
}

type faulty struct {
	objstore.Store
	part string
	f    BodyFaults
}

func (s faulty) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := s.Store.Open(ctx, key)
	if err != nil || !strings.Contains(key, s.part) {
		return rc, err
	}
	return &faultyBody{rc: rc, f: s.f}, nil
}

type faultyBody struct {
	rc    io.ReadCloser
	f     BodyFaults
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

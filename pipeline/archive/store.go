package archive

import (
	"context"
	"errors"
	"io"
)

// Putter stores whole objects. It is what the archiver needs of S3.
//
// Put writes body under key, replacing any object of that name. It returns
// nil only once the object is durably stored, entirely: a reader never sees
// part of body, nor a mix of body and an older object. A failed Put may
// leave the old object, the new one or none, but never a partial one. Put
// must be safe for concurrent use; ctx bounds the whole write.
type Putter interface {
	Put(ctx context.Context, key string, body []byte) error
}

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
}

// Source lists and reads objects. It is what the archive readers (ls, cat,
// restore) need.
type Source interface {
	// List calls fn for every object whose key starts with prefix, and
	// stops at fn's first error, returning it. The order is the store's own
	// (S3: by key; a directory: by path segment); callers that need an order
	// sort.
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Open returns the object's body; the caller closes it. A missing
	// object gives an error matching ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Store is both sides: the local directory and S3 implement it.
type Store interface {
	Putter
	Source
}

// ErrNotFound matches the error of opening a missing object.
var ErrNotFound = errors.New("archive: object not found")

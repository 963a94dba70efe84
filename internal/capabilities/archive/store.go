package archive

import (
	"context"
	"io"

	"github.com/tributary/tributary/infra/objstore"
)

// Putter stores whole objects. It is what the archiver needs of S3 (or a
// directory): objstore's stores implement it.
//
// Put writes body under key, replacing any object of that name. It returns
// nil only once the object is durably stored, entirely: a reader never sees
// part of body, nor a mix of body and an older object. A failed Put may
// leave the old object, the new one or none, but never a partial one. Put
// must be safe for concurrent use; ctx bounds the whole write.
type Putter interface {
	Put(ctx context.Context, key string, body []byte) error
}

// Source lists and reads objects. It is what the archive readers (ls, cat,
// restore) need.
type Source interface {
	// List calls fn for every object whose key starts with prefix, in key
	// order, and stops at fn's first error, returning it.
	List(ctx context.Context, prefix string, fn func(objstore.Object) error) error
	// Open returns the object's body; the caller closes it. A missing
	// object gives an error matching objstore.ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

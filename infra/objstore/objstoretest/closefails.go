package objstoretest

import (
	"context"
	"errors"
	"io"

	"github.com/tributary/tributary/infra/objstore"
)

// CloseFails wraps st so that every object it opens reads as it is and then
// fails to close, with err (joined to the store's own close error, if any):
// for the tests of readers, which must report such an object rather than
// read on as if all were well.
func CloseFails(st objstore.Store, err error) objstore.Store { return closeFails{st, err} }

type closeFails struct {
	objstore.Store
	err error
}

func (c closeFails) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := c.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return closeFailsBody{rc, c.err}, nil
}

type closeFailsBody struct {
	io.ReadCloser
	err error
}

func (b closeFailsBody) Close() error { return errors.Join(b.ReadCloser.Close(), b.err) }

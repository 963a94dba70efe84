package objstoretest

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
)

// CloseFails wraps st so that every object it opens whose key contains part
// ("": every object) reads as it is and then fails to close, with err
// (joined to the store's own close error, if any): for the tests of
// readers, which must report such an object rather than read on as if all
// were well.
func CloseFails(st objstore.Store, part string, err error) objstore.Store {
	return closeFails{st, part, err}
}

type closeFails struct {
	objstore.Store
	part string
	err  error
}

func (c closeFails) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := c.Store.Open(ctx, key)
	if err != nil || !strings.Contains(key, c.part) {
		return rc, err
	}
	return closeFailsBody{rc, c.err}, nil
}

type closeFailsBody struct {
	io.ReadCloser
	err error
}

func (b closeFailsBody) Close() error { return errors.Join(b.ReadCloser.Close(), b.err) }

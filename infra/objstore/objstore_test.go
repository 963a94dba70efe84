package objstore_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
)

var errClose = errors.New("connection reset while closing")

// closeFails is a store whose objects read whole but fail to close.
type closeFails struct{ body string }

func (c closeFails) Open(context.Context, string) (io.ReadCloser, error) {
	return struct {
		io.Reader
		io.Closer
	}{strings.NewReader(c.body), c}, nil
}

func (closeFails) Close() error   { return errClose }
func (closeFails) String() string { return "s3://bkt/out" }

// TestReadAllReportsCloseError: an object whose body fails to close is not
// read as if all were well.
func TestReadAllReportsCloseError(t *testing.T) {
	b, err := objstore.ReadAll(context.Background(), closeFails{body: "{}"}, "_summary.json")
	if !errors.Is(err, errClose) {
		t.Errorf("ReadAll: %q, %v; want the close error", b, err)
	}
}

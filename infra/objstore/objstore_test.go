package objstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
)

var errClose = errors.New("connection reset while closing")

// TestReadAllReportsCloseError: an object whose body fails to close is not
// read as if all were well.
func TestReadAllReportsCloseError(t *testing.T) {
	ctx := context.Background()
	dir := objstore.NewDir(t.TempDir())
	if err := dir.Put(ctx, "_summary.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if b, err := objstore.ReadAll(ctx, objstoretest.Faulty(dir, "", objstoretest.Faults{Close: errClose}), "_summary.json"); !errors.Is(err, errClose) {
		t.Errorf("ReadAll: %q, %v; want the close error", b, err)
	}
}

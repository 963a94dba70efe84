// Package boltstoretest opens embedded stores for tests: each one empty, in
// the test's own temporary directory, and closed when the test ends, a
// failed close failing the test.
package boltstoretest

import (
	"path/filepath"
	"testing"

	"github.com/tributary/tributary/infra/boltstore"
)

// Open opens an empty embedded store in a temporary directory of t,
// without fsync (test data need not survive a crash), and closes it when t
// ends; a failed close fails t.
func Open(t testing.TB) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "aggregates.db"), boltstore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

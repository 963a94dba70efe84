package boltstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/drivertest"
	"github.com/tributary/tributary/projections/driver/target"
)

func openTarget(t *testing.T, key target.Key) *TargetStore {
	t.Helper()
	ts, err := OpenTarget(filepath.Join(t.TempDir(), "target.db"), drivertest.TargetName, key, WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

func TestTargetConformance(t *testing.T) {
	drivertest.RunTarget(t, func(t *testing.T, key target.Key) drivertest.Store { return openTarget(t, key) })
}

// TestTargetRecordsItsRemodel: a target file is one remodel's, keyed one
// way; it opens as recorded for readers, and an aggregate store's file
// with data is not a target.
func TestTargetRecordsItsRemodel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "target.db")
	key, _ := target.NewKey("PK", "SK")
	ts, err := OpenTarget(path, "comments-table", key, WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	other, _ := target.NewKey("id:N")
	for _, tt := range []struct {
		name string
		key  target.Key
	}{{"another", key}, {"comments-table", other}} {
		if _, err := OpenTarget(path, tt.name, tt.key, WithoutSync()); err == nil || !strings.Contains(err.Error(), "it is the target of comments-table, keyed PK:S,SK:S") {
			t.Errorf("opened as %s keyed %s: %v", tt.name, tt.key, err)
		}
	}
	ts, err = OpenTarget(path, "", target.Key{}, WithoutSync())
	if err != nil || ts.Name() != "comments-table" || ts.Key != key {
		t.Fatalf("opened as recorded: %v %v", ts, err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}

	agg := filepath.Join(t.TempDir(), "aggregates.db")
	st, err := Open(agg, WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(t.Context(), &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "x", Body: []byte("y")}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTarget(agg, "r", key, WithoutSync()); err == nil || !strings.Contains(err.Error(), "an aggregate store's") {
		t.Errorf("an aggregate store opened as a target: %v", err)
	}
	if _, err := OpenTarget(filepath.Join(t.TempDir(), "new.db"), "", target.Key{}, WithoutSync()); !errors.Is(err, errNoTarget) {
		t.Errorf("a new file opened as recorded: %v, want ErrNoTarget", err)
	}
}

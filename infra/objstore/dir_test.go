package objstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
)

func TestDirConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store { return objstore.NewDir(t.TempDir()) })
}

func TestDirConformanceWithoutSync(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store { return objstore.NewDir(t.TempDir()).WithoutSync() })
}

// TestDirSweep: the temporary files a killed writer leaves are never
// listed, and Sweep removes them, under its prefix only.
func TestDirSweep(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := objstore.NewDir(root)
	if err := d.Put(ctx, "out/entity=A/part-0.json", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	// What a process killed between create and rename leaves.
	for _, p := range []string{"out/entity=A/.tmp-123", "out/.tmp-456", "other/.tmp-789"} {
		path := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// And an abandoned writer of this process.
	w, err := d.Create(ctx, "out/entity=B/part-0.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("never committed")); err != nil {
		t.Fatal(err)
	}
	var listed []string
	if err := d.List(ctx, "", func(o objstore.Object) error { listed = append(listed, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 {
		t.Errorf("listed %q, want the one object", listed)
	}
	n, err := d.Sweep(ctx, "out/")
	if err != nil || n != 3 {
		t.Fatalf("Sweep: %d removed, %v; want 3", n, err)
	}
	var left []string
	err = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		left = append(left, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(left, " ") != "other/.tmp-789 out/entity=A/part-0.json" {
		t.Errorf("left %q", left)
	}
}

// TestDirRefusesLongSegmentClearly: a name longer than NAME_MAX is refused
// by the store, naming the key, before the file system says "file name too
// long".
func TestDirRefusesLongSegmentClearly(t *testing.T) {
	d := objstore.NewDir(t.TempDir())
	key := "entity=" + strings.Repeat("T", 300) + "/part-0.json.gz"
	err := d.Put(context.Background(), key, nil)
	if err == nil || !strings.Contains(err.Error(), "longer than a file name may be (255)") || !strings.Contains(err.Error(), "entity=TTT") {
		t.Errorf("error %v", err)
	}
	if errors.Is(err, os.ErrInvalid) {
		t.Error("the file system was asked")
	}
}

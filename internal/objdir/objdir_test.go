package objdir_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/objdir"
)

func TestDir(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := objdir.New(root)
	if err := d.Put(ctx, "b/two", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "a/one", []byte("1")); err != nil {
		t.Fatal(err)
	}
	w, err := d.Create(ctx, "a/pending")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("not yet"))
	var keys []string
	if err := d.List(ctx, "", func(k string, n int64) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "a/one,b/two" {
		t.Errorf("listed %v: an uncommitted object or a temporary file is visible, or the order is wrong", keys)
	}
	w.Abort()
	if entries, _ := os.ReadDir(filepath.Join(root, "a")); len(entries) != 1 {
		t.Errorf("Abort left %d files in a/, want 1", len(entries))
	}
	r, err := d.Open(ctx, "a/one")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "1" {
		t.Errorf("read %q", b)
	}
	if _, err := d.Open(ctx, "a/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing object: %v", err)
	}
	if err := d.Delete(ctx, "a/one"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "a/one"); err != nil {
		t.Errorf("deleting a missing object: %v", err)
	}
	for _, key := range []string{"", "/a", "a//b", "a/../b", "a\\b", "a\x00"} {
		if err := d.Put(ctx, key, nil); err == nil {
			t.Errorf("key %q accepted", key)
		}
	}
	if err := objdir.New(filepath.Join(root, "none")).List(ctx, "", func(string, int64) error { return errors.New("called") }); err != nil {
		t.Errorf("a missing root should list nothing: %v", err)
	}
}

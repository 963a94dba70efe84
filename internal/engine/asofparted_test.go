package engine_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/engine"
)

// TestPartedLoadRefusesBadHandoffs: a hand-off that is not a step's
// (empty records, one cut short, records of no kind the check writes, an
// in-tick list that is not one) is refused with an error naming it, never
// a panic, never compared as if it were.
func TestPartedLoadRefusesBadHandoffs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, set string
		body      []byte
		want      string
	}{
		{"an empty record", engine.HandoffParts, []byte{0}, "a record of 0 bytes"},
		{"a record cut short", engine.HandoffParts, []byte{5, 'a', 'b'}, "cut short"},
		{"a record of no kind", engine.HandoffParts, []byte{7, 'z', 0, 0, 0, 0, 0, 0}, "of kind"},
		{"an item record cut short", engine.HandoffItems, []byte{9, 'e'}, "cut short"},
		{"another set", "nonsense", []byte{1, 'a'}, `no hand-off set "nonsense"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := engine.NewAsOfCheck(time.Now(), "")
			check.Dir = t.TempDir()
			if err := check.Parted(4); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = check.Close() }()
			err := check.Load(tc.set, 0, bytes.NewReader(tc.body), "s3://work/verify/j/parts/0000/file-000001.x")
			if err == nil && tc.set == engine.HandoffParts {
				_, err = check.ComparePart(ctx, 0)
			}
			if err == nil && tc.set == engine.HandoffItems {
				err = check.Join(0)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error naming %q", err, tc.want)
			}
		})
	}
	check := engine.NewAsOfCheck(time.Now(), "")
	for _, body := range [][]byte{{0}, {0xff, 0xff, 0xff, 0xff, 0x0f}, {4, 1, 'k'}} {
		if err := check.ReadInTick(bytes.NewReader(body), "intick"); err == nil || !strings.Contains(err.Error(), "intick") {
			t.Errorf("in-tick entries %x: %v, want an error naming them", body, err)
		}
	}
}

// FuzzPartedLoad: whatever bytes a hand-off holds, loading and comparing
// it ends in a result or an error, never a panic.
func FuzzPartedLoad(f *testing.F) {
	f.Add([]byte{0}, false)
	f.Add([]byte{3, 'a', 1, 2}, true)
	f.Fuzz(func(t *testing.T, body []byte, items bool) {
		check := engine.NewAsOfCheck(time.Now(), "")
		check.Dir = t.TempDir()
		if err := check.Parted(1); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = check.Close() }()
		set := engine.HandoffParts
		if items {
			set = engine.HandoffItems
		}
		if err := check.Load(set, 0, bytes.NewReader(body), "fuzz"); err != nil {
			return
		}
		if items {
			_ = check.Join(0)
			return
		}
		_, _ = check.ComparePart(context.Background(), 0)
		_ = check.ReadInTick(bytes.NewReader(body), "fuzz")
	})
}

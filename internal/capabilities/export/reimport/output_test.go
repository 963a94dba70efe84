package reimport_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
)

// TestVerifyPart: a part is checked whole against its manifest entry, by
// size and by MD5 (a changed byte keeps the size).
func TestVerifyPart(t *testing.T) {
	ctx := context.Background()
	out, _ := repartitioned(t, repartition.Options{})
	p := out.Entities[0].Parts[0]
	if err := out.VerifyPart(ctx, p); err != nil {
		t.Fatalf("an untouched part: %v", err)
	}
	path := filepath.Join(out.Store().String(), filepath.FromSlash(p.Key))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
		says string
	}{
		{"a changed byte", append(append(append([]byte(nil), b[:len(b)/2]...), b[len(b)/2]^1), b[len(b)/2+1:]...), "MD5"},
		{"truncated", b[:len(b)-1], "bytes, the manifest says"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, tc.body, 0o644); err != nil {
				t.Fatal(err)
			}
			err := out.VerifyPart(ctx, p)
			if !errors.Is(err, export.ErrCorrupt) || !strings.Contains(err.Error(), p.Key) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("VerifyPart: %v, want a corrupt-data error naming the part and %q", err, tc.says)
			}
		})
	}
}

// TestPartBodyFaults: a part whose body fails at its end (a read past the
// last byte, which ReadPart drains to so as to hash the whole part, or its
// close) fails VerifyPart and ReadPart rather than reading as if all were
// well, in every compression.
func TestPartBodyFaults(t *testing.T) {
	ctx := context.Background()
	errEnd, errClose := errors.New("connection reset after the last byte"), errors.New("connection reset while closing")
	for _, c := range []repartition.Compression{repartition.Gzip, repartition.Zstd, repartition.None} {
		out, _ := repartitioned(t, repartition.Options{Compression: c})
		p := out.Entities[0].Parts[0]
		for _, tc := range []struct {
			name   string
			faults objstoretest.Faults
			verify bool // VerifyPart meets it too (it reads to the end, not past it)
			want   error
			named  bool // the error names the part (a store's own close errors name their objects)
		}{
			{"read after the end", objstoretest.Faults{AfterEnd: errEnd}, false, errEnd, true},
			{"close", objstoretest.Faults{Close: errClose}, true, errClose, false},
		} {
			t.Run(string(c)+"/"+tc.name, func(t *testing.T) {
				faulty, err := reimport.OpenOutput(ctx, objstoretest.Faulty(out.Store().(objstore.Store), "/part-", tc.faults))
				if err != nil {
					t.Fatal(err)
				}
				if err := faulty.ReadPart(ctx, p, func([]byte, int) error { return nil }); !errors.Is(err, tc.want) || tc.named && !strings.Contains(err.Error(), p.Key) {
					t.Errorf("ReadPart: %v, want %v", err, tc.want)
				}
				if err := faulty.VerifyPart(ctx, p); tc.verify != errors.Is(err, tc.want) {
					t.Errorf("VerifyPart: %v; want %v: %v", err, tc.want, tc.verify)
				}
			})
		}
	}
}

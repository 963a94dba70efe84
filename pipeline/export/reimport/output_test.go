package reimport_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline/export"
	"github.com/tributary/tributary/pipeline/export/repartition"
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

package repartition_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
)

// holdingStore holds every part's creation until released, and says when
// the first is there: a run caught in the middle of its work, its claim
// taken, writing nothing while held.
type holdingStore struct {
	objstore.Store
	once    sync.Once
	writing chan struct{} // closed at the first part's creation
	release chan struct{} // the creations go on once this is closed
}

func newHoldingStore(st objstore.Store) *holdingStore {
	return &holdingStore{Store: st, writing: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdingStore) Create(ctx context.Context, key string) (objstore.Writer, error) {
	if strings.Contains(key, "/part-") {
		h.once.Do(func() { close(h.writing) })
		<-h.release
	}
	return h.Store.Create(ctx, key)
}

// TestConcurrentRunsRefused starts a repartition, holds it in the middle of
// its writes, and starts a second one into the same output with another
// part size (one output, two --max-part-mb). The second
// is refused, naming the first, before it writes anything; the first ends
// with an output entirely its own. Once it is done, a third run may go.
func TestConcurrentRunsRefused(t *testing.T) {
	ctx := context.Background()
	e, _ := exportgen.Generated(t, 11, 3000, 4<<20, 3)
	dir := t.TempDir()
	out := objstore.NewDir(dir).WithoutSync()
	held := newHoldingStore(out)
	first, err := repartition.NewRepartitioner(e, nil, held, repartition.Options{MaxPartBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := first.Run(ctx, 2, false)
		done <- err
	}()
	select {
	case <-held.writing:
	case err := <-done:
		t.Fatalf("the first run ended before writing a part: %v", err)
	}
	before := exportgen.ReadTree(t, dir)
	second, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{MaxPartBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = second.Run(ctx, 2, false)
	var heldErr *objstore.HeldError
	if !errors.As(err, &heldErr) || !errors.Is(err, objstore.ErrHeld) || !strings.Contains(err.Error(), "_run.json") {
		t.Fatalf("second run: %v, want it refused with a HeldError naming the claim", err)
	}
	if after := exportgen.ReadTree(t, dir); len(after) != len(before) {
		t.Errorf("the refused run changed the output: %d files before, %d after", len(before), len(after))
	}
	close(held.release)
	if err := <-done; err != nil {
		t.Fatalf("first run: %v", err)
	}
	o, err := reimport.OpenOutput(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if o.Summary.Fingerprint != first.Fingerprint() {
		t.Errorf("the output's summary is of fingerprint %s, not the first run's %s", o.Summary.Fingerprint, first.Fingerprint())
	}
	exportgen.OutputLines(t, out) // every part reads back, matching its manifest
	// The first run released the output: the next run goes.
	third, _ := repartition.NewRepartitioner(e, nil, out, repartition.Options{MaxPartBytes: 64 << 10})
	if _, err := third.Run(ctx, 2, false); err != nil {
		t.Fatalf("a run after the first ended: %v", err)
	}
}

// TestOutInsideExportRefused: an output inside the export's directory (or
// one that holds it) would be written among the export's objects: refused.
func TestOutInsideExportRefused(t *testing.T) {
	src, dir, _ := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, src)
	for _, out := range []string{
		filepath.Join(dir, e.Dir, "split"),
		filepath.Join(dir, e.Dir),
		dir,
		filepath.Join(dir, "AWSDynamoDB"),
	} {
		_, err := repartition.NewRepartitioner(e, nil, objstore.NewDir(out), repartition.Options{})
		if err == nil || !strings.Contains(err.Error(), "overlaps the export") {
			t.Errorf("--out %s: %v, want it refused", out, err)
		}
	}
	beside := filepath.Join(t.TempDir(), "split")
	if _, err := repartition.NewRepartitioner(e, nil, objstore.NewDir(beside), repartition.Options{}); err != nil {
		t.Errorf("--out beside the export: %v", err)
	}
	if _, err := os.Stat(beside); err == nil {
		t.Error("preparing a run wrote to the output")
	}
}

// TestFinishChecksPartSizes: a part that another writer replaced after its
// record was committed (the other run's bytes) fails the finish,
// naming the part, instead of a summary that says complete.
func TestFinishChecksPartSizes(t *testing.T) {
	ctx := context.Background()
	r, dir, _ := fixtureRepartitioner(t, repartition.Options{})
	if _, err := r.Begin(ctx, false); err != nil {
		t.Fatal(err)
	}
	var part string
	for _, k := range r.DataFiles() {
		rec, _, err := r.ProcessFile(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if part == "" && len(rec.Parts) > 0 {
			part = rec.Parts[0].Key
		}
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(part)), []byte("another run's bytes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := r.Finish(ctx)
	if err == nil || !strings.Contains(err.Error(), part) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("finish over a replaced part: %v, want an error naming %s and its size", err, part)
	}
	if _, err := os.Stat(filepath.Join(dir, repartition.SummaryKey)); err == nil {
		t.Error("a summary was written over a replaced part")
	}
}

// fixtureRepartitioner prepares a repartition of the fixture's full export
// into a fresh directory, and returns it, the directory and the fixture.
func fixtureRepartitioner(t *testing.T, opts repartition.Options) (*repartition.Repartitioner, string, *exportgen.Fixture) {
	t.Helper()
	src, _, fx := exportgen.CopyFixture(t)
	e := exportgen.OpenFixture(t, src)
	dir := t.TempDir()
	r, err := repartition.NewRepartitioner(e, nil, objstore.NewDir(dir).WithoutSync(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir, fx
}

package backfill_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
)

// changingSource serves one data file as a stream that cannot seek: the
// exported object the first time it is opened, another one after (a file
// written over in place between its check and its read).
type changingSource struct {
	*objstore.Dir
	key          string
	orig, other  []byte
	opens        atomic.Int64
	alwaysOrigin bool
}

func (s *changingSource) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if key != s.key {
		return s.Dir.Open(ctx, key)
	}
	if s.opens.Add(1) == 1 || s.alwaysOrigin {
		return io.NopCloser(bytes.NewReader(s.orig)), nil
	}
	return io.NopCloser(bytes.NewReader(s.other)), nil
}

// TestFileChangedWhileRead: a data file whose object changes after it was
// proven the exported one, while it is read, has items applied from the
// other object before its end shows it: the job refuses the file, and
// every later run of the job, with the exported object back, refuses it
// too, saying to backfill into a new store, rather than pass its items
// over as the export's and call itself complete.
func TestFileChangedWhileRead(t *testing.T) {
	ctx := context.Background()
	dir := objstore.NewDir(t.TempDir()).WithoutSync()
	if err := exportgen.CopyDir(ctx, dir, exportgen.FixtureDir()); err != nil {
		t.Fatal(err)
	}
	fx := exportgen.FixtureItems(t)
	full, err := export.OpenExport(ctx, dir, fx.Full.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := full.Files[0]
	orig, err := objstore.ReadAll(ctx, dir, full.DataKey(f))
	if err != nil {
		t.Fatal(err)
	}
	data := exportgen.Gunzip(t, orig)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(bytes.Replace(data, []byte(`"status":{"S":"PENDING"}`), []byte(`"status":{"S":"SHIPPED"}`), 1)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	st := boltstoretest.Open(t)
	run := func(src *changingSource) error {
		full, err := export.OpenExport(ctx, src, fx.Full.Dir, export.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		job, err := backfill.Open(full, nil, e, st, seed.Set(), backfill.Options{BatchSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := job.Run(ctx, 1)
		if sum.Complete {
			t.Errorf("the job calls itself complete: %+v", sum)
		}
		return err
	}
	err = run(&changingSource{Dir: dir, key: full.DataKey(f), orig: orig, other: buf.Bytes()})
	if !errors.Is(err, backfill.ErrRefused) || !errors.Is(err, export.ErrNotExported) || !strings.Contains(err.Error(), "backfill into a new store") {
		t.Fatalf("the file changed while read: %v, want a refusal saying to backfill into a new store", err)
	}
	err = run(&changingSource{Dir: dir, key: full.DataKey(f), orig: orig, alwaysOrigin: true})
	if !errors.Is(err, backfill.ErrRefused) || !strings.Contains(err.Error(), "an earlier run of job") || !strings.Contains(err.Error(), "backfill into a new store") {
		t.Fatalf("the rerun with the exported object back: %v, want the file refused again", err)
	}
}

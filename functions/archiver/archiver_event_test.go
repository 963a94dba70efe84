package archiver_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/functions/archiver"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/projections"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestArchiverEvent runs the archiver's `sam local invoke` event through
// its handler, archiving into a directory: the two TTL removals land in
// their partitions, the insert is ignored, and the metrics line is written.
func TestArchiverEvent(t *testing.T) {
	dir := t.TempDir()
	var metrics bytes.Buffer
	cfg, err := archiver.LoadConfig(vars(map[string]string{"ARCHIVE_DIR": dir, "ARCHIVE_PREFIX": "ttl"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := archiver.New(cfg, &projections.Environment{}, objstore.NewDir(dir), quiet(), &metrics)
	if err != nil {
		t.Fatal(err)
	}
	event, err := os.ReadFile(filepath.Join("testdata", "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Invoke(context.Background(), event)
	if err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	for _, f := range []string{
		"ttl/entity=Comment/date=2025-12-31/4421584500000000017450439091.jsonl.gz",
		"ttl/entity=Comment/date=2026-01-01/4421584500000000017450439093.jsonl.gz",
	} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(metrics.String(), `"ArchivedItems":2`) || !strings.Contains(metrics.String(), `"IgnoredRecords":1`) {
		t.Errorf("metrics:\n%s", metrics.String())
	}
}

package function_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/functions/function"
	"github.com/tributary/tributary/infra/objstore"
)

// TestArchiverEvent runs the archiver's `sam local invoke` event through
// its handler, archiving into a directory: the two TTL removals land in
// their partitions, the insert is ignored, and the metrics line is written.
func TestArchiverEvent(t *testing.T) {
	dir := t.TempDir()
	var metrics bytes.Buffer
	cfg, err := function.LoadArchiverConfig(env(map[string]string{"ARCHIVE_DIR": dir, "ARCHIVE_PREFIX": "ttl"}))
	if err != nil {
		t.Fatal(err)
	}
	p := function.NewArchiver(cfg, objstore.NewDir(dir), quiet(), &metrics)
	event, err := os.ReadFile(filepath.Join("..", "archiver", "testdata", "event.json"))
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

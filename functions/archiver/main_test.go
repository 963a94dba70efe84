package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestEvent runs testdata/event.json (also the `sam local invoke` event)
// through the function as main builds it, archiving into a directory: the
// two TTL removals land in their partitions, the insert is ignored, and the
// metrics line is written.
func TestEvent(t *testing.T) {
	dir := t.TempDir()
	var metrics bytes.Buffer
	p, err := newProcessor(context.Background(), env(map[string]string{"ARCHIVE_DIR": dir, "ARCHIVE_PREFIX": "ttl"}), &metrics)
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

// TestBadConfig: every problem is reported at init, together.
func TestBadConfig(t *testing.T) {
	_, err := newProcessor(context.Background(), env(map[string]string{
		"ARCHIVE_DIR":        "/tmp/x",
		"ARCHIVE_KMS_KEY_ID": "alias/k",
		"ARCHIVE_PREFIX":     "/lead",
	}), nil)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"ARCHIVE_KMS_KEY_ID needs ARCHIVE_BUCKET", "ARCHIVE_PREFIX"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

package compactor

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/internal/capabilities/archive/lake"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

func TestLoadConfig(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // a substring of the error; "" for none
	}{
		{map[string]string{"ARCHIVE_BUCKET": "archive-bucket"}, ""},
		{map[string]string{"ARCHIVE_BUCKET": "archive-bucket", "OLDER_THAN": "0s", "KEEP_OBJECTS": "true", "COLUMNS": "status:string"}, ""},
		{map[string]string{}, "set ARCHIVE_BUCKET"},
		{map[string]string{"ARCHIVE_BUCKET": "archive-bucket", "OLDER_THAN": "2 days"}, "OLDER_THAN"},
		{map[string]string{"ARCHIVE_BUCKET": "archive-bucket", "OLDER_THAN": "-1h"}, "OLDER_THAN"},
		{map[string]string{"ARCHIVE_BUCKET": "archive-bucket", "KEEP_OBJECTS": "yes"}, "KEEP_OBJECTS"},
		{map[string]string{"ARCHIVE_BUCKET": "archive-bucket", "COLUMNS": "pk:string"}, "COLUMNS"},
		{map[string]string{"ARCHIVE_DIR": "d", "ARCHIVE_KMS_KEY_ID": "k"}, "ARCHIVE_KMS_KEY_ID needs ARCHIVE_BUCKET"},
		{map[string]string{"ARCHIVE_BUCKET": "archive-bucket", "ARCHIVE_PREFIX": "a/entity=x"}, "ARCHIVE_PREFIX"},
	} {
		c, err := LoadConfig(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
		if tc.want == "" && tc.env["OLDER_THAN"] == "" && c.OlderThan != lake.DefaultOlderThan {
			t.Errorf("default OLDER_THAN %s", c.OlderThan)
		}
	}
}

// TestInvoke: a scheduled event compacts the archive the archiver wrote
// and answers with the compaction's result; a second is a no-op.
func TestInvoke(t *testing.T) {
	ctx := context.Background()
	dir := objstore.NewDir(t.TempDir())
	event, err := os.ReadFile("../../internal/capabilities/archive/testdata/event.json")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := pipeline.NewStreamsProcessor(archive.New(dir, archive.Options{Prefix: "ttl", Logger: quiet}), pipeline.Config{Logger: quiet})
	if _, err := p.Invoke(ctx, event); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Prefix: "ttl", OlderThan: 0}, &projections.Environment{}, dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(ctx, []byte(`{"source":"aws.scheduler"}`))
	if err != nil {
		t.Fatal(err)
	}
	var res lake.Result
	if err := json.Unmarshal(out, &res); err != nil || res.Inputs != 5 || res.Rows != 7 || len(res.Written) != 5 || res.Removed != 5 {
		t.Fatalf("response %s (%v)", out, err)
	}
	for _, k := range []string{`"partitions":5`, `"written":["ttl/compacted/entity=CartItem/date=2025-12-31/4421584500000000017450439097-`, `"removed":5`} {
		if !strings.Contains(string(out), k) {
			t.Errorf("response lacks %s: %s", k, out)
		}
	}
	out, err = h.Invoke(ctx, nil)
	if err != nil || !strings.Contains(string(out), `"partitions":0`) {
		t.Fatalf("second run: %s %v", out, err)
	}
}

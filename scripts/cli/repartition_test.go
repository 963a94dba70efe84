package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

const (
	exportFixture = "../../internal/capabilities/export/testdata/export"
	fullExport    = exportFixture + "/AWSDynamoDB/01796032802314-fa5ad9a8"
	incExport     = exportFixture + "/AWSDynamoDB/01796032804099-e675cc21"
)

// exportAWSEnv points the AWS SDK at nothing but what the test sets.
func exportAWSEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
}

func TestExportCommandsUsage(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"repartition"}, 2, "--out is required"},
		{[]string{"repartition", "--out", "x"}, 2, "--export is required"},
		{[]string{"repartition", "--export", fullExport, "--out", "x", "--compression", "lz4"}, 2, "want gzip, zstd or none"},
		{[]string{"repartition", "--export", fullExport, "--out", "x", "--transform", "nope"}, 2, `no transform "nope" (known: comments-table)`},
		{[]string{"repartition", "--export", incExport, "--out", t.TempDir()}, 2, "is an incremental export"},
		{[]string{"repartition", "--export", exportFixture, "--out", t.TempDir()}, 1, "holds 2 exports"},
		{[]string{"repartition", "-h"}, 0, "-transform"},
		{[]string{"reimport"}, 2, "--from is required"},
		{[]string{"reimport", "--from", "x"}, 2, "give one of --import-table"},
		{[]string{"reimport", "--from", "x", "--import-table", "t"}, 2, "exactly one --entity"},
		{[]string{"reimport", "--from", "x", "--bulk-put", "--entity", "Comment"}, 2, "--bulk-put needs --table"},
		{[]string{"reimport", "--from", "x", "--bulk-put", "--table", "t", "--entity", "Comment", "--if-newer"}, 2, "--bulk-put --if-newer"},
		{[]string{"reimport", "--from", "x", "--bulk-put", "--table", "t", "--entity", "Comment", "--max-wcu", "10"}, 2, "at least 1024"},
		{[]string{"reimport", "--from", t.TempDir(), "--table", "t"}, 1, "repartition output is incomplete"},
		{[]string{"verify", "--store", "x"}, 2, "--export is required"},
		{[]string{"verify", "--export", fullExport}, 2, "give --store DIR or --table NAME"},
		{[]string{"verify", "--export", fullExport, "--store", "x", "--projection", "nope"}, 2, `unknown projection nope`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
}

func TestRepartitionCommand(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "repartition", "--export", fullExport, "--incremental", incExport, "--out", out,
		"--transform", "comments-table", "--workers", "3", "--no-sync")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"(5 data files, 913 items; 1 incremental exports touching", "Comment", "_unknown", "Order/Archived:2026?", "913 items in,", "transform comments-table", "incremental:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// The comments moved.
	b, err := os.ReadFile(filepath.Join(out, "entity=Comment", "part-_incremental-0000.json.gz"))
	if err != nil {
		matches, _ := filepath.Glob(filepath.Join(out, "entity=Comment", "part-*"))
		if len(matches) == 0 {
			t.Fatal("no Comment parts")
		}
		b, _ = os.ReadFile(matches[0])
	}
	zr, _ := gzip.NewReader(bytes.NewReader(b))
	raw, _ := io.ReadAll(zr)
	if !strings.Contains(string(raw), `"PK":{"S":"DOC#`) {
		t.Errorf("Comment part not transformed: %.200s", raw)
	}
	// Again: already complete.
	code, stdout, _ = runCLI(t, "repartition", "--export", fullExport, "--incremental", incExport, "--out", out, "--transform", "comments-table")
	if code != 0 || !strings.Contains(stdout, "already complete") {
		t.Errorf("rerun: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, "repartition", "--list-transforms")
	if code != 0 || !strings.Contains(stdout, "comments-table") || !strings.Contains(stdout, "types: Comment") {
		t.Errorf("--list-transforms: %d %s", code, stdout)
	}
}

func TestRepartitionCommandBadLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(exportFixture)); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "AWSDynamoDB", "01796032802314-fa5ad9a8")
	files, _ := filepath.Glob(filepath.Join(exp, "data", "*.json.gz"))
	var target string
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Size() > 0 {
			target = f
			break
		}
	}
	b, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, b[:len(b)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "repartition", "--export", exp, "--out", t.TempDir(), "--skip-md5")
	if code != 1 || !strings.Contains(stderr, filepath.Base(target)+" line ") || !strings.Contains(stderr, "truncated") {
		t.Errorf("exit %d, stderr %q; want 1, naming %s and a line, and saying truncated", code, stderr, filepath.Base(target))
	}
}

// simulatedStore fills an embedded store under dir (--store dir) with the
// seed projections over a simulated workload of changes, delivered as
// Lambda delivers DynamoDB Streams (retries, bisection, redelivered
// batches, failed invocations), and returns the workload's history.
func simulatedStore(t *testing.T, dir string, changes int) *sim.History {
	t.Helper()
	ctx := context.Background()
	h, err := sim.Workload{Seed: 1, Changes: changes, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(filepath.Join(dir, StoreFile), boltstore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: quiet, Ignore: []string{"User", "Workspace", "Cart"}})
	if err != nil {
		t.Fatal(err)
	}
	p := pipeline.NewStreamsProcessor(eng, pipeline.Config{Logger: quiet})
	invoke := &sim.FlakyInvoke{Invoke: p.Invoke, Seed: 2, FailBefore: 0.02, FailAfter: 0.02}
	esm := &sim.ESM{BatchSize: 100, Bisect: true, RedeliverRate: 0.05, MaxAttempts: 10_000, Seed: 3}
	if _, err := esm.Run(ctx, sim.StreamsShards(h.Records), invoke.Call); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestVerifyCommand fills a store through the engine (simulatedStore),
// exports the simulated table's final items, and verifies: they agree. A
// second export with one order changed and one comment missing disagrees,
// naming the aggregates.
func TestVerifyCommand(t *testing.T) {
	ctx := context.Background()
	storeDir := t.TempDir()
	items := simulatedStore(t, storeDir, 3000).Table.Items()
	write := func(dir string, items []pipeline.Item) string {
		e := exportgen.Export{ID: "01796040000000-0000abcd", Time: sim.DefaultStart.Add(time.Hour), Files: 3}
		if _, err := exportgen.WriteFull(ctx, objstore.NewDir(dir).WithoutSync(), e, func(yield func(pipeline.Item) bool) {
			for _, it := range items {
				if !yield(it) {
					return
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	good := write(t.TempDir(), items)
	code, stdout, stderr := runCLI(t, "verify", "--export", good, "--store", storeDir)
	if code != 0 || !strings.Contains(stdout, "AGREE") {
		t.Fatalf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Drift: one PAID order's total changed, one player gone.
	var drifted []pipeline.Item
	changed, dropped := false, false
	for _, it := range items {
		t2 := strAttr(it, "EntityType")
		switch {
		case !changed && t2 == "Order" && strAttr(it, "status") == "PAID":
			c := make(pipeline.Item, len(it))
			for k, v := range it {
				c[k] = v
			}
			c["total"] = numAttr("99999.99")
			drifted = append(drifted, c)
			changed = true
			continue
		case !dropped && t2 == "Player":
			dropped = true
			continue
		}
		drifted = append(drifted, it)
	}
	bad := write(t.TempDir(), drifted)
	code, stdout, _ = runCLI(t, "verify", "--export", bad, "--store", storeDir)
	if code != 1 || !strings.Contains(stdout, "MISMATCH") || !strings.Contains(stdout, "revenue: got") || !strings.Contains(stdout, ": unexpected") {
		t.Errorf("drifted export: exit %d\n%s", code, stdout)
	}
}

func strAttr(it pipeline.Item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func numAttr(v string) *types.AttributeValueMemberN { return &types.AttributeValueMemberN{Value: v} }

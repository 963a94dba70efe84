package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
)

// TestStatusTableIntegration: `status --table` of a DynamoDB aggregate
// table on the test server — a shadow's set (one projection of the
// binary's) backfilled from the fixture export, kept current from the
// stream with `process --projection`, and a data file's partial a stopped
// backfill worker left unfolded — prints the set and its fingerprint
// against the binary's, the backfill's marker, the partial, the ledger's
// items and the newest change applied per source; --json says the same.
func TestStatusTableIntegration(t *testing.T) {
	ctx := context.Background()
	_, ddb, _ := motoExportEnv(t)
	url := awstest.MotoURL(t)
	aggs := awstest.UniqueName(t, "status")
	awstest.DeleteTableAtEnd(t, ddb, aggs)
	table := []string{"--table", aggs, "--endpoint", url}
	for _, args := range [][]string{
		// One worker: the test server fails concurrent transactions now
		// and then (a Python "dictionary changed size during iteration").
		{"backfill", "--export", fullExport, "--projection", "order-totals", "--workers", "1"},
		{"process", "--events", streamsEvent, "--projection", "order-totals"},
	} {
		if code, out, stderr := runCLI(t, append(args, table...)...); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}

	// A worker of a backfill that stopped before folding its file: two
	// orders of one user, their addition to the user's total in the
	// file's partial.
	sub, err := seed.Set().Select("order-totals")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(ctx, dynamostore.New(ddb, aggs), sub, engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	partial := engine.PartialPrefix + "stopped-job/0123456789abcdef"
	p, err := eng.OpenPartial(ctx, partial)
	if err != nil {
		t.Fatal(err)
	}
	asOf := time.Date(2026, 11, 30, 10, 0, 2, 0, time.UTC)
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	dec.ExportTime = asOf
	var batch []pipeline.Change
	for i, id := range []string{"o901", "o902"} {
		c, err := dec.DecodeItem([]byte(`{"Item":{"EntityType":{"S":"Order"},"PK":{"S":"USER#u901"},"SK":{"S":"ORDER#2026-11-29#`+id+`"},"currency":{"S":"EUR"},"itemCount":{"N":"1"},"orderDate":{"S":"2026-11-29"},"orderId":{"S":"`+id+`"},"status":{"S":"PAID"},"total":{"N":"5"},"userId":{"S":"u901"},"version":{"N":"1"}}}`), "data/stopped.json.gz", i+1)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, c)
	}
	if err := eng.HandleBatchInto(ctx, batch, p); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runCLI(t, append([]string{"status"}, table...)...)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^table ` + regexp.QuoteMeta(aggs) + `$`),
		regexp.MustCompile(`(?m)^projection set \(recorded \S+Z\):\n  order-totals@9beaaa6e01a81ef9  this binary: same\n  \(cart-contents: in this binary's set, not the store's\)$`),
		regexp.MustCompile(`(?m)^backfill: job [0-9a-f]{16} of arn:aws:dynamodb:eu-west-1:111122223333:table/app/export/01796032802314-fa5ad9a8, as of 2026-11-30T10:00:02Z, 5 data files, started \S+Z, completed \S+Z$`),
		regexp.MustCompile(`(?m)^  stream: not caught up yet; apply it from 2026-11-30T10:00:02Z on`),
		regexp.MustCompile(`(?m)^partials not folded: 1 \(the aggregates lack their sums until the backfill finishes\)\n  ` + regexp.QuoteMeta(partial) + `$`),
		regexp.MustCompile(`(?m)^items in the ledger: 161$`),
		regexp.MustCompile(`(?m)^newest change applied from stream e7a2b99cffabf0fe: 2026-11-30T10:15:42Z \(1 items\)\nnewest change applied from export: 2026-11-30T10:00:02Z \(160 items\)$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("status --table lacks %s:\n%s", want, out)
		}
	}

	code, out, stderr = runCLI(t, append([]string{"status", "--json"}, table...)...)
	if code != 0 {
		t.Fatalf("status --json: exit %d\n%s%s", code, out, stderr)
	}
	var s struct {
		Store    string
		Set      []struct{ Name, Fingerprint string }
		Backfill *struct {
			Export    string
			Completed time.Time
		}
		Sources []struct {
			Source string
			Newest time.Time
			Items  int64
		}
		Items    int64
		Unfolded []string
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if s.Store != "table "+aggs || len(s.Set) != 1 || s.Set[0].Name != "order-totals" || s.Backfill == nil || s.Backfill.Completed.IsZero() ||
		s.Items != 161 || len(s.Unfolded) != 1 || s.Unfolded[0] != partial || len(s.Sources) != 2 || !s.Sources[0].Newest.Equal(time.Date(2026, 11, 30, 10, 15, 42, 0, time.UTC)) {
		t.Errorf("status --json of the table: %+v\n%s", s, out)
	}
}

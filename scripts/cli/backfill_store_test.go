package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
)

// openStore opens the embedded store of the store directory dir and
// returns it with a func that closes it, failing the test on an error.
func openStore(t *testing.T, dir string) (*boltstore.Store, func()) {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	return st, func() {
		t.Helper()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// markerFields returns the fields of the backfill marker of st as JSON
// decodes them, and its revision.
func markerFields(ctx context.Context, t *testing.T, st driver.Store) (map[string]any, int64) {
	t.Helper()
	got, err := st.ReadLedgers(ctx, []string{backfill.MarkerKey})
	if err != nil {
		t.Fatal(err)
	}
	e := got[backfill.MarkerKey]
	if e.Rev == 0 {
		t.Fatal("the store has no backfill marker")
	}
	var m map[string]any
	if err := json.Unmarshal(e.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m, e.Rev
}

// TestBackfillKeyAttributesOfTheStore: a shadow of the season leaderboard
// (which reads Player items only) attached before the fixture's export,
// and the stream applied a change of a player to it, keyed PK,SK as every
// stream record of the table is. A backfill given the key attributes PK
// alone is refused before it reads anything, naming both sets of key
// attributes, where it used to complete: the fixture's players have a
// partition key each, so no two of them meet in the ledger under PK, the
// other items sharing their partition keys are of types no projection
// reads and, one item a batch, meet in no batch either; and the player the
// stream changed would have been counted under two keys. A
// store that a backfill keyed by PK,SK built is refused the same way. The
// table's own key attributes are taken.
func TestBackfillKeyAttributesOfTheStore(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	st, closeStore := openStore(t, store)
	sub, err := seed.Set().Select("season-leaderboard")
	if err != nil {
		t.Fatal(err)
	}
	attached := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	eng, err := engine.Open(ctx, st, sub, engine.Config{Now: func() time.Time { return attached }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.NewExportDecoder(pipeline.Options{}).DecodeItem([]byte(`{"Item":{"EntityType":{"S":"Player"},"PK":{"S":"PLAYER#p107"},"SK":{"S":"PROFILE"},"active":{"BOOL":true},"country":{"S":"IE"},"handle":{"S":"plain107"},"rating":{"N":"1500"},"season":{"S":"2026-Q4"},"version":{"N":"2"}}}`), "stream", 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Position = pipeline.Position{Source: pipeline.SourceStreams, Stream: "s", SequenceNumber: "1"}
	c.Time, c.Precision = time.Date(2026, 11, 30, 10, 0, 3, 0, time.UTC), pipeline.Second
	if err := eng.HandleBatch(ctx, []pipeline.Change{c}); err != nil {
		t.Fatal(err)
	}
	closeStore()

	args := []string{"backfill", "--export", fullExport, "--store", store, "--no-sync", "--projection", "season-leaderboard"}
	// One item a batch: items that share a partition key meet in no batch,
	// as in a large export where they lie in other batches or files.
	code, out, stderr := runCLI(t, append(args, "--key-attributes", "PK", "--batch-size", "1")...)
	const want = "the store holds items keyed by PK,SK (e.g. PK=PLAYER#p107 SK=PROFILE), and this job keys the export's items by PK (--key-attributes, KEY_ATTRIBUTES, or the environment's)"
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(out, "status:   refused; the same command would be refused again") {
		t.Fatalf("--key-attributes PK over a store the stream keyed by PK,SK: exit %d, want 1 and %q\n%s%s", code, want, out, stderr)
	}
	if code, out, stderr := runCLI(t, args...); code != 0 || !strings.Contains(out, "status:   complete") {
		t.Fatalf("the table's own key attributes: exit %d\n%s%s", code, out, stderr)
	}

	// A store a backfill keyed by PK,SK built, without a shadow.
	store = t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync", "--projection", "season-leaderboard"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync", "--projection", "season-leaderboard", "--key-attributes", "PK", "--batch-size", "1")
	if code != 1 || !strings.Contains(stderr, "the store holds items keyed by PK,SK (e.g. PK=PLAYER#") || !strings.Contains(stderr, "this job keys the export's items by PK ") {
		t.Errorf("--key-attributes PK over a backfill keyed by PK,SK: exit %d, want 1 and both named\n%s%s", code, out, stderr)
	}
	st, closeStore = openStore(t, store)
	m, _ := markerFields(ctx, t, st)
	closeStore()
	if keys, _ := json.Marshal(m["keyAttributes"]); string(keys) != `["PK","SK"]` {
		t.Errorf("the backfill marker %v, want it to record the key attributes PK,SK", m)
	}
}

// TestBackfillAnotherTable: a store that the fixture's export was
// backfilled into is refused to an export of another table (another
// tableArn) and to one of the same table deleted and created again
// (another tableId), naming both, by backfill and remodel backfill, where
// either used to be laid over it; a marker of an earlier release, which
// records the export's ARN alone, is compared by the table that ARN
// names. The export of the same table is taken.
func TestBackfillAnotherTable(t *testing.T) {
	ctx := context.Background()
	const (
		app   = "arn:aws:dynamodb:eu-west-1:111122223333:table/app"
		appID = "542aa588-6be4-e7e1-b0fa-77e64bf6f16c"
	)
	for _, cmd := range [][]string{{"backfill"}, {"remodel", "backfill", "--transform", "comments-table"}} {
		name := strings.Join(cmd, " ")
		for _, tc := range []struct {
			name string
			edit map[string]any
			old  bool // the first backfill's marker as an earlier release wrote it
			want []string
		}{
			{"another table", map[string]any{"tableArn": "arn:aws:dynamodb:eu-west-1:111122223333:table/other", "exportArn": "arn:aws:dynamodb:eu-west-1:111122223333:table/other/export/01796032802314-fa5ad9a8"}, false,
				[]string{"the store holds the backfill of an export of another table (arn:aws:dynamodb:eu-west-1:111122223333:table/app/export/01796032802314-fa5ad9a8, tableArn " + app + "), and this export, arn:aws:dynamodb:eu-west-1:111122223333:table/other/export/01796032802314-fa5ad9a8, is of tableArn arn:aws:dynamodb:eu-west-1:111122223333:table/other",
					"Backfill this export into a new, empty store"}},
			{"the table created again", map[string]any{"tableId": "00000000-0000-0000-0000-000000000001"}, false,
				[]string{"tableId " + appID + "), and this export", "is of tableId 00000000-0000-0000-0000-000000000001 (a table deleted and created again under its name keeps its ARN, not its ID)"}},
			{"another table, by an earlier release's marker", map[string]any{"tableArn": "arn:aws:dynamodb:eu-west-1:111122223333:table/other", "exportArn": nil}, true,
				[]string{"(arn:aws:dynamodb:eu-west-1:111122223333:table/app/export/01796032802314-fa5ad9a8, tableArn " + app + ")", "is of tableArn arn:aws:dynamodb:eu-west-1:111122223333:table/other"}},
		} {
			if tc.old && len(cmd) > 1 {
				continue // the remodel target's marker is written as the store's
			}
			store := t.TempDir()
			run := func(args ...string) (int, string, string) {
				return runCLI(t, append(append(append([]string(nil), cmd...), "--store", store, "--no-sync"), args...)...)
			}
			if code, out, stderr := run("--export", fullExport); code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", name, code, out, stderr)
			}
			if tc.old {
				st, closeStore := openStore(t, store)
				m, rev := markerFields(ctx, t, st)
				for _, f := range []string{"tableArn", "tableId", "keyAttributes"} {
					delete(m, f)
				}
				body, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: backfill.MarkerKey, ExpectRev: rev, Body: body}}}); err != nil {
					t.Fatal(err)
				}
				closeStore()
			}
			exp, _ := fixtureCopy(t)
			editSummary(t, exp, tc.edit)
			code, out, stderr := run("--export", exp)
			for _, w := range tc.want {
				if code != 1 || !strings.Contains(stderr, w) || !strings.Contains(out, "status:   refused") {
					t.Errorf("%s, %s: exit %d, want 1 and %q\n%s%s", name, tc.name, code, w, out, stderr)
				}
			}
		}
	}
	// The same table's export, a copy under another location: taken.
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	exp, _ := fixtureCopy(t)
	if code, out, stderr := runCLI(t, "backfill", "--export", exp, "--incremental", incExport, "--store", store, "--no-sync"); code != 1 || strings.Contains(stderr, "another table") || !strings.Contains(stderr, "the store holds the backfill of an older export") {
		t.Errorf("the same table's exports: exit %d, want the older export's refusal alone\n%s%s", code, out, stderr)
	}
}

// TestBackfillOverOlderExportWithIncrementals: the refusal of a newer
// export over an older one's store, when the newer one has incremental
// exports, says what happens to their deletions — the backfill applies
// them only to the full export's items, and deletes nothing the store
// holds — where it used to say that an export holds none.
func TestBackfillOverOlderExportWithIncrementals(t *testing.T) {
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--incremental", incExport, "--store", store, "--no-sync")
	const want = "an item deleted before this export's time, 2026-11-30T10:00:04.099Z, would stay in the store (a backfill deletes nothing the store holds: the full export holds no deletions, and the incremental exports' deletions only leave the full export's items out)"
	if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "an export holds no deletions") {
		t.Errorf("exit %d, want 1 and %q\n%s%s", code, want, out, stderr)
	}
}

// changingDir serves one data file of a directory as the exported object
// the first time it is opened, and as other after (a file written over in
// place between its proof and its read).
type changingDir struct {
	*objstore.Dir
	key         string
	orig, other []byte
	opens       atomic.Int64
}

func (s *changingDir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if key != s.key {
		return s.Dir.Open(ctx, key)
	}
	if s.opens.Add(1) == 1 {
		return io.NopCloser(bytes.NewReader(s.orig)), nil
	}
	return io.NopCloser(bytes.NewReader(s.other)), nil
}

// TestBackfillMixedFileNamed: a run of the job read a data file from an
// object that changed after its proof, so that items of another object
// are in the store under the export's tokens. The backfill marker names
// the file, and the command, run again with the exported object back,
// prints it on a line of its own with what to do (backfill into a new
// store), where it used to print the refusal alone. Another job over the
// store is refused, naming the file, where it used to be taken.
func TestBackfillMixedFileNamed(t *testing.T) {
	ctx := context.Background()
	exp, files := fixtureCopy(t)
	path := files[0]
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := dataLines(t, path)
	i := firstOrder(t, lines, "PENDING")
	lines[i] = bytes.Replace(lines[i], []byte(`"status":{"S":"PENDING"}`), []byte(`"status":{"S":"SHIPPED"}`), 1)
	other := writeDataLines(t, path+".other", lines)

	store := t.TempDir()
	st, closeStore := openStore(t, store)
	root, id := filepath.Dir(filepath.Dir(exp)), filepath.Join("AWSDynamoDB", filepath.Base(exp))
	dir := objstore.NewDir(root)
	full, err := export.OpenExport(ctx, dir, id, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, f := range full.Files {
		if filepath.Base(f.DataFileS3Key) == filepath.Base(path) {
			key = full.DataKey(f)
		}
	}
	src := &changingDir{Dir: dir, key: key, orig: orig, other: other}
	if full, err = export.OpenExport(ctx, src, id, export.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	job, err := backfill.Open(full, nil, eng, st, seed.Set(), backfill.Options{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Run(ctx, 1); err == nil {
		t.Fatal("the job took a file read from another object")
	}
	m, _ := markerFields(ctx, t, st)
	mixed, _ := json.Marshal(m["mixed"])
	if !regexp.MustCompile(`^\[\{"error":"[^"]*not the exported object[^"]*","file":"[^"]*/` + regexp.QuoteMeta(filepath.Base(path)) + `"\}\]$`).Match(mixed) {
		t.Errorf("the backfill marker's mixed files: %s, want the file read from another object", mixed)
	}
	closeStore()

	code, out, stderr := runCLI(t, "backfill", "--export", exp, "--store", store, "--no-sync")
	want := regexp.MustCompile(`(?m)^mixed:    \S+/` + regexp.QuoteMeta(filepath.Base(path)) + `: `)
	if code != 1 || !want.MatchString(out) || !strings.Contains(out, "items of it were applied from an object that is not the exported one") ||
		!strings.Contains(out, "backfill into a new store") || !strings.Contains(out, "status:   refused") {
		t.Errorf("the rerun: exit %d, want 1 and a line naming the file (%s)\n%s%s", code, want, out, stderr)
	}
	// Another job (the export read with another version attribute) over
	// the store is refused too: it would keep the other object's items it
	// does not change.
	code, out, stderr = runCLI(t, "backfill", "--export", exp, "--version-attribute", "rev", "--store", store, "--no-sync")
	if code != 1 || !strings.Contains(stderr, "that job ") || !strings.Contains(stderr, "read from an object that is not the exported one") || !strings.Contains(stderr, "Backfill into a new, empty store") {
		t.Errorf("another job over the store: exit %d, want 1 and the file named\n%s%s", code, out, stderr)
	}
}

// TestBackfillBatchSize: --batch-size is the items a transaction of the
// engine takes at most, in backfill and remodel backfill alike: one item
// a batch writes each item in a transaction of its own (and a partial's
// now and then), where the flag used to be checked and then left unused.
func TestBackfillBatchSize(t *testing.T) {
	for _, cmd := range [][]string{{"backfill"}, {"remodel", "backfill", "--transform", "comments-table"}} {
		code, out, stderr := runCLI(t, append(cmd, "--export", fullExport, "--store", t.TempDir(), "--no-sync", "--batch-size", "1")...)
		m := regexp.MustCompile(`; (\d+) [^;]*? written in (\d+) transactions`).FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("%s: exit %d\n%s%s", cmd[0], code, out, stderr)
		}
		written, _ := strconv.Atoi(m[1])
		txs, _ := strconv.Atoi(m[2])
		if written == 0 || txs < written {
			t.Errorf("%s --batch-size 1: %d written in %d transactions, want a transaction an item at least\n%s", strings.Join(cmd, " "), written, txs, out)
		}
	}
}

package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/redrive"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// TestBackfillCommand: backfill the fixture export into a new store, and
// verify agrees with the export; a second run finds every file done and
// writes nothing; the output names the job, the point in time the stream
// must be applied from, and the command for it.
func TestBackfillCommand(t *testing.T) {
	store := t.TempDir()
	code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"as of 2026-11-30T10:00:02.314Z",
		"files:    5 (0 done by an earlier run)",
		"items:    913 read",
		"status:   complete\nstream:   the stream's changes from 2026-11-30T10:00:02Z on must reach this store",
		"tributary replay --start 2026-11-30T10:00:02Z",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = runCLI(t, "verify", "--export", fullExport, "--store", store)
	if code != 0 || !strings.Contains(out, "AGREE") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync")
	if code != 0 || !strings.Contains(out, "files:    5 (5 done by an earlier run)") || !strings.Contains(out, "0 item states written") {
		t.Fatalf("rerun: exit %d\n%s%s", code, out, stderr)
	}
}

// TestBackfillFailedItems: an export item the projections refuse (an order
// whose status order-totals does not know) is named with its file and line,
// the others are backfilled, and the run says complete but for it and exits
// 1; a rerun, which reads nothing, says the same from what the store
// records, rather than success; and the gate names the difference.
func TestBackfillFailedItems(t *testing.T) {
	exp := t.TempDir()
	if err := os.CopyFS(exp, os.DirFS(exportFixture)); err != nil {
		t.Fatal(err)
	}
	bad := badOrderExport(t, exp)
	exp = filepath.Join(exp, "AWSDynamoDB", filepath.Base(fullExport))
	store := t.TempDir()
	code, out, stderr := runCLI(t, "backfill", "--export", exp, "--store", store, "--no-sync", "--skip-md5")
	if code != 1 || !strings.Contains(out, bad+" (item PK=") || !strings.Contains(out, ", 114 of types no projection reads") || !strings.Contains(out, "status:   complete but for 1 items in 1 data files that the projections could not take") {
		t.Fatalf("exit %d, want 1 naming %s\n%s%s", code, bad, out, stderr)
	}
	code, out, stderr = runCLI(t, "backfill", "--export", exp, "--store", store, "--no-sync", "--skip-md5")
	if code != 1 || !strings.Contains(out, "files:    5 (5 done by an earlier run)") || !strings.Contains(out, "status:   complete but for 1 items in 1 data files") {
		t.Fatalf("rerun: exit %d, want 1 and the failure again\n%s%s", code, out, stderr)
	}
	// The gate names the refused item among its differences, once, and
	// checks every other item: nothing else differs.
	code, out, stderr = runCLI(t, "verify", "--export", exp, "--store", store, "--skip-md5")
	if code != 1 || !strings.Contains(out, "  order-totals export item PK=USER#") || strings.Count(out, "order-totals") != 1 ||
		!strings.Contains(out, "refused: ") || !strings.Contains(out, "1 of them are export items the projections refuse") || !strings.Contains(out, "MISMATCH: 1 differences") || stderr != "" {
		t.Errorf("verify: exit %d, want 1 and the refused item its one difference\n%s%s", code, out, stderr)
	}
}

// TestBackfillKilled kills a backfill with SIGKILL in the middle of its
// writes; the rerun resumes and leaves the store a clean run leaves: the
// same aggregates and rows, and verify agrees with the export.
func TestBackfillKilled(t *testing.T) {
	root := t.TempDir()
	e, _ := exportgen.GeneratedIn(t, root, 23, 4000, 12<<20, 4)
	exp := filepath.Join(root, filepath.FromSlash(e.Dir))
	store := t.TempDir()
	db := filepath.Join(store, StoreFile)
	cmd, _, _ := child(t, "backfill", "--export", exp, "--store", store, "--workers", "2", "--batch-size", "200")
	waitFor(t, "the store to grow", func() bool {
		fi, err := os.Stat(db)
		return err == nil && fi.Size() > 2<<20
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the backfill ended before it was killed: the test kills too late")
	}
	code, out, stderr := runCLI(t, "backfill", "--export", exp, "--store", store, "--workers", "2", "--no-sync")
	if code != 0 || !strings.Contains(out, "status:   complete") {
		t.Fatalf("rerun: exit %d\n%s%s", code, out, stderr)
	}
	if strings.Contains(out, " 0 item states written") {
		t.Errorf("the rerun wrote nothing: the kill came after the end\n%s", out)
	}
	// The rerun tells the items the killed run applied (the files it had
	// begun, redone) from items the store holds newer (none: nothing else
	// writes it), and the counts add up to the items it read.
	m := regexp.MustCompile(`(?m)^items:\s+(\d+) read .*?; (\d+) item states written .*?, (\d+) already applied \(an earlier run\), (\d+) newer in the store, (\d+) of types no projection reads$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the rerun's items line does not tell applied by an earlier run from newer:\n%s", out)
	}
	num := func(s string) int { v, _ := strconv.Atoi(s); return v }
	read, written, earlier, newer, other := num(m[1]), num(m[2]), num(m[3]), num(m[4]), num(m[5])
	t.Logf("rerun: %s", m[0])
	if earlier == 0 || newer != 0 || read != written+earlier+newer+other {
		t.Errorf("rerun: %d read = %d written + %d applied by an earlier run + %d newer + %d of other types: want some applied by the killed run, none newer, and the counts to add up\n%s",
			read, written, earlier, newer, other, out)
	}
	clean := t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", exp, "--store", clean, "--workers", "2", "--no-sync"); code != 0 {
		t.Fatalf("clean run: exit %d\n%s%s", code, out, stderr)
	}
	for _, cmd := range [][]string{{"aggregates", "--json"}, {"rows", "--json", "--projection", "season-leaderboard", "--partition", "SEASON#2026-Q4"}} {
		_, got, _ := runCLI(t, append(cmd, "--store", store)...)
		_, want, _ := runCLI(t, append(cmd, "--store", clean)...)
		if got != want || len(want) < 100 {
			t.Errorf("%s: the resumed store differs from a clean run's (%d and %d bytes)", cmd[0], len(got), len(want))
		}
	}
	if code, out, stderr := runCLI(t, "verify", "--export", exp, "--store", store); code != 0 || !strings.Contains(out, "AGREE") {
		t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
	}
}

// TestIntegrationReplayAfterBackfill is the road for a table older than
// its stream, on the test server's Kinesis: a table's export taken part-way
// through its history is backfilled; a replay that starts after the
// export's time is refused, saying what to do; the replay from the
// export's time (the stream holds a tail that overlaps it, duplicated and
// reordered) leaves the aggregates of the final items; after it, later
// windows are accepted. A store backfilled from an export older than the
// stream keeps (24 hours here) is refused too.
func TestIntegrationReplayAfterBackfill(t *testing.T) {
	url := replayAWSEnv(t)
	ctx := context.Background()
	h, k, at, exp := historyExport(t, sim.Workload{Seed: 61, Changes: 1200, Skew: 1.0, Start: time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)}, 700)

	kc := awstest.Kinesis(t)
	stream := awstest.CreateStream(ctx, t, kc, "tail", 2)
	recs := sim.ToKinesis(h.Records[k-200:], 0.05, 8, sim.NewKinesisRand(61))
	for i := 0; i < len(recs); i += 250 {
		in := &kinesis.PutRecordsInput{StreamName: aws.String(stream)}
		for _, r := range recs[i:min(i+250, len(recs))] {
			in.Records = append(in.Records, ktypes.PutRecordsRequestEntry{PartitionKey: aws.String(r.PartitionKey), Data: sim.AppendKinesisPayload(nil, &r.Record)})
		}
		if _, err := kc.PutRecords(ctx, in); err != nil {
			t.Fatal(err)
		}
	}

	store := t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", exp, "--store", store, "--no-sync"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	from := "kinesis://" + stream
	replay := func(startAt string, extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"replay", "--from", from, "--store", store, "--endpoint", url, "--start", startAt}, extra...)...)
	}
	later := at.Add(10 * time.Second).Truncate(time.Second).Format(time.RFC3339)
	code, _, stderr := replay(later)
	if code != 1 || !strings.Contains(stderr, "would leave out the changes in between. Start at "+at.Truncate(time.Second).Format(time.RFC3339)) {
		t.Fatalf("a replay from after the export: exit %d, %s", code, stderr)
	}
	code, out, stderr := replay(at.Truncate(time.Second).Format(time.RFC3339))
	if code != 0 || !strings.Contains(out, "caught up with the stream") {
		t.Fatalf("the replay from the export's time: exit %d\n%s%s", code, out, stderr)
	}
	want, err := projections.Recompute(h.Table.Items(), "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	if d := projections.Diff(storeView(t, store), want); len(d) > 0 {
		t.Fatalf("backfill and replay differ from the recomputation from the final items: %v", d[:min(len(d), 10)])
	}
	if code, out, stderr := replay(later); code != 0 {
		t.Errorf("a later window once caught up: exit %d\n%s%s", code, out, stderr)
	}

	old := t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", old, "--no-sync"); code != 0 {
		t.Fatalf("backfill of the fixture: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = runCLI(t, "replay", "--from", from, "--store", old, "--endpoint", url)
	if code != 1 || !strings.Contains(stderr, "but the stream keeps only 24h0m0s") || !strings.Contains(stderr, "Take a new export") {
		t.Errorf("a replay for an export older than the stream: exit %d, %s", code, stderr)
	}
}

// TestRedriveShadowSubset: a shadow's kept batch is redriven into the
// shadow's table, whose set is a subset of the binary's: --projection
// names it; without it the table is refused as another set's.
func TestRedriveShadowSubset(t *testing.T) {
	ctx := context.Background()
	event, err := os.ReadFile(fixtures + "streams/event.json")
	if err != nil {
		t.Fatal(err)
	}
	keep := t.TempDir()
	rec, err := redrive.Record(pipeline.SourceStreams, redrive.BatchInfo{BatchSize: 4}, "ShadowFailed", "test", event, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keep, "batch.json"), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	st, err := boltstore.Open(filepath.Join(store, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := seed.Set().Select("order-totals")
	if _, err := engine.Open(ctx, st, sub, engine.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "redrive", "--from", keep, "--store", store); code != 1 || !strings.Contains(stderr, "projection set mismatch") {
		t.Errorf("without --projection: exit %d, %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "redrive", "--from", keep, "--store", store, "--projection", "order-totals")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	v := storeView(t, store)
	if len(v.Aggregates) == 0 {
		t.Fatal("nothing applied")
	}
	for k := range v.Aggregates {
		if k.Projection != "order-totals" {
			t.Errorf("an order-totals table got %v", k)
		}
	}
}

// badOrderExport gives the first order of the export under root (a copy of
// the fixture) a status order-totals refuses, and returns "FILE line N"
// of it as a failure names it. Its data file no longer matches the
// manifest's checksum: read it with --skip-md5.
func badOrderExport(t *testing.T, root string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "AWSDynamoDB", "*", "data", "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files under %s: %v", root, err)
	}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data := exportgen.Gunzip(t, raw)
		lines := bytes.Split(data, []byte("\n"))
		for i, line := range lines {
			if !bytes.Contains(line, []byte(`"EntityType":{"S":"Order"}`)) {
				continue
			}
			fixed := regexp.MustCompile(`"status":\{"S":"[A-Z]+"\}`).ReplaceAll(line, []byte(`"status":{"S":"BOGUS"}`))
			if bytes.Equal(fixed, line) {
				continue
			}
			lines[i] = fixed
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			if _, err := zw.Write(bytes.Join(lines, []byte("\n"))); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%s line %d", filepath.Base(path), i+1)
		}
	}
	t.Fatal("no order with a status in the export")
	return ""
}

// TestBackfillWrongTypeAttribute: a backfill that reads the items by an
// attribute they do not have projects none of them and says so; the run
// with the table's own attribute is another job, which a store that the
// first marked takes, rather than passing its files over as done.
func TestBackfillWrongTypeAttribute(t *testing.T) {
	store := t.TempDir()
	code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync", "--type-attribute", "kind")
	if code != 0 || !strings.Contains(out, "warning:  none of the 913 items is of a type the projections read") || !strings.Contains(out, "by the attribute kind") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync")
	if code != 0 || !strings.Contains(out, "files:    5 (0 done by an earlier run)") || strings.Contains(out, "warning:") {
		t.Fatalf("with the table's attribute: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "verify", "--export", fullExport, "--store", store); code != 0 || !strings.Contains(out, "AGREE") {
		t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
	}
}

// TestBackfillSubset: the shadow of a projector with SHADOW_PROJECTIONS
// holds that subset of the set, and the runbook's commands take the same
// --projection flags: backfill marks and fills a new store for the subset,
// verify checks it and agrees, redrive opens it; without the flags each
// refuses the store, naming the sets.
func TestBackfillSubset(t *testing.T) {
	store := t.TempDir()
	subset := []string{"--projection", "order-totals", "--projection", "season-standings"}
	code, out, stderr := runCLI(t, append([]string{"backfill", "--export", fullExport, "--store", store, "--no-sync"}, subset...)...)
	if code != 0 || !strings.Contains(out, "status:   complete") {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, append([]string{"verify", "--export", fullExport, "--store", store}, subset...)...)
	if code != 0 || !strings.Contains(out, "AGREE") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "aggregates", "--store", store)
	if code != 0 || !strings.Contains(out, "order-totals") || strings.Contains(out, "workspace-activity") {
		t.Errorf("aggregates of the subset's store: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{
		{"verify", "--export", fullExport, "--store", store},
		{"backfill", "--export", fullExport, "--store", store, "--no-sync"},
		{"redrive", "--from", t.TempDir(), "--store", store},
	} {
		code, out, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, "projection set mismatch") {
			t.Errorf("%s without --projection: exit %d, want 1 and a set mismatch\n%s%s", args[0], code, out, stderr)
		}
	}
	if code, out, stderr := runCLI(t, append([]string{"redrive", "--from", t.TempDir(), "--store", store}, subset...)...); code != 0 {
		t.Errorf("redrive with the subset: exit %d\n%s%s", code, out, stderr)
	}
}

package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
	"github.com/tributary/tributary/projections/spec"
)

// newDesignSpec declares a transform beside a projection: orders keyed
// by status (a status change moves the item), players by season, every
// other item copied.
const newDesignSpec = "../../projections/spec/testdata/transforms/new-design.yaml"

func TestRemodelUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"remodel"}, 2, "a subcommand is required"},
		{[]string{"remodel", "-h"}, 0, "backfill  put an export's items through the transform"},
		{[]string{"remodel", "rebuild"}, 2, `unknown subcommand "rebuild" (backfill, apply, verify or items)`},
		{[]string{"remodel", "backfill", "--export", dir, "--store", dir}, 2, "give --transform NAME or --spec FILE"},
		{[]string{"remodel", "backfill", "--export", dir, "--transform", "nope", "--store", dir}, 2, `--transform: no transform "nope" (known: comments-table)`},
		{[]string{"remodel", "apply", "--transform", "comments-table", "--store", dir}, 2, "no --events files"},
		{[]string{"remodel", "apply", "--events", "x", "--transform", "comments-table", "--store", dir, "--table", "t"}, 2, "--store and --table are exclusive"},
		{[]string{"remodel", "apply", "--events", "x", "--transform", "comments-table"}, 2, "give --store DIR or --table NAME"},
		{[]string{"remodel", "apply", "--events", "x", "--transform", "comments-table", "--store", dir, "--ledger-table", "l"}, 2, "--ledger-table goes with --table"},
		{[]string{"remodel", "verify", "--transform", "comments-table", "--store", dir}, 2, "--export is required"},
		{[]string{"remodel", "verify", "--export", dir, "--transform", "comments-table", "--store", dir}, 1, "no remodel target at " + filepath.Join(dir, "target.db")},
		{[]string{"remodel", "apply", "--events", "x", "--spec", "../../projections/spec/testdata/load/document.yaml", "--store", dir}, 1, "--spec: invalid projection spec"},
		{[]string{"remodel", "apply", "--events", "x", "--spec", newDesignSpec, "--transform", "other", "--store", dir}, 2, "the spec " + newDesignSpec + " declares no such transform (it declares new-design)"},
		{[]string{"remodel", "items"}, 2, "give --store DIR or --table NAME"},
		{[]string{"remodel", "items", "--store", dir}, 1, "no remodel target at"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
}

// remodelHistory is a simulated table with an export taken part-way and
// its stream's tail, from 300 changes before the export to the end, as
// captured Lambda event files of both forms.
type remodelHistory struct {
	h      *sim.History
	export string
	// incremental is an incremental export from the export's time to a
	// second after the history's end.
	incremental      string
	streams, kinesis []string
}

func newRemodelHistory(t *testing.T) *remodelHistory {
	t.Helper()
	h, err := sim.Workload{Seed: 71, Changes: 2500, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	k, res, err := exportgen.PartWay(context.Background(), objstore.NewDir(root).WithoutSync(), h, 0.6, 71, "", "exports/app", 3)
	if err != nil {
		t.Fatal(err)
	}
	rh := &remodelHistory{h: h, export: filepath.Join(root, filepath.FromSlash(res.Dir))}
	_, changes, _ := exportgen.FromHistory(h, k)
	from, end := h.Records[k-1].Time, h.Records[len(h.Records)-1].Time.Truncate(time.Second).Add(time.Second)
	inc, err := exportgen.WriteIncremental(context.Background(), objstore.NewDir(root).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(end, 72), Prefix: "exports/app", Time: end, From: from, Files: 2}, changes)
	if err != nil {
		t.Fatal(err)
	}
	rh.incremental = filepath.Join(root, filepath.FromSlash(inc.Dir))
	tail := h.Records[k-300:]
	events := t.TempDir()
	write := func(form string, shards [][]sim.Event) []string {
		var files []string
		for batch := 0; ; batch++ {
			wrote := false
			for s, shard := range shards {
				if batch*100 >= len(shard) {
					continue
				}
				name := filepath.Join(events, fmt.Sprintf("%s-%03d-%d.json", form, batch, s))
				if err := os.WriteFile(name, sim.Payload(shard[batch*100:min(len(shard), (batch+1)*100)]), 0o600); err != nil {
					t.Fatal(err)
				}
				files, wrote = append(files, name), true
			}
			if !wrote {
				return files
			}
		}
	}
	rh.streams = write("streams", sim.StreamsShards(tail))
	rh.kinesis = write("kinesis", sim.KinesisShards(sim.ToKinesis(tail, 0.05, 8, sim.NewKinesisRand(71))))
	return rh
}

// itemLines are the `remodel items` lines the transform of items makes,
// sorted.
func itemLines(t *testing.T, tr *projections.Transform, items []pipeline.Item) []string {
	t.Helper()
	key, err := remodel.ResolveKey(tr, target.Key{}, pipeline.Schema{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := remodel.New(tr, key, pipeline.Schema{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, it := range items {
		outs, err := r.Apply(it)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			lines = append(lines, string(quote.PrintableJSON(export.AppendItemLine(nil, o))))
		}
	}
	slices.Sort(lines)
	return lines
}

func sortedLines(out string) []string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// TestRemodelRoad runs the road on the embedded target, with a Go
// transform and a declared one: backfill from an export taken part-way,
// the stream's tail (from before the export) applied twice, in each
// form: the target's items are the transform of the table's final items.
// The gate against the export names no difference, but may not judge
// some source items whose state is in the export's own second (the
// simulated stream changes items many times a second); against an
// incremental export up to the end too it agrees.
func TestRemodelRoad(t *testing.T) {
	rh := newRemodelHistory(t)
	sp, err := spec.LoadFile(newDesignSpec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		transform []string
		tr        *projections.Transform
	}{
		{"go", []string{"--transform", "comments-table"}, stockOptions.Environment.Transforms[0]},
		{"spec", []string{"--spec", newDesignSpec}, sp.Transforms()[0]},
	} {
		want := itemLines(t, tt.tr, rh.h.Table.Items())
		for _, form := range []struct {
			name  string
			files []string
		}{{"streams", rh.streams}, {"kinesis", rh.kinesis}} {
			t.Run(tt.name+"/"+form.name, func(t *testing.T) {
				dir := t.TempDir()
				args := func(sub string, more ...string) []string {
					return append(append([]string{"remodel", sub}, tt.transform...), append([]string{"--store", dir}, more...)...)
				}
				code, out, stderr := runCLI(t, args("backfill", "--export", rh.export, "--no-sync")...)
				if code != 0 || !strings.Contains(out, "status:   complete\n") {
					t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
				}
				events := []string{}
				for _, f := range form.files {
					events = append(events, "--events", f)
				}
				for range 2 {
					code, out, stderr = runCLI(t, args("apply", events...)...)
					if code != 0 || strings.Contains(out, `"itemIdentifier"`) {
						t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
					}
				}
				code, out, stderr = runCLI(t, "remodel", "items", "--store", dir)
				if code != 0 {
					t.Fatalf("items: exit %d: %s", code, stderr)
				}
				if got := sortedLines(out); !slices.Equal(got, want) {
					t.Fatalf("the target's items (%d) are not the transform of the final items (%d):\n%s", len(got), len(want), lineDiff(got, want))
				}
				// Before any simulated TTL passed: every item compared.
				at := rh.h.Workload.Start.Add(-30 * 24 * time.Hour).Format(time.RFC3339)
				code, out, stderr = runCLI(t, args("verify", "--export", rh.export, "--at", at)...)
				if !strings.Contains(out, "source items changed since the export") ||
					(code != 0 || !strings.Contains(out, "\nAGREE: every target item equals the transform of its source item as of the export")) &&
						(code != 1 || !strings.Contains(out, "\nNOT READY: ") || !strings.Contains(out, " source items could not be judged against the export (in its own second")) {
					t.Fatalf("verify: exit %d\n%s%s", code, out, stderr)
				}
				code, out, stderr = runCLI(t, args("verify", "--export", rh.export, "--incremental", rh.incremental, "--at", at)...)
				if code != 0 || !strings.Contains(out, "\nAGREE: every target item equals the transform of its source item as of the export") {
					t.Fatalf("verify with the incremental export: exit %d\n%s%s", code, out, stderr)
				}
			})
		}
	}
}

// lineDiff lists the lines of one sorted list and not the other.
func lineDiff(got, want []string) string {
	var b strings.Builder
	for _, g := range got {
		if _, ok := slices.BinarySearch(want, g); !ok {
			fmt.Fprintf(&b, "+ %s\n", g)
		}
	}
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	s := b.String()
	if len(s) > 4000 {
		s = s[:4000] + "..."
	}
	return s
}

// TestRemodelCommands pins the subcommands' output on the fixture export
// and the comments-table transform: backfill names the job, the time the
// stream must be applied from and how; a rerun finds every file done;
// items prints export lines; verify agrees, and names a target item the
// target lost; a collision through apply names both source items.
func TestRemodelCommands(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "remodel", "backfill", "--export", fullExport, "--transform", "comments-table", "--store", dir, "--no-sync")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"remodel backfill of " + fullExport + " by transform comments-table into store " + dir + ", keyed PK:S,SK:S, as of 2026-11-30T10:00:02.314Z (job ",
		"files:    5 (0 done by an earlier run)",
		"items:    913 read in ",
		"; 75 source items' states written in ",
		"838 of types the transform does not take",
		"status:   complete\nstream:   the stream's changes from 2026-11-30T10:00:02Z on must reach this target: the remodeler attached before then (docs/remodel.md), or `tributary remodel apply` of them",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("backfill output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "remodel", "backfill", "--export", fullExport, "--transform", "comments-table", "--store", dir, "--no-sync")
	if code != 0 || !strings.Contains(out, "files:    5 (5 done by an earlier run)") || !strings.Contains(out, "; 0 source items' states written in 0 transactions") {
		t.Fatalf("rerun: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "remodel", "items", "--store", dir)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 75 || !strings.HasPrefix(lines[0], `{"Item":{"EntityType":{"S":"Comment"},"PK":{"S":"DOC#`) {
		t.Fatalf("items: exit %d, %d lines:\n%.300s", code, len(lines), out)
	}
	at := "2026-01-01T00:00:00Z" // before the fixture's TTLs
	code, out, _ = runCLI(t, "remodel", "verify", "--export", fullExport, "--transform", "comments-table", "--store", dir, "--at", at)
	if code != 0 || !strings.Contains(out, "compared 75 target items with the 75 the transform comments-table makes of 913 items of "+fullExport+" (as of 2026-11-30T10:00:02.314Z)") || !strings.HasSuffix(out, "AGREE: every target item equals the transform of its source item as of the export, with the 0 source items changed since as their ledger entries say\n") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "remodel", "verify", "--export", fullExport, "--transform", "comments-table", "--store", dir)
	if code != 0 || !strings.Contains(out, "compared 17 target items with the 17") || !strings.Contains(out, "58 items left out: their TTL (ttl) passed before") {
		t.Fatalf("verify now, past most TTLs: exit %d\n%s", code, out)
	}

	// Two comments of two workspaces with one document and comment ID: the
	// transform maps both to one key.
	comment := func(ws string) pipeline.Item {
		return pipeline.Item{"PK": sv("WS#" + ws), "SK": sv("DOC#d1#CMT#c1"), "EntityType": sv("Comment"), "docId": sv("d1"), "commentId": sv("c1")}
	}
	at0 := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	recs := []sim.Record{
		{Kind: pipeline.Insert, Keys: pipeline.Item{"PK": sv("WS#a"), "SK": sv("DOC#d1#CMT#c1")}, New: comment("a"), Seq: "900000000000000000001", Time: at0, EventID: "a1"},
		{Kind: pipeline.Insert, Keys: pipeline.Item{"PK": sv("WS#b"), "SK": sv("DOC#d1#CMT#c1")}, New: comment("b"), Seq: "900000000000000000002", Time: at0.Add(time.Second), EventID: "b1"},
	}
	event := filepath.Join(t.TempDir(), "collision.json")
	if err := os.WriteFile(event, sim.StreamsEvent(recs), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "remodel", "apply", "--events", event, "--transform", "comments-table", "--store", dir)
	if code != 1 || !strings.Contains(out, `2 records, 1 applied, 0 skipped (types the transform does not take), 1 failed; response {"batchItemFailures":[{"itemIdentifier":"900000000000000000002"}]}`) ||
		!strings.Contains(stderr, "transform comments-table, target item PK=DOC#d1 SK=CMT#c1: item PK=WS#b SK=DOC#d1#CMT#c1 claims it, and item PK=WS#a SK=DOC#d1#CMT#c1 holds it") {
		t.Fatalf("a collision: exit %d\n%s%s", code, out, stderr)
	}

	// The stream's comment is told apart as changed since the export.
	code, out, _ = runCLI(t, "remodel", "verify", "--export", fullExport, "--transform", "comments-table", "--store", dir, "--at", at)
	if code != 0 || !strings.Contains(out, "compared 76 target items with the 76") || !strings.Contains(out, "\n1 source items changed since the export") {
		t.Fatalf("verify after the stream's change: exit %d\n%s", code, out)
	}
	// The target loses an item behind the remodel's back: verify names it.
	ts, err := boltstore.OpenTarget(filepath.Join(dir, "target.db"), "", target.Key{})
	if err != nil {
		t.Fatal(err)
	}
	lost := driver.RowRef{Projection: "comments-table", Partition: "DOC#d1", Sort: "CMT#c250"}
	err = ts.Commit(context.Background(), &driver.Tx{Deletes: []driver.RowDelete{{Ref: lost}}})
	if cerr := ts.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "remodel", "verify", "--export", fullExport, "--transform", "comments-table", "--store", dir, "--at", at)
	if code != 1 || !strings.Contains(out, "  target item PK=DOC#d1 SK=CMT#c250: missing (from source item PK=WS#w5 SK=DOC#d1#CMT#c250)\n") || !strings.HasSuffix(out, "MISMATCH: 1 differences between the target and the transform of the export (the items changed since it taken as their state in the ledger says)\n") {
		t.Fatalf("verify of a target that lost an item: exit %d\n%s", code, out)
	}
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestRemodelGateCollision: two comments of an export that the transform
// gives one target key (two workspaces, one document and comment ID): the
// backfill takes the first and fails the second, naming both; the gate
// then names the collision and disagrees, rather than agreeing with a
// target that holds one of the two.
func TestRemodelGateCollision(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	comment := func(ws string) pipeline.Item {
		return pipeline.Item{"PK": s("WS#" + ws), "SK": s("DOC#dX#CMT#cX"), "EntityType": s("Comment"), "body": s("from " + ws),
			"version": &types.AttributeValueMemberN{Value: "1"}}
	}
	items := []pipeline.Item{comment("zz1"), comment("zz2"), {"PK": s("WS#zz3"), "SK": s("DOC#dY#CMT#cY"), "EntityType": s("Comment"), "version": &types.AttributeValueMemberN{Value: "1"}}}
	exp := itemsExport(t, items)
	store := t.TempDir()
	code, out, stderr := runCLI(t, "remodel", "backfill", "--export", exp, "--transform", "comments-table", "--store", store, "--no-sync")
	if code != 1 || !strings.Contains(out, "PK=WS#zz1 SK=DOC#dX#CMT#cX") || !strings.Contains(out, "PK=WS#zz2 SK=DOC#dX#CMT#cX") {
		t.Fatalf("backfill: exit %d, want 1 naming both source items\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "remodel", "verify", "--export", exp, "--transform", "comments-table", "--store", store)
	if code != 1 || !strings.Contains(out, "all make it (a collision") || !strings.Contains(out, "MISMATCH") || strings.Contains(out, "AGREE") {
		t.Fatalf("verify: exit %d, want 1 naming the collision\n%s%s", code, out, stderr)
	}
}

// TestRemodelRefusesAnotherTarget: a target backfilled by other attributes
// (another TTL attribute) is another remodel's: apply refuses it, saying so
// in a remodel's terms, not an aggregate table's.
func TestRemodelRefusesAnotherTarget(t *testing.T) {
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "remodel", "backfill", "--export", fullExport, "--transform", "comments-table", "--store", store, "--no-sync", "--ttl-attribute", "expiresAt"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr := runCLI(t, "remodel", "apply", "--events", fixtures+"streams/event.json", "--transform", "comments-table", "--store", store)
	for _, want := range []string{"projection set mismatch: not a target of transform comments-table@", "(this transform as it was, with another definition", "--ttl-attribute", "remodel into a new, empty target"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if strings.Contains(stderr, "projections adopt") || strings.Count(stderr, "tributary remodel") != 1 {
		t.Errorf("an aggregate table's advice, or the prefix twice:\n%s", stderr)
	}
}

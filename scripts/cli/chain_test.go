package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
)

// chainFixture copies the fixture exports (a full export, as of
// 2026-11-30T10:00:02.314Z, and an incremental one on top, from
// 10:00:01.314 to 10:00:04.099) into a new directory and returns the two
// exports' directories there.
func chainFixture(t *testing.T) (full, inc string) {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(exportFixture)); err != nil {
		t.Fatal(err)
	}
	aws := filepath.Join(root, "AWSDynamoDB")
	return filepath.Join(aws, filepath.Base(fullExport)), filepath.Join(aws, filepath.Base(incExport))
}

// editSummary rewrites the manifest-summary.json of the export at dir by
// edit (a field set to nil is left out).
func editSummary(t *testing.T, dir string, edit map[string]any) {
	t.Helper()
	p := filepath.Join(dir, "manifest-summary.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = exportgen.EditSummary(t, b, edit)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyIncremental copies the incremental export at dir to a sibling
// export id (its data files are in the shared data folder, which its
// manifest names) with its summary edited, and returns its directory.
func copyIncremental(t *testing.T, dir, id string, edit map[string]any) string {
	t.Helper()
	to := filepath.Join(filepath.Dir(dir), id)
	if err := os.CopyFS(to, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	edit["exportArn"] = "arn:aws:dynamodb:eu-west-1:111122223333:table/app/export/" + id
	editSummary(t, to, edit)
	return to
}

// withoutManifest removes the manifests of the export at dir, as a copy
// that lost them.
func withoutManifest(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"manifest-summary.json", "manifest-files.json"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExportChainRefused: a chain of exports that is not one table's
// history, contiguous and moving forward, or that holds a time after now,
// is refused by every command that reads one (backfill, verify, remodel
// backfill, remodel verify), naming the export and the times or fields;
// overlapping incremental exports given in any order are taken.
func TestExportChainRefused(t *testing.T) {
	// The stores the gates check: built from the fixture's chain.
	store, target := t.TempDir(), t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--incremental", incExport, "--store", store, "--no-sync"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "remodel", "backfill", "--export", fullExport, "--incremental", incExport, "--transform", "comments-table", "--store", target, "--no-sync"); code != 0 {
		t.Fatalf("remodel backfill: exit %d\n%s%s", code, out, stderr)
	}
	// A case's export flags: for the gates, and for the backfills (which
	// may take --export-time); no gates: they take no time.
	type chain struct{ gates, backfills []string }
	// incEdited is a case of the fixture's chain with the incremental
	// export's summary edited.
	incEdited := func(edit map[string]any) func(t *testing.T) chain {
		return func(t *testing.T) chain {
			full, inc := chainFixture(t)
			editSummary(t, inc, edit)
			a := []string{"--export", full, "--incremental", inc}
			return chain{a, a}
		}
	}
	fullName, incName := filepath.Base(fullExport), filepath.Base(incExport)
	for _, tc := range []struct {
		name  string
		build func(t *testing.T) chain
		want  []string
	}{
		{
			"an incremental ending before the full export",
			incEdited(map[string]any{"exportFromTime": "2026-11-30T09:59:00.000Z", "exportToTime": "2026-11-30T10:00:01.000Z"}),
			[]string{"the incremental export ", incName + " (from 2026-11-30T09:59:00Z to 2026-11-30T10:00:01Z) ends before ", fullName + " (as of 2026-11-30T10:00:02.314Z)", "must move forward"},
		},
		{
			"an incremental ending before the one before it, given first",
			func(t *testing.T) chain {
				full, inc := chainFixture(t)
				older := copyIncremental(t, inc, "01796032803000-0000b0b0", map[string]any{"exportFromTime": "2026-11-30T10:00:02.000Z", "exportToTime": "2026-11-30T10:00:03.000Z"})
				a := []string{"--export", full, "--incremental", older, "--incremental", inc}
				return chain{a, a}
			},
			[]string{"01796032803000-0000b0b0 (from 2026-11-30T10:00:02Z to 2026-11-30T10:00:03Z) ends before ", incName + " (to 2026-11-30T10:00:04.099Z)"},
		},
		{
			"an incremental without exportFromTime",
			incEdited(map[string]any{"exportFromTime": nil}),
			[]string{incName + " has no exportFromTime in its manifest-summary.json"},
		},
		{
			"an incremental whose exportToTime does not parse",
			incEdited(map[string]any{"exportToTime": "2026-11-30 10:00:04"}),
			[]string{incName + `: manifest-summary.json exportToTime "2026-11-30 10:00:04" is not an RFC 3339 time`},
		},
		{
			"an incremental of another table",
			incEdited(map[string]any{"tableArn": "arn:aws:dynamodb:eu-west-1:111122223333:table/other", "tableId": "00000000-0000-0000-0000-000000000000"}),
			[]string{incName + " is of another table than ", "tableArn arn:aws:dynamodb:eu-west-1:111122223333:table/other, not arn:aws:dynamodb:eu-west-1:111122223333:table/app"},
		},
		{
			"an incremental of the table created again under its name",
			incEdited(map[string]any{"tableId": "00000000-0000-0000-0000-000000000000"}),
			[]string{"is of another table than ", "tableId 00000000-0000-0000-0000-000000000000, not 542aa588-6be4-e7e1-b0fa-77e64bf6f16c"},
		},
		{
			"an incremental without tableId",
			incEdited(map[string]any{"tableId": nil}),
			[]string{incName + " has no tableId in its manifest-summary.json"},
		},
		{
			"an incremental ending in the future",
			incEdited(map[string]any{"exportToTime": "2072-01-01T00:00:00.000Z"}),
			[]string{incName + ": exportToTime 2072-01-01T00:00:00Z is after now (", "an export holds no future"},
		},
		{
			"a full export of the future",
			func(t *testing.T) chain {
				full, _ := chainFixture(t)
				editSummary(t, full, map[string]any{"exportTime": "2072-01-01T00:00:00.000Z"})
				a := []string{"--export", full}
				return chain{a, a}
			},
			[]string{fullName + ": exportTime 2072-01-01T00:00:00Z is after now ("},
		},
		{
			"a time given in the future",
			func(t *testing.T) chain {
				full, _ := chainFixture(t)
				withoutManifest(t, full)
				return chain{nil, []string{"--export", full, "--allow-missing-manifest", "--export-time", "2072-01-01T00:00:00Z"}}
			},
			[]string{fullName + ": the time given for it (--export-time) 2072-01-01T00:00:00Z is after now ("},
		},
		{
			"incrementals over a full export read without its manifest",
			func(t *testing.T) chain {
				full, inc := chainFixture(t)
				withoutManifest(t, full)
				a := []string{"--export", full, "--allow-missing-manifest", "--incremental", inc}
				return chain{a, append(a, "--export-time", "2026-11-30T10:00:02.314Z")}
			},
			[]string{fullName + " was read without its manifest: it says neither its time nor its table"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.build(t)
			type command struct {
				name string
				args []string
			}
			var cmds []command
			cmds = append(cmds,
				command{"backfill", append([]string{"backfill", "--store", t.TempDir(), "--no-sync"}, c.backfills...)},
				command{"remodel backfill", append([]string{"remodel", "backfill", "--transform", "comments-table", "--store", t.TempDir(), "--no-sync"}, c.backfills...)})
			if c.gates != nil {
				cmds = append(cmds,
					command{"verify", append([]string{"verify", "--store", store}, c.gates...)},
					command{"remodel verify", append([]string{"remodel", "verify", "--transform", "comments-table", "--store", target}, c.gates...)})
			}
			for _, cmd := range cmds {
				code, out, stderr := runCLI(t, cmd.args...)
				missing := code != 1 || strings.Contains(out, "AGREE") || strings.Contains(out, "complete")
				for _, w := range tc.want {
					missing = missing || !strings.Contains(stderr, w)
				}
				if missing {
					t.Errorf("%s: exit %d, want 1 and a refusal naming %q\n%s%s", cmd.name, code, tc.want, out, stderr)
				}
			}
		})
	}

	// Overlapping incremental exports, given in any order, are one
	// history: taken in time order.
	full, inc := chainFixture(t)
	later := copyIncremental(t, inc, "01796032805000-0000c0c0", map[string]any{"exportFromTime": "2026-11-30T10:00:03.000Z", "exportToTime": "2026-11-30T10:00:05.000Z"})
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "backfill", "--export", full, "--incremental", later, "--incremental", inc, "--store", dir, "--no-sync")
	if code != 0 || !strings.Contains(out, "as of 2026-11-30T10:00:05Z") || !strings.Contains(out, "status:   complete") {
		t.Fatalf("overlapping incrementals: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "verify", "--export", full, "--incremental", inc, "--incremental", later, "--store", dir); code != 0 || !strings.Contains(out, "AGREE") {
		t.Errorf("verify of overlapping incrementals: exit %d\n%s%s", code, out, stderr)
	}
}

// TestBackfillOverOlderExport: a backfill of a newer export (the fixture's
// full export with its incremental one on top, as of 10:00:04.099) into a
// store that a backfill of an older one (the full export alone, as of
// 10:00:02.314) built, with nothing applying the stream in between, is
// refused by backfill and remodel backfill, saying what to do: an item
// deleted in between would stay. The same job again is taken. It is taken
// once the store shows the stream kept it current: a replay from the
// older export's time that caught it up, or a shadow that marked it
// before that time.
func TestBackfillOverOlderExport(t *testing.T) {
	ctx := context.Background()
	for _, cmd := range [][]string{{"backfill"}, {"remodel", "backfill", "--transform", "comments-table"}} {
		store := t.TempDir()
		run := func(args ...string) (int, string, string) {
			return runCLI(t, append(append(append([]string(nil), cmd...), "--store", store, "--no-sync"), args...)...)
		}
		if code, out, stderr := run("--export", fullExport); code != 0 {
			t.Fatalf("%s of the older export: exit %d\n%s%s", cmd[0], code, out, stderr)
		}
		code, out, stderr := run("--export", fullExport, "--incremental", incExport)
		for _, want := range []string{
			"the store holds the backfill of an older export (arn:aws:dynamodb:eu-west-1:111122223333:table/app/export/01796032802314-fa5ad9a8, as of 2026-11-30T10:00:02.314Z), and nothing shows that the stream has kept it current since",
			"an item deleted before this export's time, 2026-11-30T10:00:04.099Z, would stay in the store",
			"Backfill this export into a new, empty store; or first apply the stream to this one from 2026-11-30T10:00:02Z on",
		} {
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s of a newer export over it: exit %d, want 1 and %q\n%s%s", strings.Join(cmd, " "), code, want, out, stderr)
			}
		}
		if code, out, stderr := run("--export", fullExport); code != 0 || !strings.Contains(out, "files:    5 (5 done by an earlier run)") {
			t.Errorf("%s: the same job again: exit %d\n%s%s", strings.Join(cmd, " "), code, out, stderr)
		}
	}

	// A replay from the older export's time caught the store up.
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync"); code != 0 {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	st, err := boltstore.Open(filepath.Join(store, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := backfill.MarkCaughtUp(ctx, st, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--incremental", incExport, "--store", store, "--no-sync"); code != 0 || !strings.Contains(out, "status:   complete") {
		t.Errorf("over a caught-up store: exit %d\n%s%s", code, out, stderr)
	}

	// A shadow marked the store before the older export's time.
	store = t.TempDir()
	st, err = boltstore.Open(filepath.Join(store, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	attached := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if _, err := engine.Open(ctx, st, seed.Set(), engine.Config{Now: func() time.Time { return attached }}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--export", fullExport}, {"--export", fullExport, "--incremental", incExport}} {
		if code, out, stderr := runCLI(t, append([]string{"backfill", "--store", store, "--no-sync"}, args...)...); code != 0 || !strings.Contains(out, "status:   complete") {
			t.Errorf("into a shadow's store, %v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
}

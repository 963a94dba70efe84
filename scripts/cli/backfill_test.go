package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tributary/tributary/internal/exportgen"
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
		"status:   complete. The stream's changes from 2026-11-30T10:00:02Z on must reach this store",
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

// TestBackfillKilled kills a backfill with SIGKILL in the middle of its
// writes; the rerun resumes and leaves the store a clean run leaves: the
// same aggregates and rows, and verify agrees with the export.
func TestBackfillKilled(t *testing.T) {
	root := t.TempDir()
	e, _ := exportgen.GeneratedIn(t, root, 23, 4000, 12<<20, 4)
	exp := filepath.Join(root, filepath.FromSlash(e.Dir))
	store := t.TempDir()
	db := filepath.Join(store, storeFile)
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

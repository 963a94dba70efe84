package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
)

// itemCounts returns the item count of each data file of an export, from
// its manifest-files.json.
func itemCounts(t *testing.T, exportDir string) []int {
	t.Helper()
	f, err := os.Open(filepath.Join(exportDir, "manifest-files.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var counts []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct{ ItemCount int }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, l.ItemCount)
	}
	return counts
}

// TestRepartitionRefusesCollidingNames: with a hash injected so that two
// long entity types shorten to one partition name, repartition refuses
// them, whether one data file holds both (its writer refuses the second)
// or each is in a data file of its own (the finish refuses the partition of
// two types); it writes no summary either way.
func TestRepartitionRefusesCollidingNames(t *testing.T) {
	restore := objstoretest.SetNameHash(t, func(string) [sha256.Size]byte { return [sha256.Size]byte{0xc0, 0x11} })
	defer restore()
	a, b := strings.Repeat("A", 300), strings.Repeat("B", 300)
	oneFile := collidingExport(t, a, b, 1)
	// Six items in six data files: each holds one type at most.
	apart := collidingExport(t, a, b, 64)
	if n := len(itemCounts(t, apart)); n != 64 {
		t.Fatalf("the export has %d data files", n)
	}
	for _, c := range itemCounts(t, apart) {
		if c > 1 {
			t.Skip("two items share a data file; the case of each type apart needs them apart")
		}
	}
	for name, export := range map[string]string{"one data file": oneFile, "data files apart": apart} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := runCLI(t, "repartition", "--export", export, "--out", out, "--no-sync")
			if code != 1 || !strings.Contains(stderr, "entity types") || !strings.Contains(stderr, `both shorten to "entity=_sha256-c011`) {
				t.Errorf("repartition: exit %d, want it refused naming the shortened name\n%s%s", code, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "_summary.json")); !os.IsNotExist(err) {
				t.Errorf("the refused run wrote a summary: %v", err)
			}
		})
	}
}

// TestRepartitionRenamesOldSegments: an output whose long types are under
// names this version does not give them (written by a version that kept 16
// hex digits of the hash; here by another hash injected) is not taken as
// complete: the rerun redoes those types under their present names and
// removes the old parts and manifests.
func TestRepartitionRenamesOldSegments(t *testing.T) {
	a, b := strings.Repeat("A", 300), "Order"
	export := collidingExport(t, a, b, 2)
	out := t.TempDir()
	restore := objstoretest.SetNameHash(t, func(string) [sha256.Size]byte { return [sha256.Size]byte{0x01, 0xd} })
	code, stdout, stderr := runCLI(t, "repartition", "--export", export, "--out", out, "--no-sync")
	restore()
	if code != 0 {
		t.Fatalf("the first run: exit %d\n%s%s", code, stdout, stderr)
	}
	old := "entity=" + objstore.HashMark + "010d" + strings.Repeat("0", 60)
	if _, err := os.Stat(filepath.Join(out, old, "_manifest.json")); err != nil {
		t.Fatalf("the first run's partition: %v", err)
	}
	code, stdout, stderr = runCLI(t, "repartition", "--export", export, "--out", out, "--no-sync")
	if code != 0 || strings.Contains(stdout, "already complete") {
		t.Fatalf("the rerun: exit %d, want it to redo the old names\n%s%s", code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Entities []struct{ Entity, Segment string }
		Totals   struct{ OutputItems, OrphansRemoved int }
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	want := objstore.FitName("entity=", a, "", objstore.MaxSegmentBytes)
	for _, e := range s.Entities {
		if e.Entity == a && e.Segment != want {
			t.Errorf("the long type is under %s, want %s", e.Segment, want)
		}
	}
	if s.Totals.OutputItems != 6 || s.Totals.OrphansRemoved == 0 {
		t.Errorf("totals %+v: want 6 items and the old parts removed", s.Totals)
	}
	if _, err := os.Stat(filepath.Join(out, old)); err == nil {
		if entries, _ := os.ReadDir(filepath.Join(out, old)); len(entries) > 0 {
			t.Errorf("the old partition still holds %d files", len(entries))
		}
	}
	// And now it is complete.
	if code, stdout, _ := runCLI(t, "repartition", "--export", export, "--out", out, "--no-sync"); code != 0 || !strings.Contains(stdout, "already complete") {
		t.Errorf("a third run: exit %d\n%s", code, stdout)
	}
}

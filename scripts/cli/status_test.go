package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const streamsEvent = "../../pipeline/testdata/streams/event.json"

// TestShadowRehearsal: the shadow road on a laptop, from one spec into two
// stores — the live set from the stream, the shadow (a subset, as a
// projector's SHADOW_PROJECTIONS) backfilled from an export with
// --projection, kept current with `process --projection`, verified with
// --projection — and `status` tells each store's set, its backfill and the
// newest change applied per source. A command of the whole set on the
// shadow's store is refused.
func TestShadowRehearsal(t *testing.T) {
	dir := t.TempDir()
	live, shadow := filepath.Join(dir, "live"), filepath.Join(dir, "shadow")
	steps := [][]string{
		{"process", "--events", streamsEvent, "--store", live},
		{"backfill", "--export", fullExport, "--store", shadow, "--projection", "order-totals", "--no-sync"},
		{"process", "--events", streamsEvent, "--store", shadow, "--projection", "order-totals"},
		{"verify", "--export", fullExport, "--store", shadow, "--projection", "order-totals"},
	}
	for _, args := range steps {
		if code, out, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
	if code, out, stderr := runCLI(t, "process", "--events", streamsEvent, "--store", shadow); code == 0 || !strings.Contains(out+stderr, "order-totals") {
		t.Errorf("process of the whole set on the shadow's store: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "process", "--events", streamsEvent, "--store", shadow, "--projection", "no-such"); code != 2 || !strings.Contains(stderr, "--projection") {
		t.Errorf("process --projection no-such: exit %d, want 2 naming --projection\n%s%s", code, out, stderr)
	}

	code, out, stderr := runCLI(t, "status", "--store", shadow)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"store " + shadow + "\n",
		"  order-totals@9beaaa6e01a81ef9  this binary: same\n",
		"  (cart-contents: in this binary's set, not the store's)\n",
		"backfill: job 80e7997cc057608c of arn:aws:dynamodb:eu-west-1:111122223333:table/app/export/01796032802314-fa5ad9a8, as of 2026-11-30T10:00:02Z, 5 data files, started ",
		"  stream: not caught up yet; apply it from 2026-11-30T10:00:02Z on",
		"partials not folded: none\n",
		"items in the ledger: 159\n",
		"newest change applied from stream e7a2b99cffabf0fe: 2026-11-30T10:15:42Z (1 items)\n",
		"newest change applied from export: 2026-11-30T10:00:02Z (158 items)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	code, out, stderr = runCLI(t, "status", "--store", live, "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d\n%s%s", code, out, stderr)
	}
	var s struct {
		Set []struct {
			Name, Fingerprint string
		}
		Backfill *struct{ Job string }
		Sources  []struct {
			Source string
			Items  int64
		}
		Items int64
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(s.Set) != 5 || s.Backfill != nil || len(s.Sources) != 1 || s.Sources[0].Source != "stream e7a2b99cffabf0fe" || s.Items != 3 {
		t.Errorf("status --json of the live store: %+v\n%s", s, out)
	}
}

// TestStatusUsage: status needs a store, and says so.
func TestStatusUsage(t *testing.T) {
	if code, _, stderr := runCLI(t, "status"); code != 2 || !strings.Contains(stderr, "--store DIR or --table NAME is required") {
		t.Errorf("status with no store: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "status", "--store", filepath.Join(t.TempDir(), "none")); code == 0 {
		t.Errorf("status of a missing store: exit 0\n%s", stderr)
	}
}

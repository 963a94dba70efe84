package ledger_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"example.com/ledger"

	"github.com/tributary/tributary/scripts/cli"
)

// options are the ledger binary's, as cmd/ledger builds them.
var options = cli.Options{Name: "ledger", Environment: ledger.Environment()}

// run runs one command line of the ledger binary in-process and returns
// its exit status and output.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), options, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// mustRun runs a command line that must succeed.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := run(args...)
	if code != 0 {
		t.Fatalf("ledger %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// decoded is what the test reads of a line of `ledger decode`.
type decoded struct {
	Kind    string                       `json:"kind"`
	New     map[string]map[string]string `json:"new"`
	Old     map[string]map[string]string `json:"old"`
	NewType string                       `json:"newType"`
	OldType string                       `json:"oldType"`
	Version string                       `json:"version"`
	TTL     bool                         `json:"ttl"`
}

func decodeLines(t *testing.T, out string) []decoded {
	t.Helper()
	var lines []decoded
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var d decoded
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("decode output %q: %v", sc.Text(), err)
		}
		lines = append(lines, d)
	}
	return lines
}

// TestCLIDecode: decode reads the export's lines and the Streams event by
// the ledger's attributes, without a flag: each change carries its kind as
// its type and its rev as its version, and the export's items their keys.
func TestCLIDecode(t *testing.T) {
	args := append([]string{"decode", "--format", "export"}, dataFiles(t)...)
	lines := decodeLines(t, mustRun(t, args...))
	if len(lines) != 11 {
		t.Fatalf("decode --format export: %d changes, want the export's 11", len(lines))
	}
	types := map[string]int{}
	for _, d := range lines {
		types[d.NewType]++
		if d.Kind != "INSERT" || d.NewType == "" || d.NewType != d.New["kind"]["S"] || d.Version == "" || d.Version != d.New["rev"]["N"] {
			t.Errorf("export line: %+v, want an INSERT whose newType is its kind and version its rev", d)
		}
	}
	if types["Transfer"] != 7 || types["Account"] != 3 || types["IdempotencyKey"] != 1 {
		t.Errorf("export's types: %v", types)
	}

	lines = decodeLines(t, mustRun(t, "decode", streamsEvent))
	if len(lines) != 18 {
		t.Fatalf("decode %s: %d changes, want 18", streamsEvent, len(lines))
	}
	for i, d := range lines {
		img, typ := d.New, d.NewType
		if d.Kind == "REMOVE" {
			img, typ = d.Old, d.OldType
		}
		if typ == "" || typ != img["kind"]["S"] || d.Version == "" || d.Version != img["rev"]["N"] {
			t.Errorf("record %d: %+v, want its kind as its type and its rev as its version", i, d)
		}
	}
	// t1 settled: the MODIFY carries both types and the new rev.
	if d := lines[7]; d.Kind != "MODIFY" || d.OldType != "Transfer" || d.NewType != "Transfer" || d.Version != "2" || d.New["status"]["S"] != "SETTLED" {
		t.Errorf("record 7: %+v", d)
	}
	if d := lines[17]; d.Kind != "REMOVE" || !d.TTL || d.OldType != "IdempotencyKey" {
		t.Errorf("record 17, the TTL removal: %+v", d)
	}
}

// manifest is what the test reads of a repartition's entity manifest.
type manifest struct {
	Entity       string `json:"entity"`
	Segment      string `json:"segment"`
	ImportPrefix string `json:"importPrefix"`
	ItemCount    int64  `json:"itemCount"`
}

// readOutput returns the entity manifests of a repartition's output, by
// directory, and its summary's type attribute.
func readOutput(t *testing.T, out string) (map[string]manifest, string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(out, "entity=*"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]manifest{}
	for _, d := range dirs {
		var m manifest
		b, err := os.ReadFile(filepath.Join(d, "_manifest.json"))
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		got[filepath.Base(d)] = m
	}
	var summary struct {
		TypeAttribute string `json:"typeAttribute"`
	}
	b, err := os.ReadFile(filepath.Join(out, "_summary.json"))
	if err == nil {
		err = json.Unmarshal(b, &summary)
	}
	if err != nil {
		t.Fatalf("the output's summary: %v", err)
	}
	return got, summary.TypeAttribute
}

// TestCLIRepartition: repartition splits the export by kind (never into
// entity=_unknown, as it would by EntityType), and with the ledger's
// transform splits each transfer into its two postings.
func TestCLIRepartition(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  map[string]int64
		out   string
	}{
		{nil, map[string]int64{"Account": 3, "IdempotencyKey": 1, "Transfer": 7}, "11 items in, 11 out"},
		{[]string{"--transform", "transfers-by-account"}, map[string]int64{"Account": 3, "IdempotencyKey": 1, "Transfer": 14},
			"11 items in, 18 out (transform transfers-by-account: 0 dropped, 7 added)"},
	} {
		out := t.TempDir()
		stdout := mustRun(t, append([]string{"repartition", "--export", "testdata/export", "--out", out}, tc.flags...)...)
		if !strings.Contains(stdout, tc.out) {
			t.Errorf("%v: stdout lacks %q:\n%s", tc.flags, tc.out, stdout)
		}
		got, typeAttr := readOutput(t, out)
		if typeAttr != "kind" {
			t.Errorf("%v: the summary's typeAttribute %q, want kind", tc.flags, typeAttr)
		}
		var dirs []string
		for d, m := range got {
			dirs = append(dirs, d)
			if w, ok := tc.want[m.Entity]; !ok || d != "entity="+m.Entity || m.Segment != d || m.ImportPrefix != d+"/part-" || m.ItemCount != w {
				t.Errorf("%v: %s: %+v, want entity %s with %d items", tc.flags, d, m, strings.TrimPrefix(d, "entity="), w)
			}
		}
		slices.Sort(dirs)
		if want := []string{"entity=Account", "entity=IdempotencyKey", "entity=Transfer"}; !slices.Equal(dirs, want) {
			t.Errorf("%v: partitions %v, want %v", tc.flags, dirs, want)
		}
	}
}

// dropRecord writes the Streams event without record i to a new file.
func dropRecord(t *testing.T, i int) string {
	t.Helper()
	data, err := os.ReadFile(streamsEvent)
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string][]json.RawMessage
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	ev["Records"] = slices.Delete(ev["Records"], i, i+1)
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCLIProcessVerify: process builds a store from each event, and verify
// finds it equal to the recomputation from the export (AGREE, exit 0); a
// store that missed one change (t1's settlement) differs (MISMATCH, exit 1)
// on the counters that change moves, and on nothing else.
func TestCLIProcessVerify(t *testing.T) {
	for _, events := range []string{streamsEvent, kinesisEvent} {
		t.Run(filepath.Base(events), func(t *testing.T) {
			store := t.TempDir()
			out := mustRun(t, "process", "--store", store, "--events", events)
			if !strings.Contains(out, "0 failed") {
				t.Errorf("process:\n%s", out)
			}
			out = mustRun(t, "verify", "--export", "testdata/export", "--store", store)
			if !strings.Contains(out, "recomputed 8 aggregates and 2 rows from 11 items") || !strings.Contains(out, "\nAGREE: ") {
				t.Errorf("verify:\n%s", out)
			}
		})
	}

	store := t.TempDir()
	mustRun(t, "process", "--store", store, "--events", dropRecord(t, 7))
	code, out, errs := run("verify", "--export", "testdata/export", "--store", store)
	if code != 1 || !strings.Contains(out, "\nMISMATCH: 6 differences") || strings.Contains(out, "AGREE") || errs != "" {
		t.Fatalf("verify of a store without t1's settlement: exit %d\n%s%s", code, out, errs)
	}
	for _, diff := range []string{
		"daily-volume ACCOUNT#anna#DEBIT#EUR#2026-11-30 amount: got 0, want 125.50",
		"daily-volume ACCOUNT#anna#DEBIT#EUR#2026-11-30 transfers: got 0, want 1",
		"daily-volume ACCOUNT#bram#CREDIT#EUR#2026-11-30 amount: got 0, want 125.50",
		"daily-volume ACCOUNT#bram#CREDIT#EUR#2026-11-30 transfers: got 0, want 1",
		"daily-volume CCY#EUR#DAY#2026-11-30 amount: got 40.25, want 165.75",
		"daily-volume CCY#EUR#DAY#2026-11-30 transfers: got 1, want 2",
	} {
		if !strings.Contains(out, "\n  "+diff+"\n") {
			t.Errorf("the mismatch lacks %q:\n%s", diff, out)
		}
	}
}

// TestCLIArchiveRestore: process --archive archives the event's TTL
// removal under its kind and the date of its expiresAt (30 November, not
// the removal's 1 December), and restore reads it back by the ledger's
// keys into an export that decode reads.
func TestCLIArchiveRestore(t *testing.T) {
	archive := t.TempDir()
	out := mustRun(t, "process", "--store", t.TempDir(), "--events", streamsEvent, "--archive", archive)
	if !strings.Contains(out, "archiver: 1 TTL removals archived in 1 objects") {
		t.Errorf("process --archive:\n%s", out)
	}
	out = mustRun(t, "archive", "ls", "--from", archive)
	if !strings.Contains(out, "entity=IdempotencyKey/date=2026-11-30/5120036700000000031877000018.jsonl.gz") {
		t.Errorf("archive ls:\n%s", out)
	}
	restored := t.TempDir()
	if out = mustRun(t, "restore", "--from", archive, "--to", restored); !strings.HasPrefix(out, "wrote 1 items from 1 objects") {
		t.Errorf("restore:\n%s", out)
	}
	files, err := filepath.Glob(filepath.Join(restored, "AWSDynamoDB", "*", "data", "*.json.gz"))
	if err != nil || len(files) != 1 {
		t.Fatalf("restored data files: %v, %v", files, err)
	}
	lines := decodeLines(t, mustRun(t, "decode", "--format", "export", files[0]))
	if len(lines) != 1 || lines[0].NewType != "IdempotencyKey" || lines[0].Version != "1" || lines[0].New["pk"]["S"] != "IDEMPOTENCY#9b1f0c" || lines[0].New["expiresAt"]["N"] != "1796025600" {
		t.Errorf("the restored item: %+v", lines)
	}
}

// TestCLIRefusesOtherAttributes: every command refuses, as a usage
// mistake (exit 2) naming the ledger binary and the command, a flag that
// names another attribute than the ledger's, before it writes anything.
func TestCLIRefusesOtherAttributes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	store := filepath.Join(t.TempDir(), "store")
	commands := map[string][]string{
		"decode":      {"decode", "--format", "export", dataFiles(t)[0]},
		"repartition": {"repartition", "--export", "testdata/export", "--out", out},
		"process":     {"process", "--store", store, "--events", streamsEvent},
		"verify":      {"verify", "--export", "testdata/export", "--store", store},
		"restore":     {"restore", "--from", "testdata", "--to", out},
	}
	for _, tc := range []struct {
		commands []string
		flag     []string
		want     string
	}{
		{[]string{"decode", "repartition", "verify", "restore"}, []string{"--key-attributes", "PK,SK"},
			"--key-attributes PK,SK, but this table's environment has the key attributes pk,sk"},
		{[]string{"decode", "repartition", "process", "verify"}, []string{"--type-attribute", "EntityType"},
			`--type-attribute "EntityType", but this table's environment reads the entity type from "kind"`},
		{[]string{"decode", "repartition", "process", "verify"}, []string{"--version-attribute", "version"},
			`--version-attribute "version", but this table's environment reads the version from "rev"`},
		{[]string{"process"}, []string{"--ttl-attribute", "ttl"},
			`--ttl-attribute "ttl", but this table's environment reads the expiry from "expiresAt"`},
	} {
		for _, c := range tc.commands {
			// The flag first: flags end at decode's first file.
			args := append(append([]string{c}, tc.flag...), commands[c][1:]...)
			code, stdout, stderr := run(args...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "ledger "+c+": usage: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("ledger %s: exit %d\nstdout: %s\nstderr: %s\nwant exit 2 and \"ledger %s: usage: …%s\"", strings.Join(args, " "), code, stdout, stderr, c, tc.want)
			}
		}
		// The ledger's own attributes, given again, are accepted.
		if code, _, stderr := run("decode", "--format", "export", "--key-attributes", "pk,sk", "--type-attribute", "kind", "--version-attribute", "rev", dataFiles(t)[0]); code != 0 {
			t.Errorf("decode with the ledger's own attributes: exit %d\n%s", code, stderr)
		}
	}
	for _, p := range []string{out, store} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: written by a refused command (%v)", p, err)
		}
	}
}

// TestCLIMessages: the ledger binary's usage and messages name it and
// the command.
func TestCLIMessages(t *testing.T) {
	badLine := filepath.Join(t.TempDir(), "line.json")
	if err := os.WriteFile(badLine, []byte(`{"Item":{"PK":{"S":"TRANSFER#t9"},"SK":{"S":"TRANSFER"},"kind":{"S":"Transfer"},"rev":{"N":"1"}}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verify", "--store", t.TempDir()}, 2, "ledger verify: usage: --export is required"},
		{[]string{"repartition", "--export", "testdata/export"}, 2, "ledger repartition: usage: --out is required"},
		{[]string{"process", "--store", t.TempDir()}, 2, "ledger process: usage: no --events files"},
		// An item keyed as Tributary's default PK and SK is not the ledger's.
		{[]string{"decode", "--format", "export", badLine}, 1, "item has none of the key attributes [pk sk]\nledger decode: 1 record(s) could not be decoded"},
		{[]string{"repartition", "--transform", "nope", "--export", "testdata/export", "--out", t.TempDir()}, 2,
			`ledger repartition: usage: --transform: no transform "nope" (known: transfers-by-account)`},
		{nil, 2, "Usage: ledger <command>"},
	} {
		code, _, stderr := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("ledger %s: exit %d\n%s\nwant exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
	if code, stdout, _ := run("help"); code != 0 || !strings.Contains(stdout, "Usage: ledger <command>") {
		t.Errorf("ledger help: exit %d\n%s\nwant exit 0 and the usage on stdout", code, stdout)
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/projections"
)

const ticketsSpec = "../../examples/tickets/projections.yaml"

func TestProjectionsCheck(t *testing.T) {
	code, out, stderr := runCLI(t, "projections", "check", ticketsSpec)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "projections-check.txt", out)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nprojections:\n  - name: a\n    entityTypes: [T]\n    countrs: []\n  - name: a\n    entityTypes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "projections", "check", bad)
	for _, want := range []string{bad + ":5: projection a: countrs", bad + ":6: ", "invalid projection spec"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("a bad spec: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "projections", "check"); code != 2 || !strings.Contains(stderr, "one spec file") {
		t.Errorf("no file: exit %d %s", code, stderr)
	}
}

// TestSpecFlag: --projections runs a spec's projections instead of the
// binary's: the stock spec processes the seed events into the aggregates
// the Go set gives; the store is then the spec's, which the Go set may not
// write to (the fingerprints differ), and filters print the spec's types.
func TestSpecFlag(t *testing.T) {
	dir := t.TempDir()
	stock := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(stock, seed.SpecYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	events := []string{"--events", fixtures + "streams/event.json", "--events", fixtures + "kinesis/event-ms.json"}
	goDir, specDir := filepath.Join(dir, "go"), filepath.Join(dir, "spec")
	if code, _, stderr := runCLI(t, append([]string{"process", "--store", goDir}, events...)...); code != 0 {
		t.Fatalf("go: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, append([]string{"process", "--store", specDir, "--projections", stock}, events...)...); code != 0 {
		t.Fatalf("spec: exit %d: %s", code, stderr)
	}
	if d := projections.Diff(storeView(t, specDir), storeView(t, goDir)); len(d) > 0 {
		t.Errorf("the stock spec and the Go set differ: %v", d)
	}
	code, _, stderr := runCLI(t, append([]string{"process", "--store", specDir}, events...)...)
	if code != 1 || !strings.Contains(stderr, "projection set mismatch") || !strings.Contains(stderr, "definition changed") ||
		!strings.Contains(stderr, "a Go projection written as a spec, or the reverse") || !strings.Contains(stderr, "`tributary projections adopt` instead") {
		t.Errorf("the Go set on the spec's store (the same rules): exit %d, %s", code, stderr)
	}
	// A set with other projections is no case for adopt.
	code, _, stderr = runCLI(t, append([]string{"process", "--store", specDir, "--projections", ticketsSpec}, events...)...)
	if code != 1 || !strings.Contains(stderr, "projection set mismatch") || strings.Contains(stderr, "projections adopt") {
		t.Errorf("another set on the spec's store: exit %d, %s", code, stderr)
	}
	code, out, _ := runCLI(t, "filters", "--projections", ticketsSpec)
	if code != 0 || !strings.Contains(out, `\"EntityType\":{\"S\":[\"Ticket\"]}`) {
		t.Errorf("filters --projections: exit %d\n%s", code, out)
	}
	if code, _, stderr := runCLI(t, "filters", "--projections", ticketsSpec, "--type-attribute", "kind"); code != 2 || !strings.Contains(stderr, `--type-attribute "kind", but this table's environment reads the entity type from "EntityType"`) {
		t.Errorf("filters with another type attribute: exit %d %s", code, stderr)
	}
}

// TestCheckTemplateParameters: `projections check` prints every template
// parameter a spec implies, its attributes' among them (the defaults for
// those it does not declare).
func TestCheckTemplateParameters(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ledger.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
typeAttribute: kind
versionAttribute: rev
keyAttributes: [pk, sk]
ttlAttribute: expiresAt
projections:
  - name: transfers
    entityTypes: [Transfer]
    counters:
      - key: "ALL"
        values: {transfers: 1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "projections", "check", file)
	want := "SAM template parameters: ProjectedEntityTypes=Transfer TypeAttribute=kind VersionAttribute=rev KeyAttributes=pk,sk TTLAttribute=expiresAt\n"
	if code != 0 || !strings.HasSuffix(out, want) {
		t.Errorf("exit %d %s\n%s, want it to end with %s", code, stderr, out, want)
	}
	code, out, _ = runCLI(t, "projections", "check", ticketsSpec)
	if want := "TypeAttribute=EntityType VersionAttribute=version KeyAttributes=PK,SK TTLAttribute=ttl\n"; code != 0 || !strings.HasSuffix(out, want) {
		t.Errorf("the defaults: exit %d\n%s", code, out)
	}
}

// writeFile writes data to name in a new temporary directory and returns
// its path.
func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeEvents writes a Lambda DynamoDB Streams event of one INSERT per
// image (DynamoDB JSON with PK and SK) and returns its path.
func writeEvents(t *testing.T, images ...string) string {
	t.Helper()
	recs := make([]string, len(images))
	for i, img := range images {
		var item map[string]any
		if err := json.Unmarshal([]byte(img), &item); err != nil {
			t.Fatal(err)
		}
		keys, _ := json.Marshal(map[string]any{"PK": item["PK"], "SK": item["SK"]})
		recs[i] = fmt.Sprintf(`{"eventID":"e%d","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000","dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":%s,"NewImage":%s,"SequenceNumber":"44216000000000000000000%05d","StreamViewType":"NEW_AND_OLD_IMAGES"}}`, i, keys, img, i)
	}
	return writeFile(t, "event.json", `{"Records":[`+strings.Join(recs, ",")+`]}`)
}

// whenSpec is a spec of one projection, p, counting the T items whose n
// (an int) satisfies when.
func whenSpec(when string) string {
	return "version: 1\nprojections:\n  - name: p\n    entityTypes: [T]\n    item: {n: int}\n    when: '" + strings.ReplaceAll(when, "'", "''") + "'\n    counters: [{key: T, values: {items: 1}}]\n"
}

// TestProjectionsCheckUnbounded: check refuses an expression whose loops
// over ranges of constant bounds would go over an item's budget on any
// item, naming it; the same loops over a range the item sizes load, as
// the budget stops them per item (TestProcessEvaluationBudget).
func TestProjectionsCheckUnbounded(t *testing.T) {
	const when = "let r = 1..900000; all(r, {all(r, # > 0)})"
	file := writeFile(t, "spec.yaml", whenSpec(when))
	code, _, stderr := runCLI(t, "projections", "check", file)
	want := file + ":6: projection p: when: " + when + ": it may take up to 2.8e+13 steps on any item, more than the 1048576 an item may take"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
	}
	if code, _, stderr := runCLI(t, "projections", "check", writeFile(t, "spec.yaml", whenSpec("let r = 1..n; all(r, {all(r, # > 0)})"))); code != 0 {
		t.Errorf("a range the item sizes: exit %d: %s", code, stderr)
	}
}

// TestProcessEvaluationBudget: an item whose expression would loop 8.1e11
// times (before budgets: a CPU burnt for 847 s on one record) fails at its
// budget, in milliseconds, as a permanent error naming the projection,
// the field and the expression; the item before it applies. The command
// runs in a process of its own, so that a command that loops is killed.
func TestProcessEvaluationBudget(t *testing.T) {
	const when = "let r = 1..n; all(r, {all(r, # > 0)})"
	file := writeFile(t, "spec.yaml", whenSpec(when))
	events := writeEvents(t,
		`{"PK":{"S":"T#1"},"SK":{"S":"A"},"EntityType":{"S":"T"},"n":{"N":"3"},"version":{"N":"1"}}`,
		`{"PK":{"S":"T#2"},"SK":{"S":"A"},"EntityType":{"S":"T"},"n":{"N":"900000"},"version":{"N":"1"}}`)
	store := t.TempDir()
	cmd, out, stderr := child(t, "process", "-v", "--store", store, "--projections", file, events)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // its status is in cmd.ProcessState
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("process still running after a minute")
	}
	want := "record 1 (seq 4421600000000000000000000001, entity type T): p: item T#2/A: when: " + when +
		": evaluation stopped: it takes more than the 1048576 steps an item may take"
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(out.String(), "2 records, 1 applied, 0 skipped (no projection reads their entity type), 1 failed") ||
		!strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), `"permanent":true`) {
		t.Fatalf("exit %d, want 1 and %q\n%s%s", cmd.ProcessState.ExitCode(), want, out, stderr)
	}
	code, aggs, stderr2 := runCLI(t, "aggregates", "--store", store)
	if code != 0 || !strings.Contains(aggs, "p  T items=1") {
		t.Errorf("aggregates: exit %d\n%s%s", code, aggs, stderr2)
	}
}

// TestProcessCancelled: a command whose context is cancelled (the first
// SIGINT or SIGTERM: TestSignals) stops at its next store call and writes
// nothing more.
func TestProcessCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	store := t.TempDir()
	var out, errb bytes.Buffer
	code := Run(ctx, stockOptions, []string{"process", "--store", store, "--events", fixtures + "streams/event.json"}, strings.NewReader(""), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "context canceled") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if code, aggs, stderr := runCLI(t, "aggregates", "--store", store); code != 0 || strings.TrimSpace(aggs) != "" {
		t.Errorf("aggregates of a cancelled process: exit %d\n%s%s", code, aggs, stderr)
	}
}

// TestProcessArithmetic: arithmetic whose result expr would get wrong
// fails the item, permanently, naming the expression, rather than
// counting it; its neighbour is applied. expr's / divides as floats, so
// 1 / (n - 7) of 7 is +Inf, and +Inf > 0; its integer arithmetic wraps around,
// so n * n of 2^32 would be 0 (the neighbour's square is just within the
// 64-bit integers).
func TestProcessArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name, when, good, bad, want string
	}{
		{"not finite", "1 / (n - 7) > 0", "8", "7", "not a finite number: 1 / (n - 7) gives +Inf"},
		{"integer overflow", "n * n > 0", "3037000499", "4294967296", "integer overflow: n * n is beyond the 64-bit integers (±9223372036854775807)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, "spec.yaml", whenSpec(tc.when))
			good := `{"PK":{"S":"T#1"},"SK":{"S":"A"},"EntityType":{"S":"T"},"n":{"N":"` + tc.good + `"},"version":{"N":"1"}}`
			events := writeEvents(t, good, `{"PK":{"S":"T#2"},"SK":{"S":"A"},"EntityType":{"S":"T"},"n":{"N":"`+tc.bad+`"},"version":{"N":"1"}}`)
			code, out, stderr := runCLI(t, "process", "--store", t.TempDir(), "--projections", file, events)
			want := "record 1 (seq 4421600000000000000000000001, entity type T): p: item T#2/A: when: " + tc.when + ": " + tc.want
			if code != 1 || !strings.Contains(out, "2 records, 1 applied, 0 skipped (no projection reads their entity type), 1 failed") || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, want 1 and %q\n%s%s", code, want, out, stderr)
			}
		})
	}
}

// TestChecksBeforeWhen: a projection's checks hold on every item of its
// types, where its when is false too: a status written "SETTLED" where
// the checks want "settled" fails the record rather than contributing
// nothing, silently.
func TestChecksBeforeWhen(t *testing.T) {
	file := writeFile(t, "spec.yaml", `version: 1
projections:
  - name: settlements
    entityTypes: [Payment]
    item: {status: S, amount: N}
    checks:
      - expr: status in ["settled", "pending"]
        attribute: status
        message: want settled or pending
    when: status == "settled"
    counters: [{key: SETTLED, values: {payments: 1, amount: amount}}]
`)
	events := writeEvents(t,
		`{"PK":{"S":"PAY#1"},"SK":{"S":"A"},"EntityType":{"S":"Payment"},"status":{"S":"settled"},"amount":{"N":"10"},"version":{"N":"1"}}`,
		`{"PK":{"S":"PAY#2"},"SK":{"S":"A"},"EntityType":{"S":"Payment"},"status":{"S":"pending"},"amount":{"N":"20"},"version":{"N":"1"}}`,
		`{"PK":{"S":"PAY#3"},"SK":{"S":"A"},"EntityType":{"S":"Payment"},"status":{"S":"SETTLED"},"amount":{"N":"30"},"version":{"N":"1"}}`)
	code, out, stderr := runCLI(t, "process", "--store", t.TempDir(), "--projections", file, events)
	want := `record 2 (seq 4421600000000000000000000002, entity type Payment): settlements: item PAY#3/A: status: want settled or pending, got "SETTLED"`
	if code != 1 || !strings.Contains(out, "3 records, 2 applied, 0 skipped (no projection reads their entity type), 1 failed") || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want 1 and %q\n%s%s", code, want, out, stderr)
	}
}

// TestSortableKeys: a row sorted by {amount:sortable} — any number, in
// text whose byte order is the numbers' order — lists a day's transfers by
// amount, decimals and negative amounts included, as one descending Query
// (rows) reads them; the row's amount is the number, as the item wrote it.
func TestSortableKeys(t *testing.T) {
	file := writeFile(t, "spec.yaml", `version: 1
projections:
  - name: transfers-by-amount
    entityTypes: [Transfer]
    item: {PK: S, day: S, amount: N}
    rows:
      - partition: "DAY#{day}"
        sort: "AMOUNT#{amount:sortable}#{PK[1]}"
        attributes: {amount: amount}
`)
	amounts := []string{"120.50", "-5", "0", "1E+3", "99.999", "-1000.25", "0.05", "120.5", "-0.05", "12345678901234567890123456789012345678"}
	var images []string
	for i, a := range amounts {
		images = append(images, fmt.Sprintf(`{"PK":{"S":"TR#t%d"},"SK":{"S":"A"},"EntityType":{"S":"Transfer"},"day":{"S":"2026-11-30"},"amount":{"N":%q},"version":{"N":"1"}}`, i, a))
	}
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "process", "--store", store, "--projections", file, writeEvents(t, images...)); code != 0 {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := runCLI(t, "rows", "--store", store, "--projection", "transfers-by-amount", "--partition", "DAY#2026-11-30", "--top", "0")
	if code != 0 {
		t.Fatalf("rows: exit %d: %s", code, stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		_, attrs, _ := strings.Cut(line, "  ")
		got = append(got, attrs)
	}
	want := []string{"12345678901234567890123456789012345678", "1E+3", "120.5", "120.50", "99.999", "0.05", "0", "-0.05", "-5", "-1000.25"}
	for i := range want {
		want[i] = `{"amount":{"N":"` + want[i] + `"}}`
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows by amount, descending:\n%s\nwant the amounts\n%s", out, strings.Join(want, "\n"))
	}
	if !strings.Contains(out, "AMOUNT#P1321205"+strings.Repeat("0", 34)+"#t0  ") {
		t.Errorf("120.50 is not encoded as documented:\n%s", out)
	}
}

// TestProjectionsCheckCosts: what a spec may cost to load is bounded: its
// size, its values with aliases expanded, its expressions and their
// nodes, and compiling its patterns. A spec over a limit is refused,
// saying which, quickly and in little memory (as found before the limits: an alias bomb
// refused after 185 MB, 49 KB of patterns loading in 5.3 s, 3 MB of
// projections in 99 s and 3.9 GB).
func TestProjectionsCheckCosts(t *testing.T) {
	var projs strings.Builder
	projs.WriteString("version: 1\nprojections:\n")
	for i := 0; projs.Len() <= 300<<10; i++ {
		fmt.Fprintf(&projs, "  - name: p%d\n    entityTypes: [T%d]\n    item: {PK: S, a: N}\n    counters: [{key: \"K#{PK}\", values: {n: 1, s: a}}]\n", i, i)
	}
	var bomb strings.Builder
	bomb.WriteString("version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for k := 1; k <= 8; k++ {
		fmt.Fprintf(&bomb, "a%d: &a%d [%s]\n", k, k, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", k-1), 10), ", "))
	}
	bomb.WriteString("projections: []\n")
	var patterns strings.Builder
	patterns.WriteString("version: 1\nprojections:\n  - name: r\n    entityTypes: [T]\n    item: {s: S}\n    counters: [{key: K, values: {n: 1}}]\n    checks:\n")
	for i := 0; patterns.Len() < 49_000; i++ {
		fmt.Fprintf(&patterns, "      - s matches \"[\\\\p{L}\\\\p{N}]{1000}x%d\"\n", i)
	}
	var exprs strings.Builder
	exprs.WriteString("version: 1\nprojections:\n  - name: e\n    entityTypes: [T]\n    item: {n: int}\n    counters: [{key: K, values: {n: 1}}]\n    checks:\n")
	for i := range 2001 {
		fmt.Fprintf(&exprs, "      - n != %d\n", i)
	}
	long := strings.Repeat("n + ", 4998) + "n > 0"
	var nodes strings.Builder
	nodes.WriteString("version: 1\nprojections:\n  - name: e\n    entityTypes: [T]\n    item: {n: int}\n    counters: [{key: K, values: {n: 1}}]\n    checks:\n")
	for range 6 {
		fmt.Fprintf(&nodes, "      - %s\n", long)
	}
	cases := []struct {
		name, data, want string
	}{
		{"larger than 256 KiB", projs.String(), "spec.yaml: the file has more than 262144 bytes (256 KiB): a spec is at most that"},
		{"an alias bomb", bomb.String(), "spec.yaml:6: more than 65536 values, aliases counting the values they stand for (are aliases expanding without end?)"},
		{"costly patterns", patterns.String(), `spec.yaml:13: projection r: checks[5]: s matches "[\\p{L}\\p{N}]{1000}x5": with those before it, the spec's patterns cost more than 2000000 to compile`},
		{"many expressions", exprs.String(), "spec.yaml:2008: projection e: checks[2000]: n != 2000: the spec has more than 2000 expressions, aliases counting those they stand for"},
		{"many expression nodes", nodes.String(), "spec.yaml:13: projection e: checks[5]: " + strings.Repeat("n + ", 15) + "…: with the expressions before it, the spec's expressions have more than 50000 nodes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, "spec.yaml", tc.data)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			code, _, stderr := runCLI(t, "projections", "check", file)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if code != 1 || !strings.Contains(stderr, filepath.Dir(file)+"/"+tc.want) {
				t.Errorf("exit %d, stderr lacks %q:\n%.2000s", code, tc.want, stderr)
			}
			// Far more than the figures docs/projections-spec.md gives
			// (under load, with the race detector).
			if alloc := after.TotalAlloc - before.TotalAlloc; took > 10*time.Second || alloc > 128<<20 {
				t.Errorf("refused after %v and %d MB allocated", took, alloc>>20)
			}
		})
	}
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileSpec is a valid spec whose names, types, keys and attributes set
// the terminal's title, clear it, or reverse the text.
const hostileSpec = `version: 1
typeAttribute: "kind\e[2J"
projections:
  - name: totals
    entityTypes: ["Order\e]0;PWNED\a\e[2J", "Refund\u202egnp.exe"]
    item:
      status: S
      total: N
    counters:
      - key: "ORDERS\e]0;PWNED\a#{status}"
        values: {"orders\e[2J": 1, "revenue\u009b2J": total}
    rows:
      - partition: "P\e]0;T\a#{status}"
        sort: "S\u009b2J#{status}"
        attributes: {"st\e[2J": status}
`

// TestProjectionsSpecEscaped: projections check and show print what a spec
// says escaped, as every other human-readable output does, and the filter
// criteria check prints are JSON a terminal shows as it is.
func TestProjectionsSpecEscaped(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hostile.yaml")
	if err := os.WriteFile(file, []byte(hostileSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"projections", "check", file},
		{"projections", "show", "--projections", file},
		{"filters", "--projections", file},
	} {
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(args[:2], " "), code, stderr)
		}
		checkPrintable(t, strings.Join(args[:2], " "), out+stderr)
		if !strings.Contains(out, `Order\x1b]0;PWNED\a\x1b[2J`) && !strings.Contains(out, `Order\\u001b]0;PWNED\\u0007\\u001b[2J`) {
			t.Errorf("%s does not show the entity type escaped:\n%s", strings.Join(args[:2], " "), out)
		}
	}
	_, out, _ := runCLI(t, "projections", "check", file)
	for _, want := range []string{
		`counter ORDERS\x1b]0;PWNED\a#{status}: orders\x1b[2J, revenue\u009b2J`,
		`row P\x1b]0;T\a#{status} / S\u009b2J#{status}: st\x1b[2J`,
		`Refund\u202egnp.exe (attribute kind\x1b[2J)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("projections check lacks %s:\n%s", want, out)
		}
	}
	// The filter criteria are JSON of the types themselves.
	for _, line := range strings.Split(out, "\n") {
		js, ok := strings.CutPrefix(line, "filter criteria (projector, DynamoDB Streams): ")
		if !ok {
			continue
		}
		var fc struct{ Filters []struct{ Pattern string } }
		if err := json.Unmarshal([]byte(js), &fc); err != nil || len(fc.Filters) == 0 {
			t.Fatalf("filter criteria %s: %v", js, err)
		}
		if !strings.Contains(fc.Filters[0].Pattern, "Refund\u202egnp.exe") {
			t.Errorf("the filter pattern %q does not hold the type", fc.Filters[0].Pattern)
		}
	}
}

// rowsStore processes one player whose ID (and so the leaderboard row's
// sort key) and handle hold what a terminal interprets.
func rowsStore(t *testing.T) string {
	t.Helper()
	events := filepath.Join(t.TempDir(), "event.json")
	rec := streamsRecord(1, map[string]string{"PK": "PLAYER#u1" + hostile + "\u202e", "SK": "PROFILE", "EntityType": "Player", "version": "1", "handle": "h\u009b2J", "season": "2026-Q2", "rating": "1842"})
	if err := os.WriteFile(events, []byte(`{"Records":[`+rec+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "process", "--store", store, events); code != 0 {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	return store
}

// TestRowsEscaped: rows prints the sort key escaped, and rows --json writes
// JSON (Go's \a and \x1b are not) that a terminal shows as it is and that
// reads back as the row's sort key and values.
func TestRowsEscaped(t *testing.T) {
	store := rowsStore(t)
	rows := []string{"rows", "--store", store, "--projection", "season-leaderboard", "--partition", "SEASON#2026-Q2"}
	code, out, stderr := runCLI(t, rows...)
	if code != 0 {
		t.Fatalf("rows: exit %d: %s", code, stderr)
	}
	checkPrintable(t, "rows", out+stderr)
	if !strings.HasPrefix(out, `RATING#0000001842#PLAYER#u1\x1b]0;PWNED\a\x1b[2J\u202e  `) {
		t.Errorf("rows does not print the sort key escaped:\n%s", out)
	}

	code, out, stderr = runCLI(t, append(rows, "--json")...)
	if code != 0 {
		t.Fatalf("rows --json: exit %d: %s", code, stderr)
	}
	checkPrintable(t, "rows --json", out+stderr)
	line := strings.TrimSuffix(out, "\n")
	if strings.Contains(line, "\n") || !json.Valid([]byte(line)) {
		t.Fatalf("rows --json is not one line of JSON:\n%s", out)
	}
	var row struct {
		Sort   string                       `json:"sort"`
		Values map[string]map[string]string `json:"values"`
	}
	if err := json.Unmarshal([]byte(line), &row); err != nil {
		t.Fatal(err)
	}
	if row.Sort != "RATING#0000001842#PLAYER#u1"+hostile+"\u202e" || row.Values["handle"]["S"] != "h\u009b2J" {
		t.Errorf("rows --json reads back as %+v", row)
	}

	// aggregates --json writes the same row: JSON too.
	code, out, stderr = runCLI(t, "aggregates", "--store", store, "--json")
	if code != 0 {
		t.Fatalf("aggregates --json: exit %d: %s", code, stderr)
	}
	checkPrintable(t, "aggregates --json", out+stderr)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("aggregates --json wrote a line that is not JSON: %s", l)
		}
	}
}

// TestRowsJSONValues: rows --json names a row's values "values", as
// aggregates --json does, and for one release also "attributes", the name
// it had.
func TestRowsJSONValues(t *testing.T) {
	events := filepath.Join(t.TempDir(), "event.json")
	rec := streamsRecord(1, map[string]string{"PK": "PLAYER#u8231", "SK": "PROFILE", "EntityType": "Player", "version": "1", "handle": "zoe", "season": "2026-Q2", "rating": "1842"})
	if err := os.WriteFile(events, []byte(`{"Records":[`+rec+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	if code, out, stderr := runCLI(t, "process", "--store", store, events); code != 0 {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := runCLI(t, "rows", "--store", store, "--projection", "season-leaderboard", "--partition", "SEASON#2026-Q2", "--top", "1", "--json")
	if code != 0 {
		t.Fatalf("rows --json: exit %d: %s", code, stderr)
	}
	const values = `{"handle":{"S":"zoe"},"player":{"S":"u8231"},"rating":{"N":"1842"},"season":{"S":"2026-Q2"}}`
	want := `{"sort":"RATING#0000001842#PLAYER#u8231","values":` + values + `,"attributes":` + values + "}\n"
	if out != want {
		t.Errorf("rows --json\n got %s\nwant %s", out, want)
	}
	_, agg, _ := runCLI(t, "aggregates", "--store", store, "--json", "--projection", "season-leaderboard")
	if !strings.Contains(agg, `"sort":"RATING#0000001842#PLAYER#u8231","values":`+values+"}") {
		t.Errorf("aggregates --json names the row's values otherwise:\n%s", agg)
	}
}

// TestDecodeEscaped: decode writes JSON in which what a terminal would
// interpret (C1 controls, bidirectional overrides) is escaped too, and
// which reads back as the same strings.
func TestDecodeEscaped(t *testing.T) {
	events := filepath.Join(t.TempDir(), "event.json")
	rec := streamsRecord(1, map[string]string{"PK": "PLAYER#u1\u202e", "SK": "PROFILE", "EntityType": "Player", "version": "1", "handle": "h\u009b2J" + hostile, "season": "2026-Q2", "rating": "1842"})
	if err := os.WriteFile(events, []byte(`{"Records":[`+rec+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "decode", events)
	if code != 0 {
		t.Fatalf("decode: exit %d: %s", code, stderr)
	}
	checkPrintable(t, "decode", out+stderr)
	var c struct {
		New struct {
			Handle struct{ S string } `json:"handle"`
		} `json:"new"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.New.Handle.S != "h\u009b2J"+hostile {
		t.Errorf("decode reads back as %+v, %v:\n%s", c, err, out)
	}
}

// TestRowsUnknownProjection: rows of a projection the store's set does not
// hold is a usage mistake naming the set, not an empty answer; a known
// projection with no rows in the partition says so and succeeds.
func TestRowsUnknownProjection(t *testing.T) {
	store := t.TempDir()
	if code, _, stderr := runCLI(t, "process", "--store", store, "--events", fixtures+"streams/event.json"); code != 0 {
		t.Fatalf("process: exit %d: %s", code, stderr)
	}
	code, _, stderr := runCLI(t, "rows", "--store", store, "--projection", "order-total", "--partition", "X")
	if want := `tributary rows: usage: --projection "order-total": the store ` + store + ` holds the projections cart-contents, order-totals, season-leaderboard, season-standings, workspace-activity`; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want 2 and %q:\n%s", code, want, stderr)
	}
	if code, out, _ := runCLI(t, "rows", "--store", store, "--projection", "order-totals", "--partition", "X"); code != 0 || out != "(no rows of order-totals in X)\n" {
		t.Errorf("a partition without rows: exit %d %q", code, out)
	}
}

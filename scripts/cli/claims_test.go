package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// streamsRecord renders one DynamoDB Streams record of a Lambda event:
// kind INSERT, MODIFY or REMOVE of item (attribute name to DynamoDB JSON
// value), keyed PK and SK.
func streamsChange(seq int, kind string, item map[string]any) map[string]any {
	keys := map[string]any{"PK": item["PK"], "SK": item["SK"]}
	d := map[string]any{"ApproximateCreationDateTime": 1796034000 + seq, "Keys": keys, "SequenceNumber": fmt.Sprintf("%021d", seq), "SizeBytes": 100, "StreamViewType": "NEW_AND_OLD_IMAGES"}
	if kind == "REMOVE" {
		d["OldImage"] = item
	} else {
		d["NewImage"] = item
	}
	return map[string]any{"eventID": fmt.Sprintf("e%d", seq), "eventName": kind, "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "eu-west-1",
		"eventSourceARN": "arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000", "dynamodb": d}
}

func writeEvent(t *testing.T, dir, name string, records ...map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"Records": records})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeSpec(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func s(v string) map[string]any { return map[string]any{"S": v} }
func n(v string) map[string]any { return map[string]any{"N": v} }

// TestRowTwoItemsClaim: a spec row whose keys do not identify its item
// (BOARD / R#<rating>). Two players with one rating: the second's record
// fails as permanent, naming both items, and the first keeps its row; the
// first's removal removes its own row, and the second's record, run again,
// then takes the key. No row is overwritten or removed on another item's
// behalf.
func TestRowTwoItemsClaim(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, `version: 1
projections:
  - name: board
    entityTypes: [Player]
    item: {rating: N, handle: S}
    rows:
      - partition: BOARD
        sort: "R#{rating:05}"
        attributes: {handle: handle}
`)
	player := func(id, handle string) map[string]any {
		return map[string]any{"PK": s("PLAYER#" + id), "SK": s("PROFILE"), "EntityType": s("Player"), "rating": n("100"), "handle": s(handle), "version": n("1")}
	}
	a, b := player("a", "ann"), player("b", "bob")
	store := t.TempDir()
	first := writeEvent(t, dir, "first.json", streamsChange(1, "INSERT", a), streamsChange(2, "INSERT", b))
	code, out, stderr := runCLI(t, "process", "--projections", spec, "--store", store, "--events", first)
	if code != 1 || !strings.Contains(out, `"itemIdentifier":"000000000000000000002"`) || strings.Contains(out, `"itemIdentifier":"000000000000000000001"`) {
		t.Fatalf("exit %d, want only the second record failed\n%s%s", code, out, stderr)
	}
	for _, want := range []string{`row "BOARD"/"R#00100": item PK=PLAYER#b SK=PROFILE claims it, and item`, `PLAYER#a`, "no row is written or removed on another item's behalf"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the failure does not say %q:\n%s", want, stderr)
		}
	}
	rows := func() string {
		t.Helper()
		code, out, stderr := runCLI(t, "rows", "--store", store, "--projection", "board", "--partition", "BOARD", "--json")
		if code != 0 {
			t.Fatalf("rows: exit %d %s", code, stderr)
		}
		return out
	}
	if got := rows(); !strings.Contains(got, "ann") || strings.Contains(got, "bob") {
		t.Errorf("after the claims: %s, want ann's row", got)
	}
	// a is removed: its row goes; b's record, run again, takes the key.
	second := writeEvent(t, dir, "second.json", streamsChange(3, "REMOVE", a))
	if code, out, stderr := runCLI(t, "process", "--projections", spec, "--store", store, "--events", second); code != 0 {
		t.Fatalf("removal: exit %d\n%s%s", code, out, stderr)
	}
	if got := rows(); got != "" {
		t.Errorf("after a's removal: %q, want no row", got)
	}
	if code, out, stderr := runCLI(t, "process", "--projections", spec, "--store", store, "--events", first); code != 0 {
		t.Fatalf("again: exit %d\n%s%s", code, out, stderr)
	}
	if got := rows(); !strings.Contains(got, "bob") || strings.Contains(got, "ann") {
		t.Errorf("after the records again: %s, want bob's row", got)
	}
}

// TestKeysTheStoreCannotHold: an aggregate key over DynamoDB's 2,048-byte
// partition key (its A#<projection>#...#<shard> layout counted), or with a
// NUL the embedded store's keys reserve, fails its record alone, as
// permanent, with a message that quotes the key cut short; the record
// before it in the batch is applied (Lambda resumes from the failure).
func TestKeysTheStoreCannotHold(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, `version: 1
projections:
  - name: names
    entityTypes: [Thing]
    item: {name: S}
    counters:
      - key: "NAME#{name}"
        values: {things: 1}
`)
	thing := func(id, name string) map[string]any {
		return map[string]any{"PK": s("THING#" + id), "SK": s("META"), "EntityType": s("Thing"), "name": s(name), "version": n("1")}
	}
	for _, tt := range []struct {
		name, bad, want string
	}{
		{"long", strings.Repeat("x", 40<<10), "bytes, more than the 2048 the store's key takes"},
		{"just over", strings.Repeat("y", 2048-len("A#names#NAME##0")+1), "2049 bytes, more than the 2048"},
		{"NUL", "a\x00b", "0x00 byte"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			events := writeEvent(t, dir, tt.name+".json", streamsChange(1, "INSERT", thing("1", "ok")), streamsChange(2, "INSERT", thing("2", tt.bad)), streamsChange(3, "INSERT", thing("3", "fine")))
			store := t.TempDir()
			code, out, stderr := runCLI(t, "process", "--projections", spec, "--store", store, "--events", events, "-v")
			if code != 1 || !strings.Contains(out, `{"batchItemFailures":[{"itemIdentifier":"000000000000000000002"}]}`) {
				t.Fatalf("exit %d, want only record 2 failed\n%s%s", code, out, stderr)
			}
			if !strings.Contains(stderr, `"permanent":true`) || strings.Contains(stderr, `"permanent":false`) {
				t.Errorf("the failure is not permanent:\n%.1000s", stderr)
			}
			var report string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, events) {
					report = l
				}
			}
			if !strings.Contains(report, tt.want) || len(report) > 600 {
				t.Errorf("the failure (%d bytes) does not say %q, or quotes too much:\n%.600s", len(report), tt.want, report)
			}
			_, aggs, _ := runCLI(t, "aggregates", "--store", store, "--json")
			if !strings.Contains(aggs, `"key":"NAME#ok"`) {
				t.Errorf("the neighbours were not applied:\n%s", aggs)
			}
		})
	}
	// One that just fits is applied.
	fits := strings.Repeat("z", 2048-len("A#names#NAME##0"))
	events := writeEvent(t, dir, "fits.json", streamsChange(1, "INSERT", thing("1", fits)))
	if code, out, stderr := runCLI(t, "process", "--projections", spec, "--store", t.TempDir(), "--events", events); code != 0 {
		t.Errorf("a key of exactly 2,048 bytes: exit %d\n%s%.500s", code, out, stderr)
	}
}

// TestCheckRowIdentity: `projections check` warns where a row's keys hold
// nothing of the item's key, notes where they hold part of it, and says
// nothing where they hold all of it; the key attributes are the spec's.
func TestCheckRowIdentity(t *testing.T) {
	dir := t.TempDir()
	const then = ": two items that agree on what they hold write one row, and the second is refused (a permanent failure naming both)\n"
	for _, tt := range []struct {
		name, keys, item, partition, sort, want string
	}{
		{"nothing of the key", "", "PK: S", "BOARD", "R#{rating:05}", "      warning: the row's keys hold nothing of the item's key (PK, SK)" + then},
		{"a segment, no sort key", "", "PK: S", "BOARD", "R#{rating:05}#{PK[1]}", "      note: the row's keys hold PK only in part and SK not at all" + then},
		{"the whole key", "", "PK: S, SK: S", "BOARD#{PK}", "R#{rating:05}#{SK}", ""},
		{"the spec's own key attributes", "keyAttributes: [id]\n", "id: S", "BOARD", "{id}", ""},
		{"the spec's own, missing", "keyAttributes: [id]\n", "id: S", "BOARD", "{rating:05}", "      warning: the row's keys hold nothing of the item's key (id)" + then},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := writeSpec(t, dir, "version: 1\n"+tt.keys+`projections:
  - name: board
    entityTypes: [Player]
    item: {rating: N, `+tt.item+`}
    rows:
      - partition: "`+tt.partition+`"
        sort: "`+tt.sort+`"
        attributes: {rating: rating}
`)
			code, out, stderr := runCLI(t, "projections", "check", spec)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			row := "    row " + tt.partition + " / " + tt.sort + ": rating\n"
			if !strings.Contains(out, row+tt.want+"entity types:") {
				t.Errorf("want the row, then %q:\n%s", tt.want, out)
			}
		})
	}
}

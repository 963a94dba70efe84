package seed_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

var update = flag.Bool("update", false, "rewrite the *.golden.json files under testdata")

// goldenCase is one fixture: testdata/<dir>/<name>.input.json, an item in
// DynamoDB JSON, and <name>.golden.json, the rendering of its contribution.
type goldenCase struct {
	name    string
	wantErr bool
}

// testGolden runs every case through p and compares the rendering of the
// result with the golden file (or rewrites it with -update). Each input is
// contributed twice and must give the same result both times. Every input
// file in the directory must be listed in cases.
func testGolden(t *testing.T, p projections.Projection, dir string, cases []goldenCase) {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join("testdata", dir, "*.input.json"))
	if err != nil {
		t.Fatal(err)
	}
	listed := make(map[string]bool)
	for _, tc := range cases {
		listed[tc.name] = true
	}
	for _, in := range inputs {
		if name := strings.TrimSuffix(filepath.Base(in), ".input.json"); !listed[name] {
			t.Errorf("%s: fixture not listed in the test table", in)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join("testdata", dir, tc.name)
			item := readItem(t, base+".input.json")

			c, err := p.Contribute(item)
			got := render(c, err)
			if again := render(p.Contribute(item)); !bytes.Equal(got, again) {
				t.Fatalf("second Contribute differs:\nfirst:\n%s\nsecond:\n%s", got, again)
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("Contribute error = %v, want error: %t", err, tc.wantErr)
			}
			if err != nil {
				checkItemError(t, p, err)
			} else {
				checkContribution(t, c)
			}

			goldenPath := base + ".golden.json"
			if *update {
				if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("contribution differs from %s:\ngot:\n%s\nwant:\n%s", goldenPath, got, want)
			}
		})
	}
}

// readItem decodes an item in DynamoDB JSON.
func readItem(t testing.TB, path string) pipeline.Item {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	item, err := attributevalue.UnmarshalMapJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return item
}

// checkItemError checks that err is a *projections.ItemError of projection p whose
// message names the projection.
func checkItemError(t *testing.T, p projections.Projection, err error) {
	t.Helper()
	var ie *projections.ItemError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not a *projections.ItemError", err, err)
	}
	if ie.Projection != p.Name() {
		t.Errorf("ItemError.Projection = %q, want %q", ie.Projection, p.Name())
	}
	if !strings.HasPrefix(err.Error(), p.Name()+": item ") {
		t.Errorf("error %q does not start with %q", err, p.Name()+": item ")
	}
}

// checkContribution checks what the engine and the stores rely on: keys are
// set and no value or attribute name is reserved.
func checkContribution(t *testing.T, c projections.Contribution) {
	t.Helper()
	for _, ctr := range c.Counters {
		if ctr.Key == "" || len(ctr.Values) == 0 || ctr.Shards < 0 {
			t.Errorf("bad counter %+v", ctr)
		}
		for name := range ctr.Values {
			if driver.ReservedName(name) {
				t.Errorf("counter %s: reserved value name %q", ctr.Key, name)
			}
		}
	}
	for _, row := range c.Rows {
		if row.Partition == "" || row.Sort == "" {
			t.Errorf("bad row %+v", row)
		}
		for name := range row.Attrs {
			if driver.ReservedName(name) {
				t.Errorf("row %s/%s: reserved attribute name %q", row.Partition, row.Sort, name)
			}
		}
	}
}

// render is the deterministic JSON form of a Contribute result used by the
// golden files: counters sorted by key, values as decimal strings, rows
// sorted by partition and sort key with attributes in DynamoDB JSON, sorted
// by name; or the error's message.
func render(c projections.Contribution, err error) []byte {
	type counter struct {
		Key    string            `json:"key"`
		Shards int               `json:"shards,omitempty"`
		Values map[string]string `json:"values"`
	}
	type row struct {
		Partition string `json:"partition"`
		Sort      string `json:"sort"`
		Attrs     any    `json:"attrs"`
	}
	var out struct {
		Error    string    `json:"error,omitempty"`
		Counters []counter `json:"counters,omitempty"`
		Rows     []row     `json:"rows,omitempty"`
	}
	if err != nil {
		out.Error = err.Error()
	}
	for _, ctr := range c.Counters {
		values := make(map[string]string, len(ctr.Values))
		for name, v := range ctr.Values {
			values[name] = v.String()
		}
		out.Counters = append(out.Counters, counter{Key: ctr.Key, Shards: ctr.Shards, Values: values})
	}
	slices.SortStableFunc(out.Counters, func(a, b counter) int {
		return strings.Compare(a.Key, b.Key)
	})
	for _, r := range c.Rows {
		var attrs any = map[string]any{}
		if len(r.Attrs) > 0 {
			// MarshalMapJSON keeps Go's map order; a round trip through
			// encoding/json sorts the names at every level.
			data, merr := attributevalue.MarshalMapJSON(r.Attrs)
			if merr == nil {
				merr = json.Unmarshal(data, &attrs)
			}
			if merr != nil {
				attrs = "unrenderable: " + merr.Error()
			}
		}
		out.Rows = append(out.Rows, row{Partition: r.Partition, Sort: r.Sort, Attrs: attrs})
	}
	slices.SortStableFunc(out.Rows, func(a, b row) int {
		if n := strings.Compare(a.Partition, b.Partition); n != 0 {
			return n
		}
		return strings.Compare(a.Sort, b.Sort)
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<ISO-8601>" readable in messages
	enc.SetIndent("", "  ")
	if merr := enc.Encode(out); merr != nil {
		// Cannot happen: out holds only strings, ints, maps and slices.
		panic(merr)
	}
	return buf.Bytes()
}

package spec_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

var update = flag.Bool("update", false, "rewrite the *.golden files under testdata/load")

// loadCases are the specs under testdata/load: ok ones whose golden file
// holds each projection's fingerprint and Definition, and invalid ones
// whose golden file holds the error. docLevel marks cases whose problems
// are the document's (syntax, version): every other problem must name a
// projection and a field.
var loadCases = []struct {
	file     string
	dir      string // where file is, if not testdata/load
	wantErr  bool
	docLevel bool
}{
	{file: "seed.yaml", dir: "../../internal/seed"}, // the stock spec
	{file: "minimal.yaml"},
	{file: "features.yaml"},
	{file: "tickets.json"},
	{file: "syntax.yaml", wantErr: true, docLevel: true},
	{file: "syntax.json", wantErr: true, docLevel: true},
	{file: "empty.yaml", wantErr: true, docLevel: true},
	{file: "two-documents.yaml", wantErr: true, docLevel: true},
	{file: "duplicate-keys.yaml", wantErr: true, docLevel: true},
	{file: "duplicate-keys.json", wantErr: true, docLevel: true},
	{file: "yaml-features.yaml", wantErr: true, docLevel: true},
	{file: "version-missing.yaml", wantErr: true, docLevel: true},
	{file: "version-unknown.yaml", wantErr: true, docLevel: true},
	{file: "version-string.yaml", wantErr: true, docLevel: true},
	{file: "document.yaml", wantErr: true, docLevel: true},
	{file: "projection-fields.yaml", wantErr: true},
	{file: "projections.yaml", wantErr: true},
	{file: "expressions.yaml", wantErr: true},
	{file: "budget.yaml", wantErr: true},
	{file: "values.yaml", wantErr: true},
	{file: "rows.yaml", wantErr: true},
}

// TestLoadGolden loads every spec under testdata/load and compares the
// outcome with its .golden file (go test -update rewrites them). Every
// spec file there must be listed.
func TestLoadGolden(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range loadCases {
		if tc.dir == "" {
			listed[tc.file] = true
		}
	}
	files, err := filepath.Glob("testdata/load/*.*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if base := filepath.Base(f); !strings.HasSuffix(base, ".golden") && !listed[base] {
			t.Errorf("%s: not listed in loadCases", f)
		}
	}
	for _, tc := range loadCases {
		t.Run(tc.file, func(t *testing.T) {
			dir := tc.dir
			if dir == "" {
				dir = "testdata/load"
			}
			data, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got := outcome(t, tc.file, data, tc.wantErr, tc.docLevel)
			golden := filepath.Join("testdata/load", tc.file+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("outcome differs from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// outcome loads a spec and renders the result: the error, or each
// projection's ID and Definition.
func outcome(t *testing.T, name string, data []byte, wantErr, docLevel bool) []byte {
	t.Helper()
	sp, err := spec.Parse(name, data)
	if (err != nil) != wantErr {
		t.Fatalf("Parse error = %v, want an error: %t", err, wantErr)
	}
	var b bytes.Buffer
	if err != nil {
		var se *spec.Error
		if !errors.As(err, &se) {
			t.Fatalf("%v (%T) is not a *spec.Error", err, err)
		}
		for _, p := range se.Problems {
			if p.File != name {
				t.Errorf("problem %q: File %q, want %q", p, p.File, name)
			}
			if p.Line <= 0 && !strings.Contains(p.Msg, "empty") {
				t.Errorf("problem %q has no line", p)
			}
			named := p.Projection != "" || strings.HasPrefix(p.Field, "projections[")
			if !docLevel && (!named || p.Field == "") {
				t.Errorf("problem %q does not name its projection and field", p)
			}
		}
		fmt.Fprintf(&b, "%v\n", err)
		return b.Bytes()
	}
	set, err := sp.Set()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range set.IDs() {
		var def string
		for _, p := range sp.Projections() {
			if p.Name() == id.Name {
				def = p.(projections.Definer).Definition()
			}
		}
		fmt.Fprintf(&b, "%s\n%s\n", id, def)
	}
	return b.Bytes()
}

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

// collidingTypes returns the two entity types of
// infra/objstore/testdata/fitname-collision-64.json, 296 bytes each, found
// by a distinguished-point search (internal/cmd/fitcollide), whose
// shortened names under the 64-bit hash earlier versions kept were one:
// oldName.
func collidingTypes(t *testing.T) (a, b, oldName string) {
	t.Helper()
	raw, err := os.ReadFile("../../infra/objstore/testdata/fitname-collision-64.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Names      []string `json:"names"`
		OldFitName string   `json:"oldFitName"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || len(c.Names) != 2 {
		t.Fatalf("the collision fixture: %v, %d names", err, len(c.Names))
	}
	return c.Names[0], c.Names[1], c.OldFitName
}

// collidingExport writes an export of three items of each type, in files
// data files.
func collidingExport(t *testing.T, a, b string, files int) string {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	var items []pipeline.Item
	for i := 1; i <= 3; i++ {
		items = append(items,
			pipeline.Item{"PK": s(fmt.Sprintf("A#%d", i)), "SK": s("x"), "EntityType": s(a)},
			pipeline.Item{"PK": s(fmt.Sprintf("B#%d", i)), "SK": s("x"), "EntityType": s(b)})
	}
	dir := t.TempDir()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(dir).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(at, 7), Time: at, Files: files}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, res.Dir)
}

// partTypes returns the entity types of the lines of a repartition part.
func partTypes(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Item struct {
				EntityType struct{ S string }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Item.EntityType.S)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCollidingTypesRepartition: two entity types whose 64-bit shortened
// names were one go to two partitions, each under a manifest of its own
// type holding its three items. (With the 64-bit names, the second type's
// part overwrote the first's and the run failed with "output holds 3 items,
// want 6".)
func TestCollidingTypesRepartition(t *testing.T) {
	a, b, oldName := collidingTypes(t)
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "repartition", "--export", collidingExport(t, a, b, 1), "--out", out, "--no-sync")
	if code != 0 {
		t.Fatalf("repartition: exit %d\n%s%s", code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Entities []struct {
			Entity, Segment, Manifest string
			ItemCount                 int64
		}
		Totals struct{ OutputItems int64 }
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Entities) != 2 || s.Totals.OutputItems != 6 {
		t.Fatalf("the summary has %d entities and %d items, want 2 and 6:\n%s", len(s.Entities), s.Totals.OutputItems, raw)
	}
	seen := map[string]bool{}
	for _, e := range s.Entities {
		seen[e.Entity] = true
		if e.ItemCount != 3 || e.Segment == "entity="+oldName {
			t.Errorf("entity %.12q…: %d items under %s, want 3, not under the old name", e.Entity, e.ItemCount, e.Segment)
		}
		mraw, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(e.Manifest)))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Entity string
			Parts  []struct{ Key string }
		}
		if err := json.Unmarshal(mraw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Entity != e.Entity || len(m.Parts) == 0 {
			t.Errorf("the manifest %s names %.12q… with %d parts", e.Manifest, m.Entity, len(m.Parts))
		}
		for _, p := range m.Parts {
			if path.Dir(p.Key) != e.Segment {
				t.Errorf("part %s is not under %s", p.Key, e.Segment)
			}
			for _, typ := range partTypes(t, filepath.Join(out, filepath.FromSlash(p.Key))) {
				if typ != e.Entity {
					t.Errorf("part %s of %.12q… holds an item of another type", p.Key, e.Entity)
				}
			}
		}
	}
	if !seen[a] || !seen[b] {
		t.Errorf("the summary does not name both types")
	}
}

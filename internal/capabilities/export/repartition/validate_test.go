package repartition_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

// decoderFixtures holds the pipeline's export-line fixtures (see
// pipeline/testdata/README.md): lines at DynamoDB's limits, and malformed
// lines with the path the decoder names.
const decoderFixtures = "../../../../pipeline/testdata"

// sizedItem returns an item whose size as DynamoDB counts it
// (pipeline.ItemSize) is exactly size bytes, most of it binary: its JSON,
// in base64, is about a third longer than its size.
func sizedItem(t *testing.T, size int) pipeline.Item {
	t.Helper()
	it := pipeline.Item{
		"PK":         &types.AttributeValueMemberS{Value: "BIG#1"},
		"SK":         &types.AttributeValueMemberS{Value: "BIG#1"},
		"EntityType": &types.AttributeValueMemberS{Value: "Big"},
		"blob":       &types.AttributeValueMemberB{Value: make([]byte, 300_000)},
		"pad":        &types.AttributeValueMemberS{},
	}
	it["pad"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", size-pipeline.ItemSize(it))}
	if got := pipeline.ItemSize(it); got != size {
		t.Fatalf("sized item: %d bytes, want %d", got, size)
	}
	return it
}

func itemLine(it pipeline.Item) string {
	return `{"Item":` + string(pipeline.AppendItem(nil, it)) + `}`
}

// badLine is a line that every decoder rejects, and where it is bad.
type badLine struct {
	name, line, path, what string
}

// fullLineCases returns the decoders' malformed export fixtures whose bad
// line is meant as a full-export line, and lines generated to break the
// item size limit (too large for a fixture file).
func fullLineCases(t *testing.T) []badLine {
	t.Helper()
	var cases []struct {
		File, Format, Path, What string
		Record                   int
	}
	b, err := os.ReadFile(filepath.Join(decoderFixtures, "malformed", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	var out []badLine
	for _, tc := range cases {
		if tc.Format != "export" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(decoderFixtures, "malformed", tc.File))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(lines[tc.Record]), &top) == nil && top["Item"] == nil && top["item"] == nil {
			continue // an incremental line
		}
		out = append(out, badLine{tc.File, lines[tc.Record], tc.Path, tc.What})
	}
	over := sizedItem(t, 400<<10+1)
	out = append(out, badLine{"item-over-400KB", itemLine(over), "Item", "an item of 409,601 bytes as DynamoDB counts them"})
	if len(out) < 16 {
		t.Fatalf("only %d full-export cases", len(out))
	}
	return out
}

// TestRepartitionRejectsWhatTheDecoderRejects puts each line that the
// decoders reject into the fixture (line 3 of its first data file): the run
// fails at that line, naming the file, the line and the attribute path, as
// corrupt data, and leaves no summary.
func TestRepartitionRejectsWhatTheDecoderRejects(t *testing.T) {
	ctx := context.Background()
	for _, tc := range fullLineCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			dec := pipeline.NewExportDecoder(pipeline.Options{})
			if _, err := dec.Decode([]byte(tc.line), "f", 1); err == nil {
				t.Fatalf("the decoder accepts it")
			}
			src, dir, fx := exportgen.CopyFixture(t)
			regzip(t, dir, fx, 0, func(l []string) []string { l[2] = tc.line; return l })
			e, err := export.OpenExport(ctx, src, fx.Full.Dir, export.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			outDir := t.TempDir()
			r, err := repartition.NewRepartitioner(e, nil, objstore.NewDir(outDir).WithoutSync(), repartition.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Run(ctx, 2, false)
			if err == nil {
				t.Fatalf("%s: the run succeeded", tc.what)
			}
			for _, w := range []string{fx.Full.DataFiles[0] + " line 3: ", tc.path} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q lacks %q", tc.what, err, w)
				}
			}
			if !errors.Is(err, export.ErrCorrupt) {
				t.Errorf("error %q does not match ErrCorrupt", err)
			}
			if _, err := os.Stat(filepath.Join(outDir, repartition.SummaryKey)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed run left %s", repartition.SummaryKey)
			}
		})
	}
}

// TestRepartitionLimits: lines at DynamoDB's limits — 32 levels of
// nesting, 38 significant digits, the range of numbers, unicode and
// escapes, an item of exactly 400 KB as DynamoDB counts it whose JSON is
// longer — are accepted and copied byte for byte into their entity's
// partition.
func TestRepartitionLimits(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(decoderFixtures, "export", "limits.json"))
	if err != nil {
		t.Fatal(err)
	}
	limits := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	big := itemLine(sizedItem(t, 400<<10))
	if len(big) <= 400<<10 {
		t.Fatalf("the 400 KB item's line is %d bytes; the test wants it longer than the item", len(big))
	}
	limits = append(limits, big)
	src, dir, fx := exportgen.CopyFixture(t)
	regzip(t, dir, fx, 0, func(l []string) []string {
		if len(l) < len(limits)+1 {
			t.Fatalf("data file 0 has %d lines", len(l))
		}
		copy(l[1:], limits)
		return l
	})
	e, err := export.OpenExport(ctx, src, fx.Full.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 2, false); err != nil {
		t.Fatal(err)
	}
	got := exportgen.OutputLines(t, out)
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	for i, line := range limits {
		c, err := dec.Decode([]byte(line), "limits", i+1)
		if err != nil {
			t.Fatalf("the decoder rejects limit line %d: %v", i+1, err)
		}
		seg := repartition.EntitySegment(c.NewType)
		if !slices.Contains(got[seg], line) {
			t.Errorf("limit line %d (%.80s…) is not in %s byte for byte", i+1, line, seg)
		}
	}
}

// TestRepartitionKeyAttributes: a full-export item must have one of the
// table's key attributes, as the decoders require; they are PK and SK
// unless Options.Decode.KeyAttributes names others.
func TestRepartitionKeyAttributes(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	items := []pipeline.Item{
		{"id": &types.AttributeValueMemberS{Value: "a1"}, "EntityType": &types.AttributeValueMemberS{Value: "Account"}},
		{"id": &types.AttributeValueMemberS{Value: "a2"}, "EntityType": &types.AttributeValueMemberS{Value: "Account"}},
	}
	src := objstore.NewDir(t.TempDir()).WithoutSync()
	res, err := exportgen.WriteFull(ctx, src, exportgen.Export{ID: exportgen.ExportID(at, 7), Time: at, Files: 1}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	e, err := export.OpenExport(ctx, src, res.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := repartition.NewRepartitioner(e, nil, objstore.NewDir(t.TempDir()).WithoutSync(), repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(ctx, 1, false)
	if err == nil || !strings.Contains(err.Error(), " line 1: Item: item has none of the key attributes [PK SK]") {
		t.Errorf("default key attributes: %v; want line 1 refused for lacking PK and SK", err)
	}
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	r, err = repartition.NewRepartitioner(e, nil, out, repartition.Options{Decode: pipeline.Options{Schema: pipeline.Schema{KeyAttributes: []string{"id"}}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, 1, false)
	if err != nil {
		t.Fatalf("KeyAttributes id: %v", err)
	}
	if s.Totals.OutputItems != 2 {
		t.Errorf("KeyAttributes id: %d items out, want 2", s.Totals.OutputItems)
	}
}

// TestItemsRefuseIncrementalLines: verify's reader of a full export refuses
// an incremental export's line (Keys and NewImage) at its line, as
// repartition does, instead of taking its NewImage for an item.
func TestItemsRefuseIncrementalLines(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(decoderFixtures, "export", "incremental.json"))
	if err != nil {
		t.Fatal(err)
	}
	inc := strings.SplitN(string(b), "\n", 2)[0]
	src, dir, fx := exportgen.CopyFixture(t)
	regzip(t, dir, fx, 0, func(l []string) []string { l[2] = inc; return l })
	e, err := export.OpenExport(ctx, src, fx.Full.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = export.Items(ctx, e, nil, pipeline.Options{}, false, func(pipeline.Item) error { return nil })
	if err == nil || !strings.Contains(err.Error(), fx.Full.DataFiles[0]+" line 3: Keys: an incremental-export line in a full export") {
		t.Errorf("Items: %v; want line 3 refused as an incremental line", err)
	}
}

package repartition_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

// TestLongNames: an entity type of 300 bytes (DynamoDB allows a string
// attribute of up to 400 KB) and a data file named with 240 bytes (a copy
// of an export under other names, read without its manifest) make names
// longer than a file name may be. The repartition fits every segment of
// every key in NAME_MAX, keeps the type in the manifest, and the output
// reads back.
func TestLongNames(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("Très-long type ", 20) // 320 bytes with its escapes
	items := []pipeline.Item{
		{"PK": &types.AttributeValueMemberS{Value: "A#1"}, "SK": &types.AttributeValueMemberS{Value: "x"}, "EntityType": &types.AttributeValueMemberS{Value: long}},
		{"PK": &types.AttributeValueMemberS{Value: "A#2"}, "SK": &types.AttributeValueMemberS{Value: "x"}, "EntityType": &types.AttributeValueMemberS{Value: long + "2"}},
		{"PK": &types.AttributeValueMemberS{Value: "B#1"}, "SK": &types.AttributeValueMemberS{Value: "x"}, "EntityType": &types.AttributeValueMemberS{Value: "Order"}},
	}
	root := t.TempDir()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(ctx, objstore.NewDir(root), exportgen.Export{ID: exportgen.ExportID(at, 1), Time: at, Files: 1}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	// The data file under a long name, its manifests gone.
	data := filepath.Join(root, filepath.FromSlash(res.DataFiles[0]))
	longFile := filepath.Join(filepath.Dir(data), strings.Repeat("d", 232)+".json.gz")
	if err := os.Rename(data, longFile); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"manifest-summary.json", "manifest-files.json"} {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(res.Dir), m)); err != nil {
			t.Fatal(err)
		}
	}
	e, err := export.OpenExport(ctx, objstore.NewDir(root), res.Dir, export.OpenOptions{AllowMissingManifest: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := objstore.NewDir(dir)
	r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 1, false); err != nil {
		t.Fatalf("repartition with long names: %v", err)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && len(d.Name()) > objstore.MaxSegmentBytes {
			t.Errorf("%s: a name of %d bytes", p, len(d.Name()))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := reimport.OpenOutput(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, m := range o.Entities {
		types[m.Entity] = m.Segment
	}
	if len(types) != 3 || types[long] == "" || types[long] == types[long+"2"] || types["Order"] != "entity=Order" {
		t.Errorf("entities %q, want the two long types apart and Order as it is", types)
	}
	exportgen.OutputLines(t, out)
}

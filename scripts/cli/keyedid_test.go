package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/limitio"
	"github.com/tributary/tributary/pipeline"
)

const productCatalog = "testdata/productcatalog/"

// productExport writes the ProductCatalog items (keyed Id) as a full
// export under a new directory and returns the directory, the export's
// directory in it, its data file's path and the items' lines.
func productExport(t *testing.T) (root, exportDir, dataFile string, lines []string) {
	t.Helper()
	f, err := os.Open(productCatalog + "items.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	dec := pipeline.NewExportDecoder(pipeline.Options{Schema: pipeline.Schema{KeyAttributes: []string{"Id"}, TypeAttribute: "ProductCategory"}})
	var items []pipeline.Item
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		lines = append(lines, sc.Text())
		c, err := dec.DecodeItem(sc.Bytes(), "items.jsonl", n)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, c.New)
	}
	if err := sc.Err(); err != nil || len(items) != 8 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	root = t.TempDir()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(root).WithoutSync(),
		exportgen.Export{ID: exportgen.ExportID(at, 8), Time: at, Files: 1}, func(yield func(pipeline.Item) bool) {
			for _, it := range items {
				if !yield(it) {
					return
				}
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	return root, filepath.Join(root, res.Dir), filepath.Join(root, res.DataFiles[0]), lines
}

// productEvent is a DynamoDB Streams event inserting the items.
func productEvent(t *testing.T, lines []string) string {
	t.Helper()
	var records []map[string]any
	for i, l := range lines {
		var line struct{ Item map[string]any }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		records = append(records, map[string]any{
			"eventID": "e" + string(rune('a'+i)), "eventName": "INSERT", "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
			"eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/ProductCatalog/stream/2026-11-01T00:00:00.000",
			"dynamodb": map[string]any{"ApproximateCreationDateTime": 1796033700 + i, "Keys": map[string]any{"Id": line.Item["Id"]}, "NewImage": line.Item,
				"SequenceNumber": "10000000000000000000" + string(rune('1'+i)), "SizeBytes": 100, "StreamViewType": "NEW_AND_OLD_IMAGES"},
		})
	}
	b, err := json.Marshal(map[string]any{"Records": records})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExportKeyedID: an export of the AWS documentation's example table,
// keyed Id (N), decodes, repartitions and verifies once its key attributes
// are named; with the default PK/SK each command refuses its first line,
// saying why.
func TestExportKeyedID(t *testing.T) {
	_, exportDir, dataFile, lines := productExport(t)
	spec := productCatalog + "projections.yaml"

	code, out, stderr := runCLI(t, "decode", "--format", "export", "--key-attributes", "Id", "--type-attribute", "ProductCategory", dataFile)
	if code != 0 || strings.Count(out, "\n") != 8 || !strings.Contains(out, `"Id":{"N":"103"}`) {
		t.Fatalf("decode --key-attributes Id: exit %d, %d changes\n%s", code, strings.Count(out, "\n"), stderr)
	}
	code, _, stderr = runCLI(t, "decode", "--format", "export", dataFile)
	if code != 1 || !strings.Contains(stderr, "none of the key attributes [PK SK]") {
		t.Errorf("decode with PK/SK: exit %d, %s", code, stderr)
	}

	outDir := t.TempDir()
	code, out, stderr = runCLI(t, "repartition", "--export", exportDir, "--out", outDir, "--key-attributes", "Id", "--type-attribute", "ProductCategory")
	if code != 0 {
		t.Fatalf("repartition --key-attributes Id: exit %d\n%s%s", code, out, stderr)
	}
	for seg, n := range map[string]int{"entity=Book": 3, "entity=Bicycle": 5} {
		got := 0
		for _, part := range readParts(t, filepath.Join(outDir, seg)) {
			got += strings.Count(part, "\n")
		}
		if got != n {
			t.Errorf("%s: %d items, want %d", seg, got, n)
		}
	}
	code, _, stderr = runCLI(t, "repartition", "--export", exportDir, "--out", t.TempDir(), "--type-attribute", "ProductCategory")
	if code != 1 || !strings.Contains(stderr, "line 1: Item: item has none of the key attributes [PK SK]") {
		t.Errorf("repartition with PK/SK: exit %d, %s", code, stderr)
	}

	store := t.TempDir()
	if code, out, stderr := runCLI(t, "process", "--projections", spec, "--store", store, "--events", productEvent(t, lines)); code != 0 {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "verify", "--projections", spec, "--export", exportDir, "--key-attributes", "Id", "--store", store)
	if code != 0 || !strings.Contains(out, "AGREE") || !strings.Contains(out, "from 8 items") {
		t.Fatalf("verify --key-attributes Id: exit %d\n%s%s", code, out, stderr)
	}
	// The spec names the table's keys: verify needs no flag for them, and
	// refuses one that says otherwise.
	code, out, stderr = runCLI(t, "verify", "--projections", spec, "--export", exportDir, "--store", store)
	if code != 0 || !strings.Contains(out, "AGREE") {
		t.Errorf("verify with the spec's keys: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = runCLI(t, "verify", "--projections", spec, "--export", exportDir, "--key-attributes", "PK,SK", "--store", store)
	if code != 2 || !strings.Contains(stderr, "--key-attributes PK,SK, but this table's environment has the key attributes Id") {
		t.Errorf("verify with PK/SK against the spec's Id: exit %d, %s", code, stderr)
	}

	// --version-attribute reaches the checks: the catalog's Title (an S)
	// is no version, so naming it refuses line 1.
	for _, cmd := range [][]string{
		{"repartition", "--export", exportDir, "--out", t.TempDir(), "--key-attributes", "Id", "--type-attribute", "ProductCategory", "--version-attribute", "Title"},
		{"verify", "--projections", spec, "--export", exportDir, "--key-attributes", "Id", "--store", store, "--version-attribute", "Title"},
	} {
		code, _, stderr = runCLI(t, cmd...)
		if code != 1 || !strings.Contains(stderr, "line 1") || !strings.Contains(stderr, "Title: version attribute must be a number, got S") {
			t.Errorf("%s --version-attribute Title: exit %d, %s", cmd[0], code, stderr)
		}
	}
}

// readParts returns the uncompressed parts of one entity's output.
func readParts(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "part-*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no parts in %s (%v)", dir, err)
	}
	var out []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := limitio.ReadAll(raw, 64<<20) // gunzips
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestIntegrationExportKeyedIDReimport: the repartitioned ProductCatalog
// loads into a table keyed Id (N) on moto, every item as it was.
func TestIntegrationExportKeyedIDReimport(t *testing.T) {
	ctx := context.Background()
	_, ddb, _ := motoExportEnv(t)
	_, exportDir, _, lines := productExport(t)
	outDir := t.TempDir()
	if code, out, stderr := runCLI(t, "repartition", "--export", exportDir, "--out", outDir, "--key-attributes", "Id", "--type-attribute", "ProductCategory"); code != 0 {
		t.Fatalf("repartition: exit %d\n%s%s", code, out, stderr)
	}
	table := awstest.UniqueName(t, "catalog")
	if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("Id"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("Id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	awstest.DeleteTableAtEnd(t, ddb, table)
	if code, out, stderr := runCLI(t, "reimport", "--from", outDir, "--table", table); code != 0 {
		t.Fatalf("reimport: exit %d\n%s%s", code, out, stderr)
	}
	got := scanItems(t, ddb, table)
	want := make([]string, len(lines))
	for i, l := range lines {
		want[i] = strings.TrimSuffix(strings.TrimPrefix(l, `{"Item":`), "}")
	}
	if strings.Join(got, "\n") != strings.Join(sortedCopy(want), "\n") {
		t.Errorf("table holds:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sortedCopy(want), "\n"))
	}
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
)

// fixtureCopy copies the fixture export and returns its directory
// (…/AWSDynamoDB/<ExportId>) and its data files, sorted.
func fixtureCopy(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(exportFixture)); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(root, "AWSDynamoDB", filepath.Base(fullExport))
	files, err := filepath.Glob(filepath.Join(exp, "data", "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files under %s: %v", exp, err)
	}
	slices.Sort(files)
	return exp, files
}

// dataLines returns the lines of a gzip data file.
func dataLines(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data := exportgen.Gunzip(t, raw)
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// writeDataLines writes lines as a gzip data file and returns its bytes.
func writeDataLines(t *testing.T, path string, lines [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(append(bytes.Join(lines, []byte("\n")), '\n')); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// editManifest rewrites the export's manifests: files gets the lines of
// manifest-files.json (decoded), and the summary's itemCount follows.
func editManifest(t *testing.T, exp string, edit func(files []map[string]any) []map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(exp, "manifest-files.json"))
	if err != nil {
		t.Fatal(err)
	}
	var files []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var f map[string]any
		if err := json.Unmarshal(line, &f); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	files = edit(files)
	var out []byte
	total := 0.0
	for _, f := range files {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, b...), '\n')
		total += f["itemCount"].(float64)
	}
	if err := os.WriteFile(filepath.Join(exp, "manifest-files.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	sumPath := filepath.Join(exp, "manifest-summary.json")
	raw, err = os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	raw = regexp.MustCompile(`"itemCount":\s*\d+`).ReplaceAll(raw, []byte(`"itemCount":`+strconv.Itoa(int(total))))
	if err := os.WriteFile(sumPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixFile gives the manifest's line of data file path the MD5 and item
// count of its content now.
func fixFile(t *testing.T, exp, path string, body []byte, items int) {
	t.Helper()
	sum := md5.Sum(body)
	editManifest(t, exp, func(files []map[string]any) []map[string]any {
		for _, f := range files {
			if strings.HasSuffix(f["dataFileS3Key"].(string), "/"+filepath.Base(path)) {
				f["md5Checksum"] = base64.StdEncoding.EncodeToString(sum[:])
				f["itemCount"] = float64(items)
			}
		}
		return files
	})
}

// firstOrder returns the index of the first line of lines that is an
// order with the status from.
func firstOrder(t *testing.T, lines [][]byte, from string) int {
	t.Helper()
	for i, line := range lines {
		if bytes.Contains(line, []byte(`"EntityType":{"S":"Order"}`)) && bytes.Contains(line, []byte(`"status":{"S":"`+from+`"}`)) {
			return i
		}
	}
	t.Fatalf("no %s order", from)
	return 0
}

// TestBackfillChecksumBeforeApply: a data file whose object is not the
// exported one (valid gzip, another order status, so another MD5) is
// refused before anything of it is applied, by backfill and by remodel
// backfill alike; once the exported object is back, the rerun completes
// and the gates agree, where the items applied from the other object
// would have stayed, passed over as already applied.
func TestBackfillChecksumBeforeApply(t *testing.T) {
	exp, files := fixtureCopy(t)
	path := files[0]
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := dataLines(t, path)
	i := firstOrder(t, lines, "PENDING")
	if i >= len(lines)-20 {
		t.Fatalf("the order is on line %d of %d: too late in the file to be applied before its end", i+1, len(lines))
	}
	lines[i] = bytes.Replace(lines[i], []byte(`"status":{"S":"PENDING"}`), []byte(`"status":{"S":"SHIPPED"}`), 1)
	writeDataLines(t, path, lines)

	store, target := t.TempDir(), t.TempDir()
	runs := [][]string{
		{"backfill", "--export", exp, "--store", store, "--no-sync", "--workers", "1", "--batch-size", "10"},
		{"remodel", "backfill", "--export", exp, "--transform", "comments-table", "--store", target, "--no-sync", "--workers", "1", "--batch-size", "10"},
	}
	for _, args := range runs {
		code, out, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, filepath.Base(path)+": not the exported object: MD5 ") ||
			!strings.Contains(stderr, "the object is not the one exported; nothing of it was read") || !strings.Contains(out, "status:   stopped") {
			t.Fatalf("%s with another object: exit %d, want 1 and the file refused before it is read\n%s%s", args[0], code, out, stderr)
		}
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range runs {
		if code, out, stderr := runCLI(t, args...); code != 0 || !strings.Contains(out, "status:   complete") {
			t.Fatalf("%s with the exported object back: exit %d\n%s%s", args[0], code, out, stderr)
		}
	}
	if code, out, stderr := runCLI(t, "verify", "--export", exp, "--store", store); code != 0 || !strings.Contains(out, "AGREE") {
		t.Errorf("verify: exit %d, want AGREE\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "remodel", "verify", "--export", exp, "--transform", "comments-table", "--store", target); code != 0 || !strings.Contains(out, "AGREE") {
		t.Errorf("remodel verify: exit %d, want AGREE\n%s%s", code, out, stderr)
	}
}

// TestBackfillWrongKeyAttributes: key attributes that are not the table's
// (PK alone, for a table keyed by PK and SK) make several export items
// one; the backfill refuses the run at the first two, naming the key, both
// places and the flag, and says that a rerun does not help, rather than
// completing with the items collapsed. A rerun is refused the same way.
func TestBackfillWrongKeyAttributes(t *testing.T) {
	store := t.TempDir()
	for run := range 2 {
		code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync", "--key-attributes", "PK")
		m := regexp.MustCompile(`the export holds item PK=\S+ twice, at \S+\.json\.gz line \d+ and at \S+\.json\.gz line \d+: an export holds each item once, so either the key attributes it is read by \(PK\) are not the table's`).FindString(stderr)
		if code != 1 || m == "" || !strings.Contains(stderr, "--key-attributes") ||
			!strings.Contains(out, "status:   refused; the same command would be refused again") || strings.Contains(out, "complete") {
			t.Fatalf("run %d: exit %d, want 1 and the duplicate named\n%s%s", run+1, code, out, stderr)
		}
	}
}

// TestBackfillDuplicateDataFile: a manifest that lists a data file twice,
// under its key or under another spelling of the same object, is refused
// as corrupt, naming both lines, by the backfill and by verify.
func TestBackfillDuplicateDataFile(t *testing.T) {
	store := t.TempDir() // verify opens its store first
	if code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync"); code != 0 {
		t.Fatalf("backfill of the fixture: exit %d\n%s%s", code, out, stderr)
	}
	for _, spelling := range []string{"same", "other"} {
		t.Run(spelling, func(t *testing.T) {
			exp, _ := fixtureCopy(t)
			editManifest(t, exp, func(files []map[string]any) []map[string]any {
				again := map[string]any{}
				for k, v := range files[1] {
					again[k] = v
				}
				if spelling == "other" {
					key := again["dataFileS3Key"].(string)
					again["dataFileS3Key"] = key[strings.Index(key, "AWSDynamoDB/"):]
				}
				return append(files, again)
			})
			for _, args := range [][]string{
				{"backfill", "--export", exp, "--store", t.TempDir(), "--no-sync"},
				{"verify", "--export", exp, "--store", store},
			} {
				code, out, stderr := runCLI(t, args...)
				if code != 1 || !regexp.MustCompile(`manifest-files\.json line 6: \S+\.json\.gz, the data file line 2 lists already`).MatchString(stderr) {
					t.Errorf("%s: exit %d, want 1 and both lines named\n%s%s", args[0], code, out, stderr)
				}
			}
		})
	}
}

// TestBackfillItemInTwoFiles: one item in two data files, with different
// content (each file's checksum and count right): the backfill refuses
// the export, naming both files and lines, whichever worker reads first,
// rather than completing with one copy or the other.
func TestBackfillItemInTwoFiles(t *testing.T) {
	exp, files := fixtureCopy(t)
	a := dataLines(t, files[0])
	i := firstOrder(t, a, "PENDING")
	b := dataLines(t, files[3])
	b = append(b, bytes.Replace(a[i], []byte(`"status":{"S":"PENDING"}`), []byte(`"status":{"S":"PAID"}`), 1))
	fixFile(t, exp, files[3], writeDataLines(t, files[3], b), len(b))
	for _, workers := range []string{"1", "2"} {
		store := t.TempDir()
		code, out, stderr := runCLI(t, "backfill", "--export", exp, "--store", store, "--no-sync", "--workers", workers)
		first := filepath.Base(files[0]) + " line " + strconv.Itoa(i+1)
		second := filepath.Base(files[3]) + " line " + strconv.Itoa(len(b))
		if code != 1 || !strings.Contains(stderr, " twice, at ") || !strings.Contains(stderr, first) || !strings.Contains(stderr, second) ||
			!strings.Contains(out, "status:   refused") {
			t.Errorf("--workers %s: exit %d, want 1 naming %s and %s\n%s%s", workers, code, first, second, out, stderr)
		}
	}
}

// TestRemodelCollisionCounts: a collision in the middle of a batch fails
// its item alone; the rest of the batch, applied with it, is counted once:
// the items read are those written, already applied or newer, of other types and
// failed.
func TestRemodelCollisionCounts(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
	comment := func(ws, doc string) pipeline.Item {
		return pipeline.Item{"PK": s("WS#" + ws), "SK": s("DOC#" + doc + "#CMT#c1"), "EntityType": s("Comment"), "body": s("from " + ws), "version": n(1)}
	}
	items := []pipeline.Item{comment("zz1", "dX"), comment("zz2", "dX")}
	for k := range 40 {
		items = append(items, comment("w"+strconv.Itoa(k), "d"+strconv.Itoa(k)))
	}
	items = append(items, pipeline.Item{"PK": s("USER#u1"), "SK": s("PROFILE"), "EntityType": s("User"), "version": n(1)})
	exp := itemsExport(t, items)
	code, out, stderr := runCLI(t, "remodel", "backfill", "--export", exp, "--transform", "comments-table", "--store", t.TempDir(), "--no-sync")
	m := regexp.MustCompile(`items:\s+(\d+) read .*?; (\d+) source items' states written .*?, (\d+) already applied \(an earlier run\), (\d+) newer in the target, (\d+) of types`).FindStringSubmatch(out)
	failed := regexp.MustCompile(`complete but for (\d+) (?:source )?items`).FindStringSubmatch(out)
	if code != 1 || m == nil || failed == nil {
		t.Fatalf("exit %d, want 1 with the counts and one failure\n%s%s", code, out, stderr)
	}
	num := func(s string) int { v, _ := strconv.Atoi(s); return v }
	read, written, newer, other, nfailed := num(m[1]), num(m[2]), num(m[3])+num(m[4]), num(m[5]), num(failed[1])
	if read != len(items) || nfailed != 1 || newer != 0 || read != written+newer+other+nfailed {
		t.Errorf("read %d, written %d, newer %d, other types %d, failed %d: want %d read, none newer, one failed, and the counts to add up\n%s",
			read, written, newer, other, nfailed, len(items), out)
	}
}

// TestBackfillCoverageRefusal: a store that a shadow filled from after the
// export's time is refused, and the status says that a rerun does not
// help, rather than to run the same command again.
func TestBackfillCoverageRefusal(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	st, err := boltstore.Open(filepath.Join(store, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(ctx, st, seed.Set(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.NewExportDecoder(pipeline.Options{}).DecodeItem([]byte(`{"Item":{"EntityType":{"S":"Order"},"PK":{"S":"USER#u1"},"SK":{"S":"ORDER#2026-12-01#o1"},"currency":{"S":"EUR"},"itemCount":{"N":"1"},"orderDate":{"S":"2026-12-01"},"orderId":{"S":"o1"},"status":{"S":"PENDING"},"total":{"N":"5"},"userId":{"S":"u1"},"version":{"N":"1"}}}`), "stream", 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Position = pipeline.Position{Source: pipeline.SourceStreams, Stream: "s", SequenceNumber: "1"}
	c.Time, c.Precision = time.Now(), pipeline.Second
	err = eng.HandleBatch(ctx, []pipeline.Change{c})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "backfill", "--export", fullExport, "--store", store, "--no-sync")
	if code != 1 || !strings.Contains(stderr, "after the export's time") || !strings.Contains(out, "status:   refused; the same command would be refused again") || strings.Contains(out, "run the same command again") {
		t.Errorf("exit %d, want 1 and a refusal that says a rerun does not help\n%s%s", code, out, stderr)
	}
}

// TestBackfillKeyAttributesOfTheIncrementals: the incremental exports'
// lines carry the table's key (Keys); key attributes given that differ
// are refused before anything is read, naming both, where they used to
// be replaced without a word.
func TestBackfillKeyAttributesOfTheIncrementals(t *testing.T) {
	for _, cmd := range [][]string{{"backfill"}, {"remodel", "backfill", "--transform", "comments-table"}} {
		args := append(cmd, "--export", fullExport, "--incremental", incExport, "--store", t.TempDir(), "--no-sync", "--key-attributes", "PK")
		code, out, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, "the incremental exports key the table's items by PK,SK (their lines' Keys), but the key attributes given are PK") {
			t.Errorf("%s: exit %d, want 1 and both keys named\n%s%s", cmd[0], code, out, stderr)
		}
	}
}

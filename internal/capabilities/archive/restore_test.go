package archive

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/pipeline"
)

// removedItems returns the old images of an event's TTL removals in
// DynamoDB JSON, by item key: what a restore must give back.
func removedItems(t testing.TB, event []byte) map[string]string {
	t.Helper()
	changes, err := pipeline.DecodeStreamsEvent(event, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range changes {
		if c.TTL {
			out[pipeline.ItemKey(c.Keys)] = string(pipeline.AppendItem(nil, c.Old))
		}
	}
	return out
}

// archiveEvents archives events into a fresh directory and returns it.
func archiveEvents(t testing.TB, prefix string, events ...[]byte) *objstore.Dir {
	t.Helper()
	dir := objstore.NewDir(t.TempDir())
	proc := pipeline.NewStreamsProcessor(New(dir, Options{Prefix: prefix, Logger: quiet}), pipeline.Config{Logger: quiet})
	for _, e := range events {
		if out, err := proc.Invoke(context.Background(), e); err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s %v", out, err)
		}
	}
	return dir
}

// TestRestoreExport: archive → export-shaped directory gives back every
// item byte for byte, in {"Item":...} lines the export decoder reads, with
// manifests that match the data files.
func TestRestoreExport(t *testing.T) {
	ctx := context.Background()
	event := readEvent(t)
	src := archiveEvents(t, "ttl-archive/app", event)
	sel, err := Open(src, "ttl-archive/app").Select(ctx, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var progress []int64
	res, err := RestoreExport(ctx, sel, objstore.NewDir(out), ExportOptions{ExportID: "01767225600000-archive", Now: time.Unix(1767225600, 0), Progress: func(n int64) { progress = append(progress, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 7 || res.Files != 5 {
		t.Errorf("result %+v, want 7 items in 5 files", res)
	}
	// Progress is told of each data file's items as it is written.
	if sum := func() (n int64) {
		for _, p := range progress {
			n += p
		}
		return n
	}(); len(progress) != res.Files || sum != int64(res.Items) {
		t.Errorf("progress %v: want one call per data file, %d items in all", progress, res.Items)
	}

	// The layout and the manifests, pinned.
	var dump bytes.Buffer
	base := filepath.Join(out, "AWSDynamoDB", "01767225600000-archive")
	err = filepath.WalkDir(out, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, p)
		dump.WriteString(filepath.ToSlash(rel) + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"manifest-files.json", "manifest-summary.json"} {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		dump.WriteString("== " + name + "\n")
		dump.Write(b)
	}
	checkGolden(t, "export.golden", dump.Bytes())

	// Every data line is an export line whose item is the archived item,
	// byte for byte; each manifest line matches its file.
	want := removedItems(t, event)
	got := map[string]string{}
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	manifest, _ := os.ReadFile(filepath.Join(base, "manifest-files.json"))
	for _, ml := range bytes.Split(bytes.TrimSpace(manifest), []byte{'\n'}) {
		var m struct {
			ItemCount   int    `json:"itemCount"`
			MD5Checksum string `json:"md5Checksum"`
			DataFileKey string `json:"dataFileS3Key"`
		}
		if err := json.Unmarshal(ml, &m); err != nil {
			t.Fatal(err)
		}
		body, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(m.DataFileKey)))
		if err != nil {
			t.Fatal(err)
		}
		if sum := md5.Sum(body); base64.StdEncoding.EncodeToString(sum[:]) != m.MD5Checksum {
			t.Errorf("%s: md5 does not match the manifest", m.DataFileKey)
		}
		data, err := gunzip(body)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'})
		if len(lines) != m.ItemCount {
			t.Errorf("%s: %d lines, manifest says %d", m.DataFileKey, len(lines), m.ItemCount)
		}
		for i, line := range lines {
			var l struct{ Item json.RawMessage }
			if err := json.Unmarshal(line, &l); err != nil || !bytes.Equal(line, append(append([]byte(`{"Item":`), l.Item...), '}')) {
				t.Fatalf("%s line %d is not a bare export line: %s", m.DataFileKey, i+1, line)
			}
			c, err := dec.Decode(line, m.DataFileKey, i+1)
			if err != nil {
				t.Fatal(err)
			}
			got[pipeline.ItemKey(c.Keys)] = string(l.Item)
		}
	}
	if len(got) != len(want) {
		t.Errorf("restored %d items, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("item %s:\n got %s\nwant %s", k, got[k], v)
		}
	}

	// A second export under the same ID is refused rather than mixed in.
	if _, err := RestoreExport(ctx, sel, objstore.NewDir(out), ExportOptions{ExportID: "01767225600000-archive"}); err == nil {
		t.Error("RestoreExport over an existing export succeeded")
	}
}

// TestRestoreFilter: --entity and --date select partitions.
func TestRestoreFilter(t *testing.T) {
	ctx := context.Background()
	a := Open(archiveEvents(t, "p", readEvent(t)), "p")
	for _, tc := range []struct {
		f     Filter
		items int
	}{
		{Filter{}, 7},
		{Filter{Entity: "Comment"}, 4},
		{Filter{Entity: "Comment", Date: "2025-12-31"}, 3},
		{Filter{Date: "2026-01-01"}, 3},
		{Filter{Entity: UnknownEntity}, 1},
		{Filter{Entity: "Legacy/Type v2"}, 1},
		{Filter{Entity: "Nope"}, 0},
	} {
		sel, err := a.Select(ctx, tc.f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Items() != tc.items {
			t.Errorf("%+v: %d items, want %d", tc.f, sel.Items(), tc.items)
		}
	}
	if _, err := a.Select(ctx, Filter{Date: "2026-1-1"}, nil); err == nil {
		t.Error("a malformed date was accepted")
	}
}

// TestRestoreLatestVersionWins: an item created again after it expired, and
// expired again, is archived twice; a restore gives its latest removal.
func TestRestoreLatestVersionWins(t *testing.T) {
	ctx := context.Background()
	first := readEvent(t)
	// The same comment c1, recreated with a new body and removed a day later.
	second := bytes.ReplaceAll(first, []byte(`"First! \"quoted\" \u00e9"`), []byte(`"second life"`))
	second = bytes.ReplaceAll(second, []byte(`"ApproximateCreationDateTime":1767225600`), []byte(`"ApproximateCreationDateTime":1767312000`))
	second = bytes.ReplaceAll(second, []byte(`"SequenceNumber":"4421584500000000017450439091"`), []byte(`"SequenceNumber":"4421584500000000017450439200"`))
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(second, &ev); err != nil {
		t.Fatal(err)
	}
	second, _ = json.Marshal(map[string]any{"Records": ev.Records[:1]})

	a := Open(archiveEvents(t, "", second, first), "") // order of arrival does not matter
	sel, err := a.Select(ctx, Filter{Entity: "Comment"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Lines() != 5 || sel.Items() != 4 {
		t.Fatalf("%d lines, %d items; want 5 lines of 4 items", sel.Lines(), sel.Items())
	}
	var bodies []string
	err = sel.Each(ctx, func(_ ObjectInfo, item pipeline.Item, _ json.RawMessage) error {
		if s := item["SK"].(*types.AttributeValueMemberS).Value; s == "DOC#d1#CMT#c1" {
			bodies = append(bodies, item["body"].(*types.AttributeValueMemberS).Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 || bodies[0] != "second life" {
		t.Errorf("c1 restored as %q, want only its latest version", bodies)
	}
}

// scanAll returns every item of a table in DynamoDB JSON, by key.
func scanAll(ctx context.Context, t *testing.T, c *dynamodb.Client, table string) map[string]string {
	t.Helper()
	out := map[string]string{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[pipeline.ItemKey(pipeline.Item{"PK": it["PK"], "SK": it["SK"]})] = string(pipeline.AppendItem(nil, it))
		}
	}
	return out
}

func compareItems(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d items, want %d", len(got), len(want))
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("item %s:\n got %s\nwant %s", k, got[k], want[k])
		}
	}
}

// TestRestoreTableIntegrationRetriesUnprocessed restores while three
// BatchWriteItem requests have half their items left unprocessed (DynamoDB
// throttling part of a batch, produced on the wire in front of moto): every
// item ends in the table, byte for byte, and the ones held back were sent
// again.
func TestRestoreTableIntegrationRetriesUnprocessed(t *testing.T) {
	ctx := context.Background()
	w := genWorkload(workloadConfig{seed: 3, shards: 1, records: 600, startItems: 100, meanGap: 2 * time.Second})
	ttl := w.ttlRecords()
	sel, err := Open(archiveEvents(t, "", eventJSON(ttl)), "").Select(ctx, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, wire := awstest.WireDynamoDB(t)
	table := awstest.UniqueName(t, "restore")
	awstest.CreateTable(ctx, t, awstest.DynamoDB(t), table, false)
	wire.Reset()
	var held int
	wire.On("BatchWriteItem", awstest.HoldBack(t, 3, &held))
	var delays []time.Duration
	n, err := RestoreTable(ctx, sel, client, table, TableOptions{Sleep: func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if n != sel.Items() || held == 0 || len(delays) != 3 {
		t.Errorf("restored %d of %d items; %d held back, %d backoffs (want 3)", n, sel.Items(), held, len(delays))
	}
	requested := 0
	for _, c := range wire.Recorded("BatchWriteItem") {
		requested += len(awstest.PutItems(t, c.Req, table))
	}
	if requested != sel.Items()+held {
		t.Errorf("%d items asked for, want %d and the %d held back again", requested, sel.Items(), held)
	}
	var want []string
	err = sel.Each(ctx, func(_ ObjectInfo, item pipeline.Item, _ json.RawMessage) error {
		want = append(want, `{"Item":`+string(pipeline.AppendItem(nil, item))+`}`)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	if got := awstest.TableLines(t, table); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the table holds %d items, not the %d restored ones", len(got), len(want))
	}
}

// TestRestoreTableIntegration: archive → restore into a DynamoDB table on
// moto gives back the items byte for byte in DynamoDB JSON.
func TestRestoreTableIntegration(t *testing.T) {
	ctx := context.Background()
	c := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "restore")
	awstest.CreateTable(ctx, t, c, table, false)
	event := readEvent(t)
	sel, err := Open(archiveEvents(t, "a", event), "a").Select(ctx, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var progress int64
	n, err := RestoreTable(ctx, sel, c, table, TableOptions{Progress: func(n int64) { progress += n }})
	if err != nil || n != 7 || progress != 7 {
		t.Fatalf("restored %d (progress told of %d), %v", n, progress, err)
	}
	compareItems(t, scanAll(ctx, t, c, table), removedItems(t, event))
}

// TestImportTableIntegration is the evidence for keeping the metadata on the
// same line: ImportTable, given the archive's prefix as it is (lines with an
// "Archive" member beside "Item"), imports every item with no error on moto,
// byte for byte.
func TestImportTableIntegration(t *testing.T) {
	ctx := context.Background()
	s3c, _, bucket := awstest.LoggedS3(t, awstest.S3)
	// moto's ImportTable reads lines with its own JSON parser
	// (py_partiql_parser), which cuts a string at an escaped quote: "a \"b\""
	// comes back as "a \\". That is a moto bug, unrelated to the extra member,
	// so this test's one escaped quote is taken out.
	event := bytes.ReplaceAll(readEvent(t), []byte(`First! \"quoted\"`), []byte(`First! quoted`))
	proc := pipeline.NewStreamsProcessor(New(objstore.NewS3(s3c, bucket, "", objstore.S3Options{}), Options{Prefix: "ttl", Logger: quiet}), pipeline.Config{Logger: quiet})
	if out, err := proc.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	ddb := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "import")
	awstest.DeleteTableAtEnd(t, ddb, table)
	imp, err := ddb.ImportTable(ctx, &dynamodb.ImportTableInput{
		InputFormat:          types.InputFormatDynamodbJson,
		InputCompressionType: types.InputCompressionTypeGzip,
		S3BucketSource:       &types.S3BucketSource{S3Bucket: aws.String(bucket), S3KeyPrefix: aws.String("ttl/")},
		TableCreationParameters: &types.TableCreationParameters{
			TableName:   aws.String(table),
			BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var d *types.ImportTableDescription
	for deadline := time.Now().Add(time.Minute); ; {
		out, err := ddb.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: imp.ImportTableDescription.ImportArn})
		if err != nil {
			t.Fatal(err)
		}
		d = out.ImportTableDescription
		if d.ImportStatus != types.ImportStatusInProgress || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d.ImportStatus != types.ImportStatusCompleted || d.ErrorCount != 0 || d.ImportedItemCount != 7 || d.ProcessedItemCount != 7 {
		t.Fatalf("import %s: %d imported, %d processed, %d errors (%s)", d.ImportStatus, d.ImportedItemCount,
			d.ProcessedItemCount, d.ErrorCount, aws.ToString(d.FailureMessage))
	}
	compareItems(t, scanAll(ctx, t, ddb, table), removedItems(t, event))
}

// TestRestoreArchiveChanged: an object rewritten between the two passes so
// that a selected item is gone fails the restore instead of skipping it.
func TestRestoreArchiveChanged(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	proc := pipeline.NewStreamsProcessor(New(store, Options{Logger: quiet}), pipeline.Config{Logger: quiet})
	if _, err := proc.Invoke(ctx, readEvent(t)); err != nil {
		t.Fatal(err)
	}
	sel, err := Open(store, "").Select(ctx, Filter{Entity: "Comment", Date: "2025-12-31"}, nil)
	if err != nil || sel.Items() != 3 {
		t.Fatalf("%d items, %v", sel.Items(), err)
	}
	key := sel.Objects()[0].Key
	data, _ := gunzip(store.objects(t)[key])
	first, _, _ := bytes.Cut(data, []byte{'\n'})
	store.set(t, key, Gzip(append(first, '\n'))) // a shorter batch's rewrite
	err = sel.Each(ctx, func(ObjectInfo, pipeline.Item, json.RawMessage) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "1 of 3 items found again") {
		t.Fatalf("error %v", err)
	}
}

// meetingStore holds every write of an export's _started until two have
// arrived: two restores that have both looked and found no export there.
type meetingStore struct {
	*objstore.Dir
	arrived sync.WaitGroup
}

func (m *meetingStore) meet(key string) {
	if strings.HasSuffix(key, "/_started") {
		m.arrived.Done()
		m.arrived.Wait()
	}
}

func (m *meetingStore) Put(ctx context.Context, key string, body []byte) error {
	m.meet(key)
	return m.Dir.Put(ctx, key, body)
}

func (m *meetingStore) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	m.meet(key)
	return m.Dir.PutIfAbsent(ctx, key, body)
}

// TestRestoreExportConcurrent: two restores into one export directory at
// once (the same export ID): exactly one writes it, the other is refused
// with an error naming it, and the export is the winner's, whole.
func TestRestoreExportConcurrent(t *testing.T) {
	ctx := context.Background()
	sel, err := Open(archiveEvents(t, "ttl", readEvent(t)), "ttl").Select(ctx, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	st := &meetingStore{Dir: objstore.NewDir(out)}
	st.arrived.Add(2)
	objstoretest.OneWins(t, 2, errExportExists, func(int) error {
		_, err := RestoreExport(ctx, sel, st, ExportOptions{ExportID: "01767225600000-archive"})
		if err != nil && !strings.Contains(err.Error(), "AWSDynamoDB/01767225600000-archive") {
			t.Errorf("the refusal %q does not name the export", err)
		}
		return err
	})
	e, err := export.OpenExport(ctx, objstore.NewDir(out), "", export.OpenOptions{})
	if err != nil || e.Summary.ItemCount != 7 {
		t.Fatalf("the restored export: %+v, %v", e, err)
	}
}

// TestRestoreLongNames: an entity type whose escaped segment is at the
// archive's limit (200 bytes) and a sequence number of 40 digits (the
// longest DynamoDB Streams gives) make a restored data file's name,
// <date>-<segment>-<seq>.json.gz, longer than a file name may be: it is
// fitted, and the export reads back with every item.
func TestRestoreLongNames(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("T", 200)
	seq := strings.Repeat("9", 40)
	it := pipeline.Item{
		"PK": &types.AttributeValueMemberS{Value: "L#1"}, "SK": &types.AttributeValueMemberS{Value: "x"},
		"EntityType": &types.AttributeValueMemberS{Value: long}, "ttl": &types.AttributeValueMemberN{Value: "1767225000"},
	}
	src := archiveEvents(t, "", eventJSON([]simRecord{ttlRemoval(it, seq)}))
	sel, err := Open(src, "").Select(ctx, Filter{}, nil)
	if err != nil || sel.Items() != 1 {
		t.Fatalf("%d items, %v", sel.Items(), err)
	}
	if seg := sel.Objects()[0].EntitySegment; seg != long {
		t.Fatalf("the archive's segment is %d bytes, want the type as it is", len(seg))
	}
	dir := t.TempDir()
	res, err := RestoreExport(ctx, sel, objstore.NewDir(dir), ExportOptions{ExportID: "01767225600000-archive"})
	if err != nil {
		t.Fatalf("restore with a long name: %v", err)
	}
	e, err := export.OpenExport(ctx, objstore.NewDir(dir), "", export.OpenOptions{})
	if err != nil || res.Items != 1 || e.Summary.ItemCount != 1 {
		t.Fatalf("restored %+v; export %v", res, err)
	}
	for _, f := range e.Files {
		if name := path.Base(f.DataFileS3Key); len(name) > objstore.MaxSegmentBytes || !strings.HasSuffix(name, ".json.gz") {
			t.Errorf("data file %s: %d bytes", name, len(name))
		}
	}
}

// TestRestoreRefusesCollidingNames: two archive objects whose data file
// names, too long for a file name, shorten to one (a hash injected to make
// them) are refused: the restore stops naming both, rather than write one
// file over the other.
func TestRestoreRefusesCollidingNames(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("T", 200)
	var recs []simRecord
	for i, seq := range []string{strings.Repeat("9", 39) + "1", strings.Repeat("9", 39) + "2"} {
		it := pipeline.Item{
			"PK": &types.AttributeValueMemberS{Value: "L#" + string(rune('1'+i))}, "SK": &types.AttributeValueMemberS{Value: "x"},
			"EntityType": &types.AttributeValueMemberS{Value: long}, "ttl": &types.AttributeValueMemberN{Value: "1767225000"},
		}
		recs = append(recs, ttlRemoval(it, seq))
	}
	// Two batches: two objects of one partition.
	src := archiveEvents(t, "", eventJSON(recs[:1]), eventJSON(recs[1:]))
	sel, err := Open(src, "").Select(ctx, Filter{}, nil)
	if err != nil || len(sel.Objects()) != 2 {
		t.Fatalf("%d objects, %v", len(sel.Objects()), err)
	}
	restore := objstoretest.SetNameHash(t, func(string) [32]byte { return [32]byte{1} })
	defer restore()
	_, err = RestoreExport(ctx, sel, objstore.NewDir(t.TempDir()), ExportOptions{ExportID: "01767225600000-archive"})
	if !errors.Is(err, objstore.ErrNameCollision) || !strings.Contains(err.Error(), "archive objects") {
		t.Fatalf("restore of two objects with one data file name: %v, want it refused", err)
	}
}

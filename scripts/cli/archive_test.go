package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/internal/limitio"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// archiveEvent is the archive package's golden event: seven TTL removals in
// five objects, and three other records.
const archiveEvent = "../../internal/capabilities/archive/testdata/event.json"

// makeArchive archives the golden event into store under prefix.
func makeArchive(t *testing.T, store archive.Putter, prefix string) []byte {
	t.Helper()
	event, err := os.ReadFile(archiveEvent)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := pipeline.NewStreamsProcessor(archive.New(store, archive.Options{Prefix: prefix, Logger: quiet}), pipeline.Config{Logger: quiet})
	if out, err := p.Invoke(context.Background(), event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	return event
}

// cli runs a command line in-process.
func cli(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), stockOptions, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// awsEnv points the AWS SDK at nothing but what the test sets.
func awsEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
}

// wantLs is the listing of the golden event's archive. The byte counts are
// gzip sizes from compress/gzip's default level.
const wantLs = `KEY                                                                              ITEMS  BYTES
entity=CartItem/date=2025-12-31/4421584500000000017450439097.jsonl.gz                1    473
entity=Comment/date=2025-12-31/4421584500000000017450439091.jsonl.gz                 3    410
entity=Comment/date=2026-01-01/4421584500000000017450439093.jsonl.gz                 1    300
entity=Legacy%2FType%20v2/date=2026-01-01/4421584500000000017450439098.jsonl.gz      1    287
entity=_unknown/date=2026-01-01/4421584500000000017450439096.jsonl.gz                1    276
total: 5 objects                                                                     7   1746
`

func TestArchiveLsCat(t *testing.T) {
	root := t.TempDir()
	makeArchive(t, objstore.NewDir(root), "ttl")
	from := filepath.Join(root, "ttl")

	code, out, errs := cli("archive", "ls", "--from", from)
	if code != 0 || out != wantLs || errs != "" {
		t.Errorf("archive ls: exit %d\n%s\nwant\n%s\nstderr: %s", code, out, wantLs, errs)
	}

	code, out, _ = cli("archive", "ls", "--from", from, "--entity", "Comment", "--date", "2025-12-31")
	if want := "KEY                                                                   ITEMS  BYTES\n" +
		"entity=Comment/date=2025-12-31/4421584500000000017450439091.jsonl.gz      3    410\n" +
		"total: 1 object                                                           3    410\n"; code != 0 || out != want {
		t.Errorf("archive ls --entity --date: exit %d\n%s", code, out)
	}
	code, out, _ = cli("archive", "ls", "--from", from, "--entity", "_unknown")
	if code != 0 || !strings.Contains(out, "entity=_unknown/") || strings.Count(out, "\n") != 3 {
		t.Errorf("archive ls --entity _unknown: exit %d\n%s", code, out)
	}

	// cat prints the archived lines as they are, in key order.
	code, out, _ = cli("archive", "cat", "--from", from, "--entity", "Comment")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 4 {
		t.Fatalf("archive cat: exit %d, %d lines\n%s", code, len(lines), out)
	}
	for i, seq := range []string{"091", "095", "100", "093"} {
		var l archive.Line
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(l.Archive.SequenceNumber, seq) || l.Archive.Table != "App" {
			t.Errorf("line %d: %+v", i, l.Archive)
		}
	}
	golden, _ := os.ReadFile("../../internal/capabilities/archive/testdata/layout.golden")
	if !strings.Contains(string(golden), lines[0]+"\n") {
		t.Errorf("cat's first line is not the golden one:\n%s", lines[0])
	}

	// Output that cannot be written fails ls and cat, saying so once.
	for _, sub := range []string{"ls", "cat"} {
		var errb bytes.Buffer
		code := Run(context.Background(), stockOptions, []string{"archive", sub, "--from", from}, strings.NewReader(""), failingWriter{}, &errb)
		if code != 1 || strings.Count(errb.String(), "no space left on device") != 1 {
			t.Errorf("archive %s to a full disk: exit %d, stderr %q; want 1 and the write error, once", sub, code, errb.String())
		}
	}

	// A stray file is reported, not read.
	if err := os.WriteFile(filepath.Join(from, "README"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = cli("archive", "ls", "--from", from)
	if code != 0 || errs != "tributary: skipped 1 key(s) that are not archive objects, e.g. README\n" {
		t.Errorf("stray file: exit %d, stderr %q", code, errs)
	}
}

func TestArchiveUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"archive"}, 2, "want a subcommand, ls, cat or compact"},
		{[]string{"archive", "compact"}, 2, "--from is required"},
		{[]string{"archive", "compact", "--from", "x", "--older-than", "-1h"}, 2, "is negative"},
		{[]string{"archive", "compact", "--from", "x", "--columns", "item:string"}, 2, "--columns"},
		{[]string{"archive", "rm"}, 2, `unknown subcommand "rm"`},
		{[]string{"archive", "ls"}, 2, "--from is required"},
		{[]string{"archive", "ls", "--from", "x", "--date", "2026-1-1"}, 2, "--date"},
		{[]string{"archive", "cat", "--from", "s3://bad*bucket/x"}, 2, "--from"},
		{[]string{"archive", "ls", "--from", "/nonexistent/archive"}, 1, "no such file or directory"},
		{[]string{"archive", "-h"}, 0, "Usage: tributary archive <ls|cat>"},
		{[]string{"archive", "compact", "-h"}, 0, "-older-than"},
		{[]string{"archive", "ls", "-h"}, 0, "-entity"},
		{[]string{"restore", "--from", "x"}, 2, "exactly one of --table and --to"},
		{[]string{"restore", "--from", "x", "--table", "t", "--to", "d"}, 2, "exactly one of --table and --to"},
		{[]string{"restore", "--from", "x", "--to", "d", "--endpoint", "http://localhost"}, 2, "--endpoint goes with --table"},
		{[]string{"restore", "-h"}, 0, "-key-attributes"},
	} {
		code, _, errs := cli(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.err)
		}
	}
	// The commands are listed in the help, on stdout.
	_, out, _ := cli("help")
	for _, want := range []string{"archive ", "restore "} {
		if !strings.Contains(out, "\n  "+want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}

// itemsOf returns the old images of the event's TTL removals, by key.
func itemsOf(t *testing.T, event []byte) map[string]string {
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

func TestRestoreToDir(t *testing.T) {
	root := t.TempDir()
	event := makeArchive(t, objstore.NewDir(root), "")
	to := t.TempDir()
	code, out, errs := cli("restore", "--from", root, "--to", to)
	if code != 0 || !strings.HasPrefix(out, "wrote 7 items from 5 objects into "+filepath.Join(to, "AWSDynamoDB")) {
		t.Fatalf("restore --to: exit %d\n%s%s", code, out, errs)
	}
	// The export's data lines are the items, byte for byte.
	want := itemsOf(t, event)
	got := map[string]string{}
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	files, _ := filepath.Glob(filepath.Join(to, "AWSDynamoDB", "*", "data", "*.json.gz"))
	if len(files) != 5 {
		t.Fatalf("%d data files", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := limitio.ReadAll(raw, 64<<20) // gunzips
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'}) {
			c, err := dec.Decode(line, f, i+1)
			if err != nil {
				t.Fatal(err)
			}
			got[pipeline.ItemKey(c.Keys)] = string(bytes.TrimSuffix(bytes.TrimPrefix(line, []byte(`{"Item":`)), []byte("}")))
		}
	}
	compare(t, got, want)
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(files[0])), "manifest-summary.json")); err != nil {
		t.Error(err)
	}

	// An empty selection is an error, not an empty export.
	code, _, errs = cli("restore", "--from", root, "--to", t.TempDir(), "--entity", "Nope")
	if code != 1 || !strings.Contains(errs, "no archived items match") {
		t.Errorf("empty selection: exit %d, %q", code, errs)
	}
}

// TestRestoreKeyAttributes: restore reads the archived items' keys by the
// environment's key attributes, as the other commands that read whole items
// do: a binary whose table is keyed pk/sk restores without a flag, one that
// gives other key attributes than its environment's is refused, and a
// binary that declares none takes --key-attributes, or PK and SK.
func TestRestoreKeyAttributes(t *testing.T) {
	event, err := os.ReadFile(archiveEvent)
	if err != nil {
		t.Fatal(err)
	}
	event = bytes.ReplaceAll(bytes.ReplaceAll(event, []byte(`"PK":`), []byte(`"pk":`)), []byte(`"SK":`), []byte(`"sk":`))
	root := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := pipeline.NewStreamsProcessor(archive.New(objstore.NewDir(root), archive.Options{Logger: quiet}), pipeline.Config{Logger: quiet})
	if out, err := p.Invoke(context.Background(), event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	keyed := Options{Name: "ledger", Environment: &projections.Environment{Schema: pipeline.Schema{KeyAttributes: []string{"pk", "sk"}}}}
	for _, tc := range []struct {
		name  string
		opts  Options
		flags []string
		code  int
		out   string // in stdout (exit 0) or stderr
	}{
		{"the environment's keys", keyed, nil, 0, "wrote 7 items from 5 objects"},
		{"the environment's keys, given again", keyed, []string{"--key-attributes", "pk,sk"}, 0, "wrote 7 items from 5 objects"},
		{"other keys than the environment's", keyed, []string{"--key-attributes", "PK,SK"}, 2,
			"ledger restore: usage: --key-attributes PK,SK, but this table's environment has the key attributes pk,sk"},
		{"no keys declared, given", stockOptions, []string{"--key-attributes", "pk,sk"}, 0, "wrote 7 items from 5 objects"},
		{"no keys declared: PK, SK", stockOptions, nil, 1, "item has none of the key attributes [PK SK]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"restore", "--from", root, "--to", t.TempDir()}, tc.flags...)
			code, out, errs := runWith(t, tc.opts, args...)
			text := errs
			if tc.code == 0 {
				text = out
			}
			if code != tc.code || !strings.Contains(text, tc.out) {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", code, tc.code, tc.out, out, errs)
			}
		})
	}
}

func compare(t *testing.T, got, want map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(got) != len(want) {
		t.Errorf("%d items, want %d", len(got), len(want))
	}
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], want[k])
		}
	}
}

// TestArchiveS3 reads an archive in S3 (gofakes3), addressed by
// AWS_ENDPOINT_URL_S3 as a user would point the tool at a local server.
func TestArchiveS3(t *testing.T) {
	awsEnv(t)
	c := awstest.GoFakeS3(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", aws.ToString(c.Options().BaseEndpoint))
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("archive-bucket")}); err != nil {
		t.Fatal(err)
	}
	makeArchive(t, objstore.NewS3(c, "archive-bucket", "", objstore.S3Options{}), "ttl/app")

	code, out, errs := cli("archive", "ls", "--from", "s3://archive-bucket/ttl/app")
	if code != 0 || out != wantLs {
		t.Errorf("archive ls s3://: exit %d\n%s\nwant\n%s\nstderr: %s", code, out, wantLs, errs)
	}
	code, out, _ = cli("archive", "cat", "--from", "s3://archive-bucket/ttl/app/", "--date", "2026-01-01")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("archive cat s3://: exit %d\n%s", code, out)
	}
	to := t.TempDir()
	if code, out, errs := cli("restore", "--from", "s3://archive-bucket/ttl/app", "--to", to, "--entity", "Comment"); code != 0 ||
		!strings.HasPrefix(out, "wrote 4 items from 2 objects into ") {
		t.Errorf("restore from s3://: exit %d\n%s%s", code, out, errs)
	}
}

// TestRestoreTableIntegration: `tributary restore --table --endpoint` puts
// the archived items into a DynamoDB table on moto, byte for byte.
func TestRestoreTableIntegration(t *testing.T) {
	url := awstest.MotoURL(t)
	awsEnv(t)
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "restore-cli")
	awstest.CreateTable(ctx, t, ddb, table, false)

	root := t.TempDir()
	event := makeArchive(t, objstore.NewDir(root), "")
	code, out, errs := cli("restore", "--from", root, "--table", table, "--endpoint", url)
	if code != 0 || out != "restored 7 items from 5 objects into table "+table+"\n" {
		t.Fatalf("restore --table: exit %d\n%s%s", code, out, errs)
	}
	got := map[string]string{}
	scan, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range scan.Items {
		got[pipeline.ItemKey(pipeline.Item{"PK": it["PK"], "SK": it["SK"]})] = string(pipeline.AppendItem(nil, it))
	}
	compare(t, got, itemsOf(t, event))
}

// TestProcessArchiveTTLAttribute: process --archive dates an item by the
// attribute --ttl-attribute names; without it, the item (whose expiry is
// under another name) is dated by its removal, a day later here.
func TestProcessArchiveTTLAttribute(t *testing.T) {
	data, err := os.ReadFile(fixtures + "streams/event.json")
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte(`"ttl": {"N": "1795996800"}`), []byte(`"expiresAt": {"N": "1795910400"}`))
	events := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(events, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for flags, date := range map[string]string{"--ttl-attribute=expiresAt": "date=2026-11-29", "": "date=2026-11-30"} {
		out := t.TempDir()
		args := []string{"process", "--events", events, "--store", t.TempDir(), "--archive", out}
		if flags != "" {
			args = append(args, flags)
		}
		if code, stdout, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		var keys []string
		if err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				keys = append(keys, filepath.ToSlash(strings.TrimPrefix(p, out+string(filepath.Separator))))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || !strings.HasPrefix(keys[0], "entity=Comment/"+date+"/") {
			t.Errorf("%q: archive objects %v, want one under entity=Comment/%s/", flags, keys, date)
		}
	}
}

// TestArchiveCompact: `archive compact` leaves young objects with the
// default --older-than, takes them all with 0s, and ls, cat and restore
// read the compacted form: the same lines, the same items; a second run is
// a no-op.
func TestArchiveCompact(t *testing.T) {
	root := t.TempDir()
	event := makeArchive(t, objstore.NewDir(root), "ttl")
	from := filepath.Join(root, "ttl")
	_, catBefore, _ := cli("archive", "cat", "--from", from)

	code, out, errs := cli("archive", "compact", "--from", from)
	if want := "0 partition(s) with settled objects, 5 object(s) younger than 48h0m0s left\n" +
		"compacted 0 object(s), 0 bytes, into 0 Parquet object(s), 0 rows, 0 bytes; 0 line(s) held already\n" +
		"removed 0 JSON-lines object(s)\n"; code != 0 || out != want || errs != "" {
		t.Fatalf("compact, default age: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli("archive", "compact", "--from", from, "--older-than", "0s")
	if !strings.HasPrefix(out, "5 partition(s) with settled objects, 0 object(s) younger than 0s left\ncompacted 5 object(s), 1746 bytes, into 5 Parquet object(s), 7 rows, ") ||
		!strings.HasSuffix(out, "0 line(s) held already\nremoved 5 JSON-lines object(s)\n") || code != 0 || errs != "" {
		t.Fatalf("compact --older-than 0s: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = cli("archive", "ls", "--from", from)
	if code != 0 || strings.Count(out, "compacted/entity=") != 5 || !strings.Contains(out, "compacted/entity=Comment/date=2025-12-31/4421584500000000017450439091-") ||
		!strings.Contains(out, "total: 5 objects") || strings.Contains(out, ".jsonl.gz") {
		t.Fatalf("ls after compaction: exit %d\n%s", code, out)
	}
	if _, catAfter, _ := cli("archive", "cat", "--from", from); catAfter != catBefore {
		t.Fatalf("cat after compaction:\n%s\nbefore:\n%s", catAfter, catBefore)
	}
	to := t.TempDir()
	if code, out, errs := cli("restore", "--from", from, "--to", to); code != 0 || !strings.HasPrefix(out, "wrote 7 items from 5 objects") {
		t.Fatalf("restore after compaction: exit %d %s%s", code, out, errs)
	}
	compare(t, restoredItems(t, to), itemsOf(t, event))
	code, out, _ = cli("archive", "compact", "--from", from, "--older-than", "0s")
	if code != 0 || !strings.HasPrefix(out, "0 partition(s)") {
		t.Fatalf("second compact: exit %d\n%s", code, out)
	}
}

// restoredItems reads the items `restore --to DIR` wrote into dir: each
// item's DynamoDB JSON by its key.
func restoredItems(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	files, err := filepath.Glob(filepath.Join(dir, "AWSDynamoDB", "*", "data", "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data file restored into %s (%v)", dir, err)
	}
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := limitio.ReadAll(raw, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'}) {
			c, err := dec.Decode(line, f, i+1)
			if err != nil {
				t.Fatal(err)
			}
			got[pipeline.ItemKey(c.Keys)] = string(bytes.TrimSuffix(bytes.TrimPrefix(line, []byte(`{"Item":`)), []byte("}")))
		}
	}
	return got
}

package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
)

// maxCompactorBytes is the compactor's ceiling, above the other functions'
// maxBinaryBytes: it links the Parquet writer and reader (parquet-go, with
// its zstd and snappy codecs) beside the S3 client, and it runs once a day
// for up to fifteen minutes, where a larger binary's few milliseconds of
// cold start do not count (docs/archive.md, "The function").
const maxCompactorBytes = 18 << 20

// compactorEnv is the compactor's environment as template.yaml sets it with
// the parameters' defaults, every object settled (OLDER_THAN=0s).
func compactorEnv(bucket string) map[string]string {
	return map[string]string{
		"ARCHIVE_BUCKET": bucket,
		"ARCHIVE_PREFIX": "ttl",
		"OLDER_THAN":     "0s",
		"KEEP_OBJECTS":   "false",
		"TYPE_ATTRIBUTE": "EntityType",
		"TTL_ATTRIBUTE":  "ttl",
		"KEY_ATTRIBUTES": "PK,SK",
	}
}

// The scheduled event EventBridge sends the compactor (its content is not
// read: any event runs one compaction).
const scheduleEvent = `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event",` +
	`"source":"aws.events","account":"123456789012","time":"2026-01-03T00:00:00Z","region":"us-east-1",` +
	`"resources":["arn:aws:events:us-east-1:123456789012:rule/tributary-CompactorDaily"],"detail":{}}`

// compactedKey is the name of a Parquet object compaction writes: its
// partition under compacted/, its first input's stream position and a
// digest of its inputs.
var compactedKey = regexp.MustCompile(`^ttl/compacted/entity=[^/]+/date=[^/]+/[0-9]+-[0-9a-f]+\.parquet$`)

// TestRuntimeEmulatorCompactor: the stock compactor, under the emulator
// against moto, compacts an archive the archiver's code wrote (the golden
// event's seven items in five objects) on the first scheduled invocation
// and answers with the run's figures; the next invocations, each a cold
// start, find nothing to do; `archive ls`, `cat` and `restore` through the
// CLI show the same items before and after, and only Parquet objects are
// left.
func TestRuntimeEmulatorCompactor(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	client := awstest.S3(t)
	bucket := awstest.UniqueName(t, "rie")
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	event := makeArchive(t, objstore.NewS3(client, bucket, "", objstore.S3Options{}), "ttl")
	awsEnv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", motoURL)
	from := "s3://" + bucket + "/ttl"
	if code, out, errs := cli("archive", "ls", "--from", from); code != 0 || out != wantLs {
		t.Fatalf("archive ls before: exit %d\n%s\nwant\n%s\nstderr: %s", code, out, wantLs, errs)
	}
	_, catBefore, _ := cli("archive", "cat", "--from", from)
	if strings.Count(catBefore, "\n") != 7 {
		t.Fatalf("archive cat before: want 7 lines\n%s", catBefore)
	}
	restoreBefore := t.TempDir()
	if code, out, errs := cli("restore", "--from", from, "--to", restoreBefore); code != 0 || !strings.HasPrefix(out, "wrote 7 items from 5 objects") {
		t.Fatalf("restore before: exit %d %s%s", code, out, errs)
	}
	compare(t, restoredItems(t, restoreBefore), itemsOf(t, event))

	bootstrap := buildBootstrap(t, "compactor", runtime.GOARCH)
	env := compactorEnv(bucket)
	env["AWS_ENDPOINT_URL"] = motoURL
	env["AWS_LAMBDA_FUNCTION_NAME"] = "compactor"
	var inits []time.Duration
	var first map[string]any
	for i := range coldStarts {
		got, d := coldStart(t, rie, bootstrap, env, []byte(scheduleEvent))
		inits = append(inits, d)
		if i > 0 {
			// A later run: nothing settled is left, nothing is written.
			if want := `{"partitions":0,"young":0,"inputs":0,"inputBytes":0,"written":null,"rows":0,"outputBytes":0,"duplicates":0,"removed":0,"kept":0}`; got[0] != want {
				t.Errorf("cold start %d: got %s, want %s (a rerun is a no-op)", i+1, got[0], want)
			}
			continue
		}
		if err := json.Unmarshal([]byte(got[0]), &first); err != nil {
			t.Fatalf("first response %s: %v", got[0], err)
		}
		var fields []string
		for k := range first {
			fields = append(fields, k)
		}
		slices.Sort(fields)
		// busy, unfinished and rewritten are left out when zero.
		if want := []string{"duplicates", "inputBytes", "inputs", "kept", "outputBytes", "partitions", "removed", "rows", "written", "young"}; !slices.Equal(fields, want) {
			t.Errorf("first response's fields %v, want %v: %s", fields, want, got[0])
		}
		for k, want := range map[string]float64{"partitions": 5, "young": 0, "inputs": 5, "inputBytes": 1746, "rows": 7, "duplicates": 0, "removed": 5, "kept": 0} {
			if first[k] != want {
				t.Errorf("first response: %s is %v, want %v: %s", k, first[k], want, got[0])
			}
		}
	}

	// What is left in the bucket: the Parquet objects the first run named,
	// of the sizes it counted, and the partitions' leases; no JSON lines.
	var parquet []string
	var parquetBytes int64
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("ttl/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			switch {
			case strings.HasSuffix(k, ".jsonl.gz"):
				t.Errorf("%s is left after compaction", k)
			case strings.HasSuffix(k, ".parquet"):
				parquet = append(parquet, k)
				parquetBytes += aws.ToInt64(o.Size)
			}
		}
	}
	var written []string
	for _, w := range first["written"].([]any) {
		written = append(written, w.(string))
	}
	slices.Sort(written)
	if !slices.Equal(parquet, written) || len(written) != 5 {
		t.Errorf("Parquet objects in the bucket %v, want those the response named %v", parquet, written)
	}
	for _, k := range written {
		if !compactedKey.MatchString(k) {
			t.Errorf("compacted object %s: want %s", k, compactedKey)
		}
	}
	if float64(parquetBytes) != first["outputBytes"] {
		t.Errorf("the Parquet objects hold %d bytes, the response counted %v", parquetBytes, first["outputBytes"])
	}

	code, out, errs := cli("archive", "ls", "--from", from)
	if code != 0 || strings.Count(out, "compacted/entity=") != 5 || !strings.Contains(out, "total: 5 objects") || strings.Contains(out, ".jsonl.gz") {
		t.Errorf("archive ls after: exit %d\n%s%s", code, out, errs)
	}
	if _, catAfter, _ := cli("archive", "cat", "--from", from); catAfter != catBefore {
		t.Errorf("archive cat after compaction:\n%s\nbefore:\n%s", catAfter, catBefore)
	}
	restoreAfter := t.TempDir()
	if code, out, errs := cli("restore", "--from", from, "--to", restoreAfter); code != 0 || !strings.HasPrefix(out, "wrote 7 items from 5 objects") {
		t.Fatalf("restore after: exit %d %s%s", code, out, errs)
	}
	compare(t, restoredItems(t, restoreAfter), restoredItems(t, restoreBefore))

	figures(t, "compactor", inits, buildBootstrap(t, "compactor", "arm64"))
}

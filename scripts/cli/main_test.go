package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
)

var update = flag.Bool("update", false, "rewrite golden files")

// stockOptions are the stock binary's (scripts/tributary) but for its own
// commands (demo, leaderboard: tested there).
var stockOptions = Options{Environment: seed.Environment()}

// runCLI runs one command line in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), stockOptions, args, strings.NewReader(""), &out, &errb)
	if len(args) > 0 && args[0] == "verify" && !slices.Contains(args, "--parts") && !slices.Contains(args, "-h") {
		// Every verify a test runs runs again cut into parts, as the
		// Verify state machine runs it: the same exit and the same words.
		var pout, perr bytes.Buffer
		pcode := Run(context.Background(), stockOptions, append(slices.Clone(args), "--parts", "4"), strings.NewReader(""), &pout, &perr)
		if pcode != code || afterTiming(pout.String()) != afterTiming(out.String()) {
			t.Errorf("verify %v: cut into parts, exit %d:\n%s%s\nin one process, exit %d:\n%s%s", args[1:], pcode, pout.String(), perr.String(), code, out.String(), errb.String())
		}
	}
	return code, out.String(), errb.String()
}

// afterTiming is verify's output without the time its first line says it
// took.
func afterTiming(out string) string {
	first, rest, _ := strings.Cut(out, "\n")
	if i := strings.LastIndex(first, ") in "); strings.HasPrefix(first, "recomputed ") && i > 0 {
		first = first[:i]
	}
	return first + "\n" + rest
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

const fixtures = "../../pipeline/testdata/"

func TestUsage(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{nil, 2, "Usage: tributary <command>"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"decode"}, 2, "no input files"},
		{[]string{"decode", "--format", "xml", "x"}, 2, `unknown format "xml"`},
		{[]string{"decode", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"process", "--store", "x"}, 2, "no --events files"},
		{[]string{"aggregates"}, 2, "give --store DIR or --table NAME"},
		{[]string{"aggregates", "--store", "a", "--table", "b"}, 2, "exclusive"},
		{[]string{"process", "-h"}, 0, "Usage: tributary process [flags]"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
	// help, asked for, is the output; without a command it is the error.
	if code, out, stderr := runCLI(t, "help"); code != 0 || !strings.Contains(out, "\n  backfill ") || stderr != "" {
		t.Errorf("help: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, _ := runCLI(t, "projections", "nope"); code != 2 || out != "" {
		t.Errorf("projections nope: exit %d", code)
	}
}

func TestDecode(t *testing.T) {
	code, out, stderr := runCLI(t, "decode", fixtures+"streams/event.json", fixtures+"kinesis/event-ms.json", fixtures+"export/full.json.gz")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "decode.jsonl", out)

	code, out, stderr = runCLI(t, "decode", fixtures+"malformed/streams-n-garbage.json")
	if code != 1 || strings.Count(out, "\n") != 2 || !strings.Contains(stderr, "dynamodb.NewImage.total.N") {
		t.Errorf("bad record: exit %d, %d lines out, stderr %q", code, strings.Count(out, "\n"), stderr)
	}
	code, _, stderr = runCLI(t, "decode", fixtures+"malformed/streams-truncated.json")
	if code != 1 || !strings.Contains(stderr, "invalid JSON") {
		t.Errorf("truncated: exit %d, stderr %q", code, stderr)
	}
}

// Records of DynamoDB's largest items decode from every format, and an
// export line longer than any export's is named by its line number.
func TestDecodeLargestItems(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		records int
	}{
		{"StreamsBinaryModify", []string{fixtures + "large/streams-modify-400kb-binary.json.gz"}, 1},
		{"StreamsControlCharacters", []string{fixtures + "large/streams-insert-400kb-control.json.gz"}, 1},
		{"KinesisModify", []string{"--format", "kinesis", fixtures + "large/kinesis-modify-400kb.json.gz"}, 2},
		{"ExportIncrementalBinary", []string{"--format", "export", fixtures + "large/export-incremental-400kb-binary.json.gz"}, 3},
		{"ExportFullControlCharacters", []string{"--format", "export", fixtures + "large/export-full-400kb-control.json.gz"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, append([]string{"decode"}, tt.args...)...)
			if code != 0 || strings.Count(out, "\n") != tt.records {
				t.Fatalf("exit %d, %d lines out; stderr: %.500s", code, strings.Count(out, "\n"), stderr)
			}
		})
	}
	t.Run("LineOverTheLimit", func(t *testing.T) {
		path := writeGzip(t, "data.json.gz", []byte(`{"Item":{"PK":{"S":"A"},"SK":{"S":"B"}}}`+"\n"), 'x', pipeline.MaxExportLineBytes+1)
		code, out, stderr := runCLI(t, "decode", "--format", "export", path)
		if code != 1 || strings.Count(out, "\n") != 1 || !strings.Contains(stderr, fmt.Sprintf("line 2: line longer than %d bytes", pipeline.MaxExportLineBytes)) {
			t.Fatalf("exit %d, %d lines out; stderr %q", code, strings.Count(out, "\n"), stderr)
		}
	})
}

// Without --format, the format is told from the structure: a Streams event
// whose items mention kinesis everywhere is processed as a Streams event.
func TestFormatFromStructure(t *testing.T) {
	code, out, stderr := runCLI(t, "process", "--store", t.TempDir(), fixtures+"streams/mentions-kinesis.json")
	if code != 0 || !strings.Contains(out, "mentions-kinesis.json: 2 records, 1 applied, 1 skipped (no projection reads their entity type), 0 failed") {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "decode", fixtures+"streams/mentions-kinesis.json")
	if code != 0 || strings.Count(out, `"source":"streams"`) != 2 {
		t.Fatalf("decode: exit %d\n%s%s", code, out, stderr)
	}
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("Hello, this is a test 123.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "decode", path)
	if code != 1 || !strings.Contains(stderr, `notes.txt: cannot tell its format (give --format): not JSON: starts with "Hello, this is a"`) {
		t.Fatalf("plain text: exit %d, %q", code, stderr)
	}
}

// Failures name their record, file and line once.
func TestFailuresNamedOnce(t *testing.T) {
	code, _, stderr := runCLI(t, "process", "--store", t.TempDir(), fixtures+"malformed/streams-n-garbage.json")
	if code != 1 || strings.Count(stderr, "record 1") != 1 || !strings.Contains(stderr, "streams-n-garbage.json: record 1 (seq ") {
		t.Errorf("process: exit %d, stderr %q", code, stderr)
	}
	file := fixtures + "malformed/export-ss-non-string.json"
	code, _, stderr = runCLI(t, "decode", "--format", "export", file)
	if code != 1 || strings.Count(stderr, "export-ss-non-string.json") != 1 || !strings.Contains(stderr, file+" line 2: Item.tags.SS[1]: want string") {
		t.Errorf("decode: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "decode", fixtures+"kinesis/plain-text.json")
	if code != 1 || !strings.Contains(stderr, `plain-text.json: record 0 (shard shardId-000000000006, seq 49656632116218945776331460766870512464380820032064733186): kinesis.data: not JSON: starts with "Hello, this is a"`) {
		t.Errorf("decode plain text: exit %d, stderr %q", code, stderr)
	}
}

// process runs the projector's handler, which needs new images: a stream
// of old images only is refused, and nothing is written.
func TestProcessRefusesViewType(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "process", "--store", dir, fixtures+"streams/view-old-image.json")
	if code != 1 || !strings.Contains(stderr, "the stream's view type is OLD_IMAGE, which cannot give a correct result: NEW_IMAGE or NEW_AND_OLD_IMAGES is needed") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if code, out, _ := runCLI(t, "aggregates", "--store", dir, "--json"); code != 0 || out != "" {
		t.Errorf("aggregates after the refusal: exit %d\n%s", code, out)
	}
}

// writeGzip writes head and then n bytes of pattern, gzip-compressed, to a
// file.
func writeGzip(t *testing.T, name string, head []byte, pattern byte, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	_, err = zw.Write(head)
	block := bytes.Repeat([]byte{pattern}, 1<<20)
	for ; n > 0 && err == nil; n -= len(block) {
		_, err = zw.Write(block[:min(n, len(block))])
	}
	if err := errors.Join(err, zw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return path
}

// A gzip bomb is decompressed no further than its format allows: a Lambda
// event at most 6 MB, an export line at most the export's longest.
func TestGzipBomb(t *testing.T) {
	event := writeGzip(t, "event.json.gz", []byte(`{"Records":[{"eventSource":"aws:dynamodb","dynamodb":{"NewImage":{"s":{"S":"`), 'x', 16<<20)
	zeros := writeGzip(t, "zeros.gz", nil, 0, pipeline.MaxStreamsAPIBodyBytes+1<<20) // past every format's limit
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"ProcessEvent", []string{"process", "--store", t.TempDir(), event}, "event.json.gz: decompresses to more than 6291456 bytes: not a streams payload (a Lambda event is at most Lambda's 6 MB payload)"},
		{"DecodeEvent", []string{"decode", event}, "event.json.gz: decompresses to more than 6291456 bytes: not a streams payload"},
		{"DecodeZeros", []string{"decode", zeros}, `zeros.gz: cannot tell its format (give --format): not JSON: starts with "\x00\x00`},
		{"DecodeZerosAsKinesis", []string{"decode", "--format", "kinesis", zeros}, "zeros.gz: decompresses to more than 6291456 bytes: not a kinesis payload"},
		{"DecodeZerosAsExport", []string{"decode", "--format", "export", zeros}, fmt.Sprintf("zeros.gz line 1: line longer than %d bytes", pipeline.MaxExportLineBytes)},
		{"DecodeZerosAsGetRecords", []string{"decode", "--format", "streams-api", zeros}, fmt.Sprintf("zeros.gz: decompresses to more than %d bytes: not a streams-api payload", pipeline.MaxStreamsAPIBodyBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q\nwant %q", code, stderr, tt.want)
			}
		})
	}
}

func TestProcessAggregatesLeaderboard(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "process", "--store", dir, "--events", fixtures+"streams/event.json", "--events", fixtures+"kinesis/event-ms.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `event.json: 4 records, 4 applied, 0 skipped (no projection reads their entity type), 0 failed; response {"batchItemFailures":[]}`) {
		t.Errorf("process output:\n%s", out)
	}
	// Processing the same events again changes nothing.
	runCLI(t, "process", "--store", dir, "--events", fixtures+"streams/event.json", "--events", fixtures+"kinesis/event-ms.json")
	code, out, _ = runCLI(t, "aggregates", "--store", dir, "--json")
	if code != 0 {
		t.Fatal(code)
	}
	golden(t, "aggregates.jsonl", out)

	code, out, _ = runCLI(t, "aggregates", "--store", dir)
	if code != 0 || !strings.Contains(out, "ORDERS#PAID") || !strings.Contains(out, "orders=1 revenue=120.5\n") {
		t.Errorf("text aggregates:\n%s", out)
	}
	code, _, stderr = runCLI(t, "aggregates", "--store", filepath.Join(dir, "missing"))
	if code != 1 || !strings.Contains(stderr, "no aggregate store") {
		t.Errorf("missing store: exit %d, %q", code, stderr)
	}
}

// failingWriter fails every write, as stdout does when redirected to a full
// disk or a closed pipe.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestDecodeStopsAtWriteError: decode stops at the first change it cannot
// write, rather than decoding the rest of its input for nothing.
func TestDecodeStopsAtWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "export.json")
	lines := strings.Repeat(`{"Item":{"PK":{"S":"A"}}}`+"\n", 1000) + `{"nope":1}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	code := Run(context.Background(), stockOptions, []string{"decode", "--format", "export", path}, strings.NewReader(""), failingWriter{}, &errb)
	if code != 1 || strings.Count(errb.String(), "no space left on device") != 1 || strings.Contains(errb.String(), "line 1001") {
		t.Errorf("exit %d, stderr %q: want 1 and the write error, once, and line 1001 not reached", code, errb.String())
	}
}

// TestOutputErrorsFail: a report that cannot be written fails its command
// (exit 1, the error on stderr) rather than ending in a truncated file.
func TestOutputErrorsFail(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "process", "--store", dir, "--events", fixtures+"streams/event.json"); code != 0 {
		t.Fatalf("process: exit %d: %s", code, stderr)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"aggregates", []string{"aggregates", "--store", dir}},
		{"aggregates --json", []string{"aggregates", "--store", dir, "--json"}},
		{"rows", []string{"rows", "--store", dir, "--projection", "order-totals", "--partition", "X"}},
		{"projections show", []string{"projections"}},
		{"decode", []string{"decode", fixtures + "streams/event.json"}},
		{"decode --format export", []string{"decode", "--format", "export", fixtures + "export/full.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errb bytes.Buffer
			code := Run(context.Background(), stockOptions, tt.args, strings.NewReader(""), failingWriter{}, &errb)
			if code != 1 || strings.Count(errb.String(), "no space left on device") != 1 {
				t.Errorf("exit %d, stderr %q: want 1 and the write error, once", code, errb.String())
			}
		})
	}
}

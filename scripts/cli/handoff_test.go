package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
)

// streamARN is a DynamoDB stream's ARN: DynamoDB Streams keep 24 hours,
// so no server is asked.
const streamARN = "streams://arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2026-11-01T00:00:00.000"

// TestBackfillHandoff: `backfill --replay-from` on the road that catches
// the store up by `replay --start` (nothing attached to it before the
// export). The fixture export is days old, older than a DynamoDB stream
// keeps: the backfill is refused at once, before it reads an item, as the
// other refusals are (the status line, exit 1), with the guard's message
// naming the stream, its retention and what to do. Into a store a shadow
// marked before the export the stream's trimming does not matter: the
// same flag completes. Without the flag, a note on stderr names it and the
// backfill completes; a --replay-from that is not a stream is a usage
// error.
func TestBackfillHandoff(t *testing.T) {
	ctx := context.Background()
	attached := t.TempDir()
	st, err := boltstore.Open(filepath.Join(attached, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) // the export is 10:00:02
	if _, err := engine.Open(ctx, st, seed.Set(), engine.Config{Now: func() time.Time { return before }}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	const note = `tributary backfill: note: the hand-off guard did not run: nothing was attached to the store before the export, so it must be caught up by ` +
		"`tributary replay --start 2026-11-30T10:00:02Z`" + `, which needs the stream to hold that second still; give --replay-from`
	for _, tt := range []struct {
		name        string
		store       string // "": a new one
		args        []string
		code        int
		out, stderr []string // "": what stderr must be empty of
		noStderr    []string
	}{
		{
			name: "trimmed already", args: []string{"--replay-from", streamARN}, code: 1,
			out: []string{"items:    0 read", "status:   refused; the same command would be refused again: the error says what to do instead"},
			stderr: []string{
				"tributary backfill: backfill refused: nothing was attached to the store before the export, so the stream must be replayed into it from the export's second, 2026-11-30T10:00:02Z (replay --start), but " + streamARN + " keeps its records 24h0m0s: that second is trimmed about 2026-12-01T10:00:02Z, and now, ",
				"too late. Attach a shadow (or remodeler) to the store before taking a new export",
			},
			noStderr: []string{"note:"},
		},
		{
			name: "a shadow attached before the export", store: attached, args: []string{"--replay-from", streamARN},
			out: []string{"status:   complete"}, noStderr: []string{"refused", "note:", "hand-off:"},
		},
		{
			name: "stream not given", out: []string{"status:   complete"}, stderr: []string{note},
		},
		{
			name: "stream not given, a shadow attached before the export", store: attached,
			out: []string{"status:   complete"}, noStderr: []string{"note:"},
		},
		{
			name: "not a stream", args: []string{"--replay-from", "s3://bucket/stream"}, code: 2,
			stderr: []string{`--replay-from "s3://bucket/stream": want kinesis://STREAM (a name or ARN) or streams://TABLE`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.store
			if store == "" {
				store = t.TempDir()
			}
			code, out, stderr := runCLI(t, append([]string{"backfill", "--export", fullExport, "--store", store, "--no-sync"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, stderr)
			}
			t.Logf("%s%s", out, stderr)
			for _, want := range tt.out {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, not := range tt.noStderr {
				if strings.Contains(stderr, not) {
					t.Errorf("stderr says %q:\n%s", not, stderr)
				}
			}
		})
	}
}

// TestIntegrationBackfillHandoffKinesis: `backfill --replay-from
// kinesis://STREAM` reads the stream's retention from the test server
// (DescribeStreamSummary). An export 30 hours old is refused at once while
// the stream keeps 24 hours; once the stream keeps 48, the same command
// completes, printing the guard's estimate on stderr, and the replay from
// the export's time catches the store up.
func TestIntegrationBackfillHandoffKinesis(t *testing.T) {
	url := replayAWSEnv(t)
	ctx := context.Background()
	_, _, at, exp := historyExport(t, sim.Workload{Seed: 67, Changes: 600, Skew: 1.0, Start: time.Now().UTC().Add(-31 * time.Hour).Truncate(time.Second)}, 400)
	kc := awstest.Kinesis(t)
	stream := awstest.CreateStream(ctx, t, kc, "handoff", 1)
	from := "kinesis://" + stream
	second := at.Truncate(time.Second)

	store := t.TempDir()
	backfill := func() (int, string, string) {
		return runCLI(t, "backfill", "--export", exp, "--store", store, "--no-sync", "--replay-from", from, "--endpoint", url)
	}
	code, out, stderr := backfill()
	if code != 1 || !strings.Contains(out, "status:   refused;") ||
		!strings.Contains(stderr, "but "+from+" keeps its records 24h0m0s: that second is trimmed about "+second.Add(24*time.Hour).Format(time.RFC3339)) {
		t.Fatalf("a 30-hour-old export, a stream of 24 hours: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := kc.IncreaseStreamRetentionPeriod(ctx, &kinesis.IncreaseStreamRetentionPeriodInput{StreamName: aws.String(stream), RetentionPeriodHours: aws.Int32(48)}); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = backfill()
	if code != 0 || !strings.Contains(out, "status:   complete") ||
		!strings.Contains(stderr, "tributary backfill: hand-off: "+from+" trims the export's second about "+second.Add(48*time.Hour).Format(time.RFC3339)+", in ") {
		t.Fatalf("the stream keeps 48 hours: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("%s%s", out, stderr)
	if code, out, stderr := runCLI(t, "replay", "--from", from, "--store", store, "--endpoint", url, "--start", second.Format(time.RFC3339)); code != 0 {
		t.Fatalf("the replay from the export's second: exit %d\n%s%s", code, out, stderr)
	}
}

// historyExport runs w and writes an export of its table taken after the
// k-th change (or the first change after it at a later time), in two data
// files, into a directory: it returns the history, the number of changes
// the export holds, its time and its location.
func historyExport(t *testing.T, w sim.Workload, k int) (*sim.History, int, time.Time, string) {
	t.Helper()
	h, err := w.Run()
	if err != nil {
		t.Fatal(err)
	}
	for !h.Records[k].Time.After(h.Records[k-1].Time) {
		k++
	}
	at := h.Records[k-1].Time
	full, _, _ := exportgen.FromHistory(h, k)
	root := t.TempDir()
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(root).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(at, w.Seed), Time: at, Files: 2}, slices.Values(full))
	if err != nil {
		t.Fatal(err)
	}
	return h, k, at, filepath.Join(root, filepath.FromSlash(res.Dir))
}

// TestHandoffLine: the guard's estimate as `backfill` prints it while it
// runs: before its rate is known, the time left until the stream trims
// the export's second (or since it did); then the estimated finish, and
// how long before or after that trimming it falls.
func TestHandoffLine(t *testing.T) {
	h := &backfill.Handoff{Stream: "kinesis://changes", Retention: 24 * time.Hour}
	deadline := time.Date(2026, 12, 5, 10, 0, 2, 0, time.UTC)
	for _, tt := range []struct {
		e    backfill.Estimate
		want string
	}{
		{backfill.Estimate{Items: 3000, Deadline: deadline, Headroom: 22 * time.Hour},
			"hand-off: kinesis://changes trims the export's second about 2026-12-05T10:00:02Z, in 22h0m0s"},
		{backfill.Estimate{Items: 3000, Deadline: deadline, Headroom: -90 * time.Minute},
			"hand-off: kinesis://changes trimmed the export's second about 2026-12-05T10:00:02Z, 1h30m0s ago"},
		{backfill.Estimate{Items: 3000, Done: 300, Rate: 2964.4, Finish: deadline.Add(-3 * time.Hour), Deadline: deadline, Headroom: 3 * time.Hour},
			"hand-off: at 2964 items/s, 300 of 3000 items read, the backfill would finish about 2026-12-05T07:00:02Z, 3h0m0s before kinesis://changes trims the export's second about 2026-12-05T10:00:02Z"},
		{backfill.Estimate{Items: 3000, Done: 300, Rate: 0.5, Finish: deadline.Add(time.Hour), Deadline: deadline, Headroom: -time.Hour},
			"hand-off: at 0 items/s, 300 of 3000 items read, the backfill would finish about 2026-12-05T11:00:02Z, 1h0m0s after kinesis://changes trims the export's second about 2026-12-05T10:00:02Z"},
	} {
		if got := handoffLine(h, tt.e); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

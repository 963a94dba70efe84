package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/kinesisread"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// maxBackfillerBytes is the backfiller's ceiling, above the other
// functions' maxBinaryBytes: it is the one function that links the S3
// and DynamoDB clients, the export reader and the spec loader together
// (19.4 MiB), and it runs for minutes per invocation, once per data file,
// where a larger binary's few milliseconds of cold start do not count.
const maxBackfillerBytes = 22 << 20

// backfillExport writes a small export to a new bucket of the test server
// — a simulated table (600 changes over the seed domains) exported after
// its 450th change, in three data files and an empty one, and an
// incremental export of the rest on top — and creates an aggregate table
// there. It returns the exports' locations, the table and the table's
// final items. (moto's transactions slow down as a table grows: the
// fixture export would take minutes.)
func backfillExport(ctx context.Context, t *testing.T, client *s3.Client, ddb *dynamodb.Client) (full, inc, table string, final []pipeline.Item) {
	t.Helper()
	h, err := sim.Workload{Seed: 11, Changes: 600}.Run()
	if err != nil {
		t.Fatal(err)
	}
	items, changes, final := exportgen.FromHistory(h, 450)
	bucket := awstest.CreateBucket(ctx, t, client, "rie")
	st := objstore.NewS3(client, bucket, "exports/app", objstore.S3Options{})
	at := h.Records[449].Time.Add(time.Millisecond)
	fe, err := exportgen.WriteFull(ctx, st, exportgen.Export{ID: exportgen.ExportID(at, 1), Bucket: bucket, Prefix: "exports/app", Time: at, Files: 3, Empty: 1},
		slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	to := h.Records[len(h.Records)-1].Time.Add(time.Second)
	ie, err := exportgen.WriteIncremental(ctx, st, exportgen.Export{ID: exportgen.ExportID(to, 2), Bucket: bucket, Prefix: "exports/app", From: at.Add(-time.Second), Time: to, Files: 2}, changes)
	if err != nil {
		t.Fatal(err)
	}
	table = awstest.UniqueName(t, "rie")
	if err := dynamostore.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	awstest.DeleteTableAtEnd(t, ddb, table)
	return "s3://" + bucket + "/exports/app/" + fe.Dir, "s3://" + bucket + "/exports/app/" + ie.Dir, table, final
}

// checkBackfilled fails the test unless the aggregate table holds what a
// recomputation of the seed projections from the table's final items gives.
func checkBackfilled(ctx context.Context, t *testing.T, ddb *dynamodb.Client, table string, final []pipeline.Item) {
	t.Helper()
	want, err := projections.Recompute(final, "", seed.All()...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := projections.ReadView(ctx, dynamostore.New(ddb, table))
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Aggregates) == 0 {
		t.Fatal("the recomputation holds no aggregate: the test checks nothing")
	}
	if d := projections.Diff(got, want); len(d) > 0 {
		if len(d) > 20 {
			d = append(d[:20], "...")
		}
		t.Errorf("the aggregate table differs from the recomputation from the final items in %d places:\n%s", len(d), strings.Join(d, "\n"))
	}
}

// TestRuntimeEmulatorBackfiller: the backfiller runs the steps the
// Backfill state machine runs — plan (five files: four data files and the
// incremental export's), a file step per file (the first one twice: the
// second is passed over), plan again (none pending), finish — on an
// export in S3, into an aggregate table in DynamoDB, each
// invocation a cold start. A finish before the files are done fails with
// the error type the state machine sees, FilesPending. The table then
// equals the recomputation from the final items. Before them, a plan
// told the table's DynamoDB stream (REPLAY_FROM) refuses the days-old
// export with the error type HandoffError.
func TestRuntimeEmulatorBackfiller(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	full, inc, table, final := backfillExport(ctx, t, awstest.S3(t), ddb)
	bootstrap := buildBootstrap(t, "backfiller", runtime.GOARCH)
	env := map[string]string{
		"AGGREGATE_TABLE":          table,
		"EXPORT_LOCATION":          full,
		"BATCH_SIZE":               "100",
		"AWS_ENDPOINT_URL":         motoURL,
		"AWS_LAMBDA_FUNCTION_NAME": "backfiller",
	}
	job := map[string]any{"incrementals": []string{inc}}
	var inits []time.Duration
	invoke := func(action string, extra map[string]any) string {
		t.Helper()
		ev := map[string]any{"action": action}
		for _, m := range []map[string]any{job, extra} {
			for k, v := range m {
				ev[k] = v
			}
		}
		got, d := coldStart(t, rie, bootstrap, env, mustJSON(t, ev))
		inits = append(inits, d)
		return got[0]
	}
	step := func(action string, extra map[string]any) (resp struct {
		backfiller.Response
		Error string `json:"errorMessage"`
	}) {
		t.Helper()
		body := invoke(action, extra)
		if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Error != "" {
			t.Fatalf("%s: %s", action, body)
		}
		return resp
	}

	// With the table's DynamoDB stream to catch up from (REPLAY_FROM, as
	// the template sets it) the days-old export is refused at once, with
	// the error type the state machine matches, and nothing written.
	plain := env
	env = maps.Clone(plain)
	env["REPLAY_FROM"] = "streams://arn:aws:dynamodb:" + awstest.Region + ":123456789012:table/app/stream/2026-11-01T00:00:00.000"
	var refused struct{ ErrorType, ErrorMessage string }
	if body := invoke("plan", nil); json.Unmarshal([]byte(body), &refused) != nil || refused.ErrorType != "HandoffError" ||
		!strings.Contains(refused.ErrorMessage, "keeps its records 24h0m0s") {
		t.Errorf("plan with a DynamoDB stream to catch up from: %s, want a HandoffError", body)
	}
	if m, _, err := backfill.ReadMarker(ctx, dynamostore.New(ddb, table)); m != nil || err != nil {
		t.Errorf("a refused plan wrote the backfill marker: %+v, %v", m, err)
	}
	env = plain

	plan := step("plan", nil)
	if plan.Plan == nil || plan.Plan.Total != 5 || plan.Plan.Pending != 5 || len(plan.Plan.Files) != 5 || plan.Job == "" {
		t.Fatalf("plan: %+v", plan.Plan)
	}
	var early struct{ ErrorType, ErrorMessage string }
	if body := invoke("finish", nil); json.Unmarshal([]byte(body), &early) != nil || early.ErrorType != "FilesPending" ||
		!strings.Contains(early.ErrorMessage, "5 data files are not done") {
		t.Errorf("finish before the files: %s, want a FilesPending error naming them", body)
	}
	for i, f := range append([]string{plan.Plan.Files[0]}, plan.Plan.Files...) {
		r := step("file", map[string]any{"dataFileS3Key": f})
		if r.File != f || r.Job != plan.Job || r.Failed != 0 || r.Done != (i == 1) {
			t.Errorf("file step %d (%s): %+v", i+1, f, r.Response)
		}
	}
	again := step("plan", map[string]any{"pendingBefore": 5})
	if again.Plan == nil || again.Plan.Pending != 0 || len(again.Plan.Files) != 0 {
		t.Errorf("plan after the files: %+v", again.Plan)
	}
	fin := step("finish", nil)
	if !fin.Complete || fin.Files != 5 || fin.Job != plan.Job {
		t.Errorf("finish: %+v", fin.Response)
	}
	checkBackfilled(ctx, t, ddb, table, final)

	arm := buildBootstrap(t, "backfiller", "arm64")
	figures(t, "backfiller", inits, arm)
}

// TestRuntimeEmulatorBackfillerRoleCoversCalls runs the backfiller's
// steps in process against moto — plan, a data file, the same file again,
// the incremental exports' items, and a finish that finds files not done —
// with the hand-off guard on the stack's Kinesis stream (REPLAY_FROM, its
// retention read at the plan and the file steps), recording every
// DynamoDB and Kinesis call and S3 request on the wire, and checks that
// each is an action BackfillerRole allows (moto enforces no IAM).
func TestRuntimeEmulatorBackfillerRoleCoversCalls(t *testing.T) {
	tp := loadTemplate(t)
	awstest.MotoURL(t)
	ctx := context.Background()
	wire := &awstest.Wire{}
	cfg := awstest.Config(t)
	cfg.HTTPClient = wire
	ddb := dynamodb.NewFromConfig(cfg)
	s3log := &awstest.S3Log{}
	client := awstest.S3(t, func(o *s3.Options) { o.HTTPClient = &http.Client{Transport: s3log} })
	full, inc, table, _ := backfillExport(ctx, t, client, ddb)
	wire.Reset()
	s3log.Take()

	// The export is days old: the stream keeps a year here.
	stream := awstest.CreateStream(ctx, t, awstest.Kinesis(t), "handoff", 1)
	if _, err := awstest.Kinesis(t).IncreaseStreamRetentionPeriod(ctx, &kinesis.IncreaseStreamRetentionPeriodInput{StreamName: aws.String(stream), RetentionPeriodHours: aws.Int32(8760)}); err != nil {
		t.Fatal(err)
	}
	kwire := &awstest.Wire{}
	kcfg := awstest.Config(t)
	kcfg.HTTPClient = kwire
	kc := kinesis.NewFromConfig(kcfg)
	bcfg := backfiller.Config{Table: table, BatchSize: 100, ReplayFrom: "kinesis://" + stream, CheckEvery: time.Nanosecond,
		Retention: func(ctx context.Context) (time.Duration, error) { return kinesisread.Retention(ctx, kc, stream) }}
	h, err := backfiller.New(bcfg, seed.Environment(), client, dynamostore.New(ddb, table),
		slog.New(slog.NewTextHandler(io.Discard, nil)))

	if err != nil {
		t.Fatal(err)
	}
	job := backfiller.Event{Export: full, Incrementals: []string{inc}}
	run := func(action, file string) (backfiller.Response, error) {
		ev := job
		ev.Action, ev.DataFileS3Key = action, file
		return h.Handle(ctx, ev)
	}
	plan, err := run("plan", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{plan.Plan.Files[0], plan.Plan.Files[0], backfill.OverlayFile} {
		if _, err := run("file", f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run("finish", ""); !errors.As(err, new(*backfiller.FilesPending)) {
		t.Fatalf("finish: %v, want files pending", err)
	}

	var used []string
	for _, c := range wire.Recorded() {
		used = append(used, iamActions(t, c)...)
	}
	for _, c := range kwire.Recorded() {
		used = append(used, "kinesis:"+c.Op)
	}
	for _, r := range s3log.Take() {
		used = append(used, s3Action(r))
	}
	checkRoleCovers(t, tp, "BackfillerRole", "backfiller", used, []string{"dynamodb:BatchGetItem", "dynamodb:UpdateItem", "s3:GetObject", "kinesis:DescribeStreamSummary"})
}

// s3Action is the IAM action an S3 request needs, for the requests a
// reader sends: GetObject (GET or HEAD of a key) and ListBucket (a
// listing of the bucket), and DeleteObject (DELETE of a key).
func s3Action(r awstest.S3Request) string {
	switch {
	case r.Op == "DELETE":
		return "s3:DeleteObject"
	case r.Op != "GET" && r.Op != "HEAD":
		return "s3:" + r.Op
	case strings.Count(strings.Trim(r.Path, "/"), "/") == 0: // path style: /bucket
		return "s3:ListBucket"
	default:
		return "s3:GetObject"
	}
}

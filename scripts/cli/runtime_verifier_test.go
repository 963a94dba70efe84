package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/functions/verifier"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// backfillInProcess backfills table from full and inc with the
// backfiller's steps, in process: the table a Verify execution then
// checks.
func backfillInProcess(ctx context.Context, t *testing.T, client *s3.Client, ddb *dynamodb.Client, full, inc, table string) {
	t.Helper()
	h, err := backfiller.New(backfiller.Config{Table: table, BatchSize: 100}, seed.Environment(), client, dynamostore.New(ddb, table),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	job := backfiller.Event{Export: full, Incrementals: []string{inc}}
	run := func(action, file string) backfiller.Response {
		t.Helper()
		ev := job
		ev.Action, ev.DataFileS3Key = action, file
		r, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, f := range run("plan", "").Plan.Files {
		run("file", f)
	}
	if !run("finish", "").Complete {
		t.Fatal("the backfill did not complete")
	}
}

// verifyExecution runs the Verify state machine's steps through invoke,
// in its order — plan; a scan step per segment, a file step per data
// file, a join and a compare step per part (the first of each map twice:
// a child run again gives the same); finish twice — and returns the
// finish's answer.
func verifyExecution(t *testing.T, run string, invoke func(ev map[string]any) []byte) verifier.Response {
	t.Helper()
	step := func(ev map[string]any) verifier.Response {
		t.Helper()
		body := invoke(ev)
		var resp struct {
			verifier.Response
			Error string `json:"errorMessage"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || resp.Error != "" {
			t.Fatalf("%v: %s", ev, body)
		}
		return resp.Response
	}
	plan := step(map[string]any{"action": "plan", "run": run})
	if plan.Job == "" || plan.Work == nil || plan.Segments < 2 || plan.Parts < 2 || plan.Files == 0 {
		t.Fatalf("plan: %+v", plan)
	}
	// What the maps read their items from, as their ItemReaders do.
	items := func(key string) []map[string]any {
		t.Helper()
		out, err := awstest.S3(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: &plan.Work.Bucket, Key: &key})
		if err != nil {
			t.Fatalf("the map's items %s: %v", key, err)
		}
		defer func() { _ = out.Body.Close() }() // read whole below
		var list []map[string]any
		if err := json.NewDecoder(out.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		return list
	}
	fin := map[string]any{"action": "finish", "job": plan.Job}
	var early struct{ ErrorType, ErrorMessage string }
	if json.Unmarshal(invoke(fin), &early) != nil || !strings.Contains(early.ErrorMessage, "is not done") {
		t.Errorf("finish before the steps: %+v, want an error naming a step not done", early)
	}
	for _, m := range []struct{ action, items string }{{"scan", plan.Work.Segments}, {"file", plan.Work.Files}, {"join", plan.Work.Parts}, {"compare", plan.Work.Parts}} {
		list := items(m.items)
		var first verifier.Response
		for i, it := range append(list[:1:1], list...) {
			ev := maps.Clone(it)
			ev["action"], ev["job"] = m.action, plan.Job
			r := step(ev)
			if r.Job != plan.Job || r.Step == "" {
				t.Errorf("%s step %v: %+v", m.action, it, r)
			}
			if i == 0 {
				first = r
			} else if i == 1 && r != first {
				t.Errorf("%s step %v run twice: %+v, then %+v", m.action, it, first, r)
			}
		}
	}
	res := step(fin)
	if again := step(fin); again.Report != res.Report || again.Verdict != res.Verdict {
		t.Errorf("finish run again: %+v, first %+v", again, res)
	}
	return res
}

// TestRuntimeEmulatorVerifier: the verifier runs the steps of the Verify
// state machine under the emulator, against S3 and DynamoDB on the test
// server: over a table backfilled from an export (and its incremental
// export) it answers AGREE in `tributary verify`'s words; over the table
// with a delta no ledger entry accounts for, MISMATCH naming the
// aggregate; over the table with a backfill's partial not folded, NOT
// READY naming it. Every step's first child runs twice and gives the same.
func TestRuntimeEmulatorVerifier(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	client := awstest.S3(t)
	full, inc, table, _ := backfillExport(ctx, t, client, ddb)
	backfillInProcess(ctx, t, client, ddb, full, inc, table)
	work := awstest.CreateBucket(ctx, t, client, "work")
	bootstrap := buildBootstrap(t, "verifier", runtime.GOARCH)
	env := map[string]string{
		"AGGREGATE_TABLE":          table,
		"WORK_LOCATION":            "s3://" + work + "/verify",
		"SCAN_SEGMENTS":            "3",
		"PARTS":                    "4",
		"AWS_ENDPOINT_URL":         motoURL,
		"AWS_LAMBDA_FUNCTION_NAME": "verifier",
	}
	em := startEmulator(t, rie, bootstrap, env)
	job := map[string]any{"export": full, "incrementals": []string{inc}}
	invoke := func(ev map[string]any) []byte {
		maps.Copy(ev, job)
		return []byte(em.invoke(t, mustJSON(t, ev)))
	}

	res := verifyExecution(t, "agree", invoke)
	if res.Verdict != "AGREE" || !res.Agree || res.Items == 0 || res.Aggregates == 0 ||
		!strings.HasSuffix(res.Report, "AGREE: every aggregate and row in the store equals the recomputation from the export, with the 0 items changed since it as their state in the store says\n") {
		t.Fatalf("a backfilled table: %+v\n%s", res, res.Report)
	}

	// A delta no ledger entry accounts for.
	st := dynamostore.New(ddb, table)
	view, err := projections.ReadView(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	k := slices.SortedFunc(maps.Keys(view.Aggregates), func(a, b projections.AggregateKey) int {
		return strings.Compare(a.Projection+a.Key, b.Projection+b.Key)
	})[0]
	name := slices.Sorted(maps.Keys(view.Aggregates[k]))[0]
	ref := driver.AggregateRef{Projection: k.Projection, Key: k.Key}
	if err := st.Commit(ctx, &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: map[string]decimal.Decimal{name: decimal.FromInt(1)}}}}); err != nil {
		t.Fatal(err)
	}
	res = verifyExecution(t, "tampered", invoke)
	if res.Verdict != "MISMATCH" || res.Agree || res.Differences != 1 ||
		!strings.Contains(res.Report, "\n  "+k.Projection+" "+k.Key+" "+name+": got ") ||
		!strings.HasSuffix(res.Report, "MISMATCH: 1 differences between the store and the recomputation from the export (the items changed since it taken as their state in the store says)\n") {
		t.Fatalf("a table with a delta too many: %+v\n%s", res, res.Report)
	}
	if err := st.Commit(ctx, &driver.Tx{Adds: []driver.Add{{Ref: ref, Values: map[string]decimal.Decimal{name: decimal.FromInt(-1)}}}}); err != nil {
		t.Fatal(err)
	}

	// A backfill's partial, not folded.
	e, err := engine.Open(ctx, st, seed.Set(), engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	partial, err := e.OpenPartial(ctx, engine.PartialPrefix+"test/unfolded")
	if err != nil {
		t.Fatal(err)
	}
	// Two orders of one day: a transaction's items that add to one
	// aggregate, which the partial defers.
	var recs []sim.Record
	for i, id := range []string{"zy", "zz"} {
		order := pipeline.Item{"PK": sv("USER#" + id), "SK": sv("ORDER#2026-12-01#" + id), "EntityType": sv("Order"),
			"status": sv("PAID"), "total": nv("10"), "orderDate": sv("2026-12-01"), "version": nv("1")}
		recs = append(recs, sim.Record{Kind: pipeline.Insert, Keys: pipeline.Item{"PK": order["PK"], "SK": order["SK"]}, New: order,
			Seq: "90000000000000000000" + strconv.Itoa(i+1), Time: time.Now().Truncate(time.Second), EventID: "0123456789abcdef0123456789abcde" + strconv.Itoa(i)})
	}
	changes, err := pipeline.DecodeStreamsEvent(sim.StreamsEvent(recs), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.HandleBatchInto(ctx, changes, partial); err != nil {
		t.Fatal(err)
	}
	if partial.Pending() == 0 {
		t.Fatal("nothing was deferred: the test proves nothing")
	}
	res = verifyExecution(t, "unfolded", invoke)
	if res.Verdict != "NOT READY" || res.Agree ||
		!strings.Contains(res.Report, "NOT READY: a backfill has 1 data files whose deferred sums are not folded yet (e.g. "+engine.PartialPrefix+"test/unfolded): run it to the end (the Backfill state machine again, or `tributary backfill`) and verify again\n") {
		t.Fatalf("a table with a partial not folded: %+v\n%s", res, res.Report)
	}

	// Cold starts, for the figures; an unknown action is refused with the
	// error type the state machine does not retry.
	var inits []time.Duration
	for range 3 {
		got, d := coldStart(t, rie, bootstrap, env, mustJSON(t, map[string]any{"action": "nonsense", "export": full}))
		inits = append(inits, d)
		var refused struct{ ErrorType string }
		if json.Unmarshal([]byte(got[0]), &refused) != nil || refused.ErrorType != "Refused" {
			t.Errorf("an unknown action: %s, want the error type Refused", got[0])
		}
	}
	figures(t, "verifier", inits, buildBootstrap(t, "verifier", "arm64"))
}

// TestRuntimeEmulatorVerifierRoleCoversCalls runs a Verify execution's
// steps in process against moto, recording every DynamoDB call and S3
// request on the wire, and checks that each is an action VerifierRole
// allows (moto enforces no IAM).
func TestRuntimeEmulatorVerifierRoleCoversCalls(t *testing.T) {
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
	backfillInProcess(ctx, t, client, ddb, full, inc, table)
	work := awstest.CreateBucket(ctx, t, client, "work")
	wire.Reset()
	s3log.Take()

	store := dynamostore.New(ddb, table)
	// The plan reads the table's size (as Main does) and chooses 16
	// segments for this small table.
	size := func(ctx context.Context) (int64, error) {
		out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
		if err != nil || out.Table.TableSizeBytes == nil {
			return 0, err
		}
		return *out.Table.TableSizeBytes, nil
	}
	h, err := verifier.New(verifier.Config{Table: table, Work: "s3://" + work + "/verify", Parts: 2, MaxPrint: 100, TableSize: size},
		seed.Environment(), client, store, func(i, n int) (driver.Reader, error) { return store.Segment(i, n) },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	res := verifyExecution(t, "role", func(ev map[string]any) []byte {
		b := mustJSON(t, ev)
		var e verifier.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		e.Export, e.Incrementals = full, []string{inc}
		r, err := h.Handle(ctx, e)
		if err != nil {
			return mustJSON(t, map[string]string{"errorMessage": err.Error()})
		}
		return mustJSON(t, r)
	})
	if res.Verdict != "AGREE" {
		t.Fatalf("verdict %s:\n%s", res.Verdict, res.Report)
	}
	var used []string
	for _, c := range wire.Recorded() {
		used = append(used, iamActions(t, c)...)
	}
	for _, r := range s3log.Take() {
		used = append(used, s3Action(r))
	}
	checkRoleCovers(t, tp, "VerifierRole", "verifier", used, []string{"dynamodb:Scan", "dynamodb:BatchGetItem", "dynamodb:DescribeTable", "s3:GetObject", "s3:PutObject"})
}

package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/functions/remodeler"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver/target"
	"github.com/tributary/tributary/projections/spec"
)

// maxRemodelerBytes is the remodeler's ceiling. It links what the
// kinesis-projector links but the S3 client (the spec loader, whose
// expression engine keeps every exported method of the SDK clients it
// reaches, the DynamoDB client, the decoders and the engine) and the
// remodel's transforms: 15.1 MiB measured (15,794,338 bytes), just over
// the 15 MiB of the functions that link no spec loader. It is a stream
// consumer like the projectors, whose ceiling is 20 MiB with the S3
// client; 17 MiB leaves it room for a dependency's growth and no more.
const maxRemodelerBytes = 17 << 20

// remodelLive is a simulated table on the test server: an export in S3
// taken part-way through its history, and its Kinesis stream's tail,
// from 100 changes before the export, as Lambda events of at most 100
// records.
type remodelLive struct {
	h      *sim.History
	export string
	events [][]byte
}

func newRemodelLive(ctx context.Context, t *testing.T) *remodelLive {
	t.Helper()
	h, err := sim.Workload{Seed: 83, Changes: 700, Skew: 1.0}.Run()
	if err != nil {
		t.Fatal(err)
	}
	client := awstest.S3(t)
	bucket := awstest.CreateBucket(ctx, t, client, "remodel")
	k, res, err := exportgen.PartWay(ctx, objstore.NewS3(client, bucket, "exports/app", objstore.S3Options{}), h, 0.6, 83, bucket, "exports/app", 2)
	if err != nil {
		t.Fatal(err)
	}
	l := &remodelLive{h: h, export: "s3://" + bucket + "/exports/app/" + res.Dir}
	for _, shard := range sim.KinesisShards(sim.ToKinesis(h.Records[k-100:], 0.05, 8, sim.NewKinesisRand(83))) {
		for i := 0; i < len(shard); i += 100 {
			l.events = append(l.events, sim.Payload(shard[i:min(len(shard), i+100)]))
		}
	}
	return l
}

// TestRuntimeEmulatorRemodeler: the road in AWS, against the test
// server. A target table of a new key design (a spec's transform: orders
// keyed by status, players by season, the rest copied) is backfilled
// from an export taken part-way with `tributary remodel backfill
// --table`; then the remodeler, built as deployed and run under the
// Lambda runtime emulator with the spec as its PROJECTIONS_FILE, takes
// the Kinesis stream's tail from before the export, every batch twice
// (the first time on one warm instance, again across cold starts). Every
// response is an empty failure list, the target table then holds exactly
// the transform of the table's final items, and `remodel verify --table`
// agrees.
func TestRuntimeEmulatorRemodeler(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	exportAWSEnv(t)
	t.Setenv("AWS_ENDPOINT_URL", motoURL)
	l := newRemodelLive(ctx, t)
	ddb := awstest.DynamoDB(t)
	targetTable := awstest.UniqueName(t, "target")
	awstest.DeleteTableAtEnd(t, ddb, targetTable)
	awstest.DeleteTableAtEnd(t, ddb, dynamostore.LedgerTable(targetTable))
	key, _ := target.NewKey("PK", "SK")
	if err := dynamostore.CreateTargetTables(ctx, ddb, targetTable, dynamostore.LedgerTable(targetTable), key); err != nil {
		t.Fatal(err)
	}
	specFile, err := filepath.Abs(newDesignSpec)
	if err != nil {
		t.Fatal(err)
	}
	// One data file at a time: moto's transactions are not isolated from
	// concurrent ones (dynamostore's tests, serialAPI).
	code, out, stderr := runCLI(t, "remodel", "backfill", "--export", l.export, "--spec", specFile, "--table", targetTable, "--endpoint", motoURL, "--workers", "1")
	if code != 0 || !strings.Contains(out, "status:   complete\n") {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}

	bootstrap := buildBootstrap(t, "remodeler", runtime.GOARCH)
	env := map[string]string{
		"TARGET_TABLE":             targetTable,
		"TRANSFORM":                "new-design",
		"PROJECTIONS_FILE":         specFile,
		"AWS_ENDPOINT_URL":         motoURL,
		"AWS_LAMBDA_FUNCTION_NAME": "remodeler",
	}
	want := `{"batchItemFailures":[]}`
	got, first := coldStart(t, rie, bootstrap, env, l.events...)
	inits := []time.Duration{first}
	for i, resp := range got {
		if resp != want {
			t.Fatalf("event %d of %d: %s", i+1, len(got), resp)
		}
	}
	// Every batch again, redelivered, across cold starts.
	half := len(l.events) / 2
	for _, events := range [][][]byte{l.events[:half], l.events[half:]} {
		got, d := coldStart(t, rie, bootstrap, env, events...)
		inits = append(inits, d)
		for i, resp := range got {
			if resp != want {
				t.Fatalf("redelivered event %d: %s", i+1, resp)
			}
		}
	}

	sp, err := spec.LoadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "remodel", "items", "--table", targetTable, "--endpoint", motoURL)
	if code != 0 {
		t.Fatalf("items: exit %d: %s", code, stderr)
	}
	items := sortedLines(out)
	if want := itemLines(t, sp.Transforms()[0], l.h.Table.Items()); !slices.Equal(items, want) {
		t.Fatalf("the target table's items (%d) are not the transform of the final items (%d):\n%s", len(items), len(want), lineDiff(items, want))
	}
	at := l.h.Workload.Start.Add(-30 * 24 * time.Hour).Format(time.RFC3339)
	code, out, stderr = runCLI(t, "remodel", "verify", "--export", l.export, "--spec", specFile, "--table", targetTable, "--endpoint", motoURL, "--at", at)
	if code != 0 || !strings.Contains(out, "\nAGREE:") || !strings.Contains(out, "source items changed since the export") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("%d events of the tail, twice; the target holds %d items", len(l.events), len(items))
	figures(t, "remodeler", inits, buildBootstrap(t, "remodeler", "arm64"))
}

// TestRuntimeEmulatorRemodelerRoleCoversCalls runs the remodeler's init
// and its fixture event in process against moto, recording every
// DynamoDB call, and checks that each action on each table is one that
// RemodelerRole allows on that table (moto enforces no IAM).
func TestRuntimeEmulatorRemodelerRoleCoversCalls(t *testing.T) {
	tp := loadTemplate(t)
	awstest.MotoURL(t)
	ctx := context.Background()
	wire := &awstest.Wire{}
	cfg := awstest.Config(t)
	cfg.HTTPClient = wire
	client := dynamodb.NewFromConfig(cfg)
	targetTable := awstest.UniqueName(t, "roles")
	ledger := dynamostore.LedgerTable(targetTable)
	key, _ := target.NewKey("PK", "SK")
	if err := dynamostore.CreateTargetTables(ctx, client, targetTable, ledger, key); err != nil {
		t.Fatal(err)
	}
	awstest.DeleteTableAtEnd(t, client, targetTable)
	awstest.DeleteTableAtEnd(t, client, ledger)
	wire.Reset() // what the function does from here on

	// What Main does at init, then the event.
	rcfg := remodeler.Config{Table: targetTable, LedgerTable: ledger, Transform: "comments-table", Source: pipeline.SourceKinesis}
	tableKey, err := dynamostore.TargetKeyOf(ctx, client, targetTable)
	if err != nil {
		t.Fatal(err)
	}
	r, err := remodeler.NewRemodel(rcfg, seed.Environment(), tableKey)
	if err != nil {
		t.Fatal(err)
	}
	h, err := remodeler.New(ctx, rcfg, r, dynamostore.NewTarget(client, targetTable, ledger, r.Name(), r.Key()), slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	event, err := os.ReadFile(filepath.Join(repoRoot, "functions/remodeler/testdata/event.json"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	allowed := map[string][]string{targetTable: sidActions(t, tp, "RemodelerRole", "TargetTable"), ledger: sidActions(t, tp, "RemodelerRole", "LedgerTable")}
	seen := map[string]bool{}
	for _, c := range wire.Recorded() {
		for _, ta := range tableActionsOf(t, c) {
			seen[ta[0]] = true
			if !slices.Contains(allowed[ta[0]], ta[1]) {
				t.Errorf("the remodeler calls %s (%s) on %s, which RemodelerRole does not allow there (allowed: %v)", c.Op, ta[1], ta[0], allowed[ta[0]])
			}
		}
	}
	if !seen[targetTable] || !seen[ledger] {
		t.Fatalf("calls recorded on %v: want both tables", seen)
	}
}

// tableActionsOf returns the (table, IAM action) pairs of a DynamoDB call:
// each item of a transaction is its own.
func tableActionsOf(t *testing.T, c awstest.Call) [][2]string {
	t.Helper()
	var req struct {
		TableName     string
		RequestItems  map[string]json.RawMessage
		TransactItems []map[string]struct{ TableName string }
	}
	if err := json.Unmarshal(c.Req, &req); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	switch {
	case c.Op == "TransactWriteItems":
		parts := map[string]string{"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem", "ConditionCheck": "dynamodb:ConditionCheckItem"}
		for _, it := range req.TransactItems {
			for k, v := range it {
				out = append(out, [2]string{v.TableName, parts[k]})
			}
		}
	case len(req.RequestItems) > 0:
		for table := range req.RequestItems {
			out = append(out, [2]string{table, "dynamodb:" + c.Op})
		}
	default:
		out = append(out, [2]string{req.TableName, "dynamodb:" + c.Op})
	}
	return out
}

// sidActions returns the actions of a role's Allow statement sid.
func sidActions(t *testing.T, tp tmpl, role, sid string) []string {
	t.Helper()
	r := tp.resources()[role]
	if r == nil {
		t.Fatalf("no role %s", role)
	}
	policies, _ := props(r)["Policies"].([]any)
	for _, p := range policies {
		doc, _ := p.(obj)["PolicyDocument"].(obj)
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			for _, b := range branches(s) {
				if st := b.(obj); st["Sid"] == sid && st["Effect"] == "Allow" {
					return strs(st["Action"])
				}
			}
		}
	}
	t.Fatalf("%s has no Allow statement %s", role, sid)
	return nil
}

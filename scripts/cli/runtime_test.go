package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/projections"
)

// The Lambda functions as deployed — each functions/cmd/<name> main built like
// `make build` and `sam build` build it — run under the Lambda runtime
// interface emulator (github.com/aws/aws-lambda-runtime-interface-emulator,
// built from the Go module proxy by .ci/template-check.sh; no Docker), with
// their AWS calls going to the moto server the harness starts. Each must
// answer its fixture events as expected (a partial batch response from the
// stream consumers, the state machine's JSON from the repartitioner); the
// emulator's INIT REPORT line gives the cold start, and the linux/arm64
// bootstrap's size is what Lambda loads.
//
// Needs TRIBUTARY_RIE (the emulator binary) and TRIBUTARY_MOTO_URL:
//
//	bash .ci/servers.sh run -- env TRIBUTARY_RIE=.tools/bin/aws-lambda-rie \
//	    go test -run TestRuntimeEmulator -v ./scripts/cli/

const (
	envRIE = "TRIBUTARY_RIE"
	// Targets from the deployment targets: a function's cold start (the
	// emulator's INIT REPORT) and its linux/arm64 bootstrap.
	initTarget     = 50 * time.Millisecond
	maxBinaryBytes = 15 << 20
	// maxProjectorBytes is the two projectors' ceiling: they link the spec
	// loader (expr calls methods by reflection, so the linker keeps every
	// exported method of the SDK clients they reach) and, for a shadow's
	// failed batches, the S3 client: 19.4 MiB, of which the S3 client is
	// about 5 MB (docs/deploy.md, "Under the Lambda runtime").
	maxProjectorBytes = 20 << 20
	// What the test fails on: the target, with room for a loaded CI machine.
	initLimit  = 10 * initTarget
	coldStarts = 3
)

// buildBootstrap builds functions/cmd/<name> like `make build` (static, no RPC
// mode, stripped, trimmed paths) for goarch and returns the binary's path.
func buildBootstrap(t *testing.T, name, goarch string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), goarch, "bootstrap")
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w",
		"-o", out, "./functions/cmd/"+name)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s for %s: %v\n%s", name, goarch, err, b)
	}
	return out
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// emulator is one running aws-lambda-rie with one function.
type emulator struct {
	url  string
	out  *syncBuffer
	stop func() // stops the emulator and the function; idempotent
}

// startEmulator runs bootstrap under the emulator with env (on top of a
// clean Lambda-like environment) and stops it, and the function, when the
// test ends. The emulator takes its two ports itself, after this process has
// let them go: another process on the machine can take one in between, and
// the emulator then exits at once ("failed to listen"). Such a start is tried
// again on fresh ports, a few times; any other early exit fails the test.
func startEmulator(t *testing.T, rie, bootstrap string, env map[string]string) *emulator {
	t.Helper()
	const attempts = 5
	for i := 1; ; i++ {
		em, exited := tryEmulator(t, rie, bootstrap, env)
		if em != nil {
			return em
		}
		if i == attempts || !strings.Contains(exited, "address already in use") {
			t.Fatalf("emulator exited (start %d of %d):\n%s", i, attempts, exited)
		}
		t.Logf("emulator start %d: a port was taken before it bound it; trying fresh ports", i)
	}
}

// tryEmulator starts the emulator once. It returns the running emulator, or
// nil and the emulator's output when the emulator exited before it listened.
func tryEmulator(t *testing.T, rie, bootstrap string, env map[string]string) (*emulator, string) {
	t.Helper()
	addrs := freeAddrs(t, 2)
	addr, apiAddr := addrs[0], addrs[1]
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"AWS_REGION=" + awstest.Region,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that stopping it stops the function too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", rie, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // it is killed at the end: its exit status says nothing
		close(done)
	}()
	em := &emulator{url: "http://" + addr + "/2015-03-31/functions/function/invocations", out: out}
	em.stop = sync.OnceFunc(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // a group already gone is stopped
		<-done
		if t.Failed() {
			t.Logf("emulator output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close() // a probe: it connected
			// The runtime API binds its port in a goroutine of its own and
			// panics when it cannot: give that a moment to show.
			select {
			case <-done:
				em.stop()
				return nil, out.String()
			case <-time.After(100 * time.Millisecond):
			}
			break
		}
		select {
		case <-done:
			em.stop() // the process group may hold the function still
			return nil, out.String()
		default:
		}
		if time.Now().After(deadline) {
			em.stop()
			t.Fatalf("emulator not listening on %s after 15 s:\n%s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(em.stop)
	return em, ""
}

// freeAddrs returns n distinct loopback addresses whose ports were free a
// moment ago: all are held open until each is chosen, so no two are the same.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }() // released for the emulator when this returns
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// invoke posts one event and returns the function's response.
func (e *emulator) invoke(t *testing.T, event []byte) string {
	t.Helper()
	status, body := e.invokeRaw(t, event)
	if status != http.StatusOK {
		t.Fatalf("invoke: status %d: %s", status, body)
	}
	return body
}

// invokeRaw posts one event and returns the emulator's answer, whatever its
// status (0, and the error, when there is no answer): for a function whose
// init fails.
func (e *emulator) invokeRaw(t *testing.T, event []byte) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(event))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = res.Body.Close() }() // read to the end below
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, fmt.Sprintf("reading the answer (status %d): %v", res.StatusCode, err)
	}
	return res.StatusCode, string(b)
}

var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// initDuration is the cold start the emulator reported.
func (e *emulator) initDuration(t *testing.T) time.Duration {
	t.Helper()
	m := initReport.FindStringSubmatch(e.out.String())
	if m == nil {
		t.Fatalf("no INIT REPORT line in the emulator's output:\n%s", e.out.String())
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// coldStart runs bootstrap under a new emulator with env, invokes it with
// each event in turn, stops it, and returns the responses and the cold
// start the emulator reported.
func coldStart(t *testing.T, rie, bootstrap string, env map[string]string, events ...[]byte) ([]string, time.Duration) {
	t.Helper()
	em := startEmulator(t, rie, bootstrap, env)
	defer em.stop()
	var out []string
	for _, ev := range events {
		out = append(out, em.invoke(t, ev))
	}
	return out, em.initDuration(t)
}

// figures checks and reports a function's cold starts and binary size.
func figures(t *testing.T, name string, inits []time.Duration, arm64Bootstrap string) {
	t.Helper()
	slices.Sort(inits)
	st, err := os.Stat(arm64Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	var ms []string
	for _, d := range inits {
		ms = append(ms, fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)))
	}
	median := inits[len(inits)/2]
	t.Logf("FIGURES %s: init (INIT REPORT, %d cold starts, %s) median %.1f ms [%s]; bootstrap linux/arm64 %d bytes (%.1f MiB)",
		name, len(inits), runtime.GOOS+"/"+runtime.GOARCH, float64(median)/float64(time.Millisecond),
		strings.Join(ms, ", "), st.Size(), float64(st.Size())/(1<<20))
	if median > initTarget {
		t.Logf("%s: median init %v is above the %v target", name, median, initTarget)
	}
	if median > initLimit {
		t.Errorf("%s: median init %v, more than %v", name, median, initLimit)
	}
	limit := int64(maxBinaryBytes)
	switch {
	case name == "backfiller" || name == "verifier":
		limit = maxBackfillerBytes
	case name == "remodeler":
		limit = maxRemodelerBytes
	case name == "compactor":
		limit = maxCompactorBytes
	case strings.Contains(name, "projector"):
		limit = maxProjectorBytes
	}
	if st.Size() > limit {
		t.Errorf("%s: bootstrap is %d bytes, more than %d", name, st.Size(), limit)
	}
}

func readEvent(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func emulatorPrereqs(t *testing.T) (rie, motoURL string) {
	t.Helper()
	rie = os.Getenv(envRIE)
	if rie == "" {
		requireTools(t, "%s is unset (the aws-lambda-rie binary)", envRIE)
	}
	if _, err := os.Stat(rie); err != nil {
		requireTools(t, "%s: %v", envRIE, err)
	}
	return rie, awstest.MotoURL(t)
}

// TestRuntimeEmulatorProjector: the projector answers a batch with a poison
// record (an order whose status no projection accepts) by reporting that
// record, and, once the record is fixed, the same batch with an empty
// failure list; the aggregates are then in the table.
func TestRuntimeEmulatorProjector(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	table := awstest.UniqueName(t, "rie")
	if err := dynamostore.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}

	good := readEvent(t, "functions/projector/testdata/event.json")
	goodJSON := mustJSON(t, good)
	records := good["Records"].([]any)
	poisonSeq := records[1].(map[string]any)["dynamodb"].(map[string]any)["SequenceNumber"].(string)
	var poison map[string]any
	if err := json.Unmarshal(goodJSON, &poison); err != nil {
		t.Fatal(err)
	}
	img := poison["Records"].([]any)[1].(map[string]any)["dynamodb"].(map[string]any)["NewImage"].(map[string]any)
	img["status"] = map[string]any{"S": "MISLAID"}

	bootstrap := buildBootstrap(t, "projector", runtime.GOARCH)
	env := map[string]string{
		"AGGREGATE_TABLE":          table,
		"AWS_ENDPOINT_URL":         motoURL,
		"AWS_LAMBDA_FUNCTION_NAME": "projector",
	}
	var inits []time.Duration
	for i := range coldStarts {
		// The batch with the poison record, then again (as Lambda retries
		// it) with the record fixed; later cold starts redeliver the fixed
		// batch, which must change nothing.
		events, want := [][]byte{goodJSON}, []string{`{"batchItemFailures":[]}`}
		if i == 0 {
			events = append([][]byte{mustJSON(t, poison)}, events...)
			want = append([]string{`{"batchItemFailures":[{"itemIdentifier":"` + poisonSeq + `"}]}`}, want...)
		}
		got, d := coldStart(t, rie, bootstrap, env, events...)
		if !slices.Equal(got, want) {
			t.Errorf("cold start %d: got %v, want %v", i+1, got, want)
		}
		inits = append(inits, d)
	}
	view, err := projections.ReadView(ctx, dynamostore.New(ddb, table))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, v := range view.Aggregates {
		keys = append(keys, fmt.Sprintf("%s %s %v", k.Projection, k.Key, v))
	}
	slices.Sort(keys)
	if !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "order-totals ORDERS#PAID ") }) {
		t.Errorf("no paid-orders aggregate in the table; aggregates:\n%s", strings.Join(keys, "\n"))
	}
	figures(t, "projector", inits, buildBootstrap(t, "projector", "arm64"))
}

// TestRuntimeEmulatorArchiver: the archiver writes the fixture's TTL
// removals to S3 and answers with an empty failure list.
func TestRuntimeEmulatorArchiver(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	client := awstest.S3(t)
	bucket := awstest.UniqueName(t, "rie")
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	event := mustJSON(t, readEvent(t, "functions/archiver/testdata/event.json"))
	bootstrap := buildBootstrap(t, "archiver", runtime.GOARCH)
	env := map[string]string{
		"ARCHIVE_BUCKET":           bucket,
		"ARCHIVE_PREFIX":           "ttl",
		"AWS_ENDPOINT_URL":         motoURL,
		"AWS_LAMBDA_FUNCTION_NAME": "archiver",
	}
	var inits []time.Duration
	for i := range coldStarts {
		got, d := coldStart(t, rie, bootstrap, env, event)
		if want := `{"batchItemFailures":[]}`; got[0] != want {
			t.Errorf("cold start %d: got %s, want %s", i+1, got[0], want)
		}
		inits = append(inits, d)
	}
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("ttl/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	want := []string{
		"ttl/entity=Comment/date=2025-12-31/4421584500000000017450439091.jsonl.gz",
		"ttl/entity=Comment/date=2026-01-01/4421584500000000017450439093.jsonl.gz",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("archived objects %v, want %v (a redelivered batch overwrites, never adds)", keys, want)
	}
	figures(t, "archiver", inits, buildBootstrap(t, "archiver", "arm64"))
}

// TestRuntimeEmulatorKinesisProjector: the kinesis-projector applies its
// fixture (Kinesis records from a table's streaming destination) and
// answers with an empty failure list, on every cold start (redeliveries
// change nothing).
func TestRuntimeEmulatorKinesisProjector(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	table := awstest.UniqueName(t, "rie")
	if err := dynamostore.CreateTable(ctx, awstest.DynamoDB(t), table); err != nil {
		t.Fatal(err)
	}
	event := mustJSON(t, readEvent(t, "functions/kinesisprojector/testdata/event.json"))
	bootstrap := buildBootstrap(t, "kinesis-projector", runtime.GOARCH)
	env := map[string]string{
		"AGGREGATE_TABLE":          table,
		"AWS_ENDPOINT_URL":         motoURL,
		"AWS_LAMBDA_FUNCTION_NAME": "kinesis-projector",
	}
	var inits []time.Duration
	for i := range coldStarts {
		got, d := coldStart(t, rie, bootstrap, env, event)
		if want := `{"batchItemFailures":[]}`; got[0] != want {
			t.Errorf("cold start %d: got %s, want %s", i+1, got[0], want)
		}
		inits = append(inits, d)
	}
	figures(t, "kinesis-projector", inits, buildBootstrap(t, "kinesis-projector", "arm64"))
}

// TestRuntimeEmulatorRepartitioner: the repartitioner runs the steps a
// Distributed Map runs — plan, a file step per data file (the fixture
// event's file twice, as a retried invocation would), finish — on the
// fixture export in S3, each invocation a cold start; the responses are
// the state machine's JSON, and the output equals a local repartition of
// the same export.
func TestRuntimeEmulatorRepartitioner(t *testing.T) {
	rie, motoURL := emulatorPrereqs(t)
	ctx := context.Background()
	client := awstest.S3(t)
	bucket := awstest.UniqueName(t, "rie")
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	fixture := exportgen.FixtureDir()
	up := objstore.NewS3(client, bucket, "exports/app", objstore.S3Options{})
	if err := exportgen.CopyDir(ctx, up, fixture); err != nil {
		t.Fatal(err)
	}
	// The fixture event, aimed at this test's bucket.
	event := readEvent(t, "functions/repartitioner/testdata/event.json")
	rebucket := func(s string) string { return strings.Replace(s, "s3://tributary-exports/", "s3://"+bucket+"/", 1) }
	event["export"], event["out"] = rebucket(event["export"].(string)), rebucket(event["out"].(string))
	bootstrap := buildBootstrap(t, "repartitioner", runtime.GOARCH)
	step := func(ev map[string]any) (resp map[string]any, init time.Duration) {
		t.Helper()
		got, d := coldStart(t, rie, bootstrap, map[string]string{
			"EXPORT_LOCATION":          event["export"].(string),
			"OUTPUT_LOCATION":          event["out"].(string),
			"TRANSFORM":                "comments-table",
			"TMPDIR":                   t.TempDir(),
			"AWS_ENDPOINT_URL":         motoURL,
			"AWS_LAMBDA_FUNCTION_NAME": "repartitioner",
		}, mustJSON(t, ev))
		if err := json.Unmarshal([]byte(got[0]), &resp); err != nil || resp["errorMessage"] != nil {
			t.Fatalf("%v: %s", ev, got[0])
		}
		return resp, d
	}

	var inits []time.Duration
	// Every step carries the execution's ID, as the state machine passes it.
	run := event["executionId"]
	plan, d := step(map[string]any{"action": "plan", "executionId": run})
	inits = append(inits, d)
	files, _ := plan["files"].([]any)
	if len(files) != 5 || plan["complete"] != nil || plan["action"] != "plan" || plan["fingerprint"] == "" {
		t.Fatalf("plan: %v", plan)
	}
	for i := range 2 {
		r, d := step(event)
		inits = append(inits, d)
		if resumed := r["resumed"] == true; resumed != (i == 1) || r["fingerprint"] != plan["fingerprint"] || r["items"] == nil {
			t.Errorf("file step %d (resumed %v): %v", i+1, resumed, r)
		}
	}
	for _, f := range files {
		key := f.(map[string]any)["dataFileS3Key"]
		_, d := step(map[string]any{"action": "file", "executionId": run, "dataFileS3Key": key})
		inits = append(inits, d)
	}
	fin, d := step(map[string]any{"action": "finish", "executionId": run})
	inits = append(inits, d)
	if fin["outputItems"] != float64(913) || fin["entities"] == nil {
		t.Errorf("finish: %v", fin)
	}

	// The same job run locally gives the same entity manifests.
	so, err := reimport.OpenOutput(ctx, objstore.NewS3(client, bucket, "split/app", objstore.S3Options{}))
	if err != nil {
		t.Fatal(err)
	}
	local := repartition.JobConfig{Export: filepath.Join(fixture, "AWSDynamoDB", "01796032802314-fa5ad9a8"), Transform: "comments-table"}
	if err := exportgen.SameAsLocal(ctx, local, t.TempDir(), so); err != nil {
		t.Error(err)
	}
	figures(t, "repartitioner", inits, buildBootstrap(t, "repartitioner", "arm64"))
}

package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/functions/compactor"
	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/seed"
)

// TestRuntimeEmulatorRolesCoverCalls runs the projectors' init and a batch
// through them against moto, recording every DynamoDB call on the wire, and
// checks that each is an action the function's role in template.yaml allows
// on its aggregate table; and the compactor's S3 requests against its role
// (compactorRoleCoversCalls). moto does not enforce IAM, so the emulator tests
// alone would not notice a call the role lacks (as the projector's Scan of
// an unmarked table was once). It runs with the emulator tests, which have
// both moto and the template tools.
func TestRuntimeEmulatorRolesCoverCalls(t *testing.T) {
	tp := loadTemplate(t)
	awstest.MotoURL(t)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range []struct {
		fn, role, event string
		kinesis         bool
	}{
		{"Projector", "ProjectorRole", "functions/projector/testdata/event.json", false},
		{"KinesisProjector", "KinesisProjectorRole", "functions/kinesisprojector/testdata/event.json", true},
	} {
		t.Run(tt.fn, func(t *testing.T) {
			allowed := tableActions(t, tp, tt.role)
			if len(allowed) == 0 {
				t.Fatalf("%s allows no dynamodb action", tt.role)
			}
			wire := &awstest.Wire{}
			cfg := awstest.Config(t)
			cfg.HTTPClient = wire
			client := dynamodb.NewFromConfig(cfg)
			table := awstest.UniqueName(t, "roles")
			if err := dynamostore.CreateTable(ctx, client, table); err != nil {
				t.Fatal(err)
			}
			awstest.DeleteTableAtEnd(t, client, table)
			wire.Reset() // what the function does from here on
			st := dynamostore.New(client, table)
			build := projector.New
			if tt.kinesis {
				build = kinesisprojector.New
			}
			p, err := build(ctx, projector.Config{Table: table}, seed.Environment(), st, quiet, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			event, err := os.ReadFile(filepath.Join(repoRoot, tt.event))
			if err != nil {
				t.Fatal(err)
			}
			if out, err := p.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
				t.Fatalf("%s %v", out, err)
			}
			calls := wire.Recorded()
			if len(calls) == 0 {
				t.Fatal("no call recorded")
			}
			for _, c := range calls {
				for _, action := range iamActions(t, c) {
					if !slices.Contains(allowed, action) {
						t.Errorf("%s calls %s (%s), which %s does not allow on its table (allowed: %v)", tt.fn, c.Op, action, tt.role, allowed)
					}
				}
			}
		})
	}
	t.Run("Compactor", func(t *testing.T) { compactorRoleCoversCalls(t, tp) })
}

// tableActions returns the dynamodb actions a role's Allow statements grant.
func tableActions(t *testing.T, tp tmpl, role string) []string {
	t.Helper()
	return roleActions(t, tp, role, "dynamodb:")
}

// roleActions returns the actions of one service (its prefix, "s3:") that a
// role's Allow statements grant.
func roleActions(t *testing.T, tp tmpl, role, service string) []string {
	t.Helper()
	var out []string
	for _, st := range allowStatements(t, tp, role) {
		var actions []any
		switch a := st["Action"].(type) {
		case string:
			actions = []any{a}
		case []any:
			actions = a
		}
		for _, a := range actions {
			if s, _ := a.(string); strings.HasPrefix(s, service) {
				out = append(out, s)
			}
		}
	}
	return out
}

// allowStatements returns a role's Allow statements, every branch of a
// condition's Fn::If taken.
func allowStatements(t *testing.T, tp tmpl, role string) []obj {
	t.Helper()
	r := tp.resources()[role]
	if r == nil {
		t.Fatalf("no role %s", role)
	}
	var out []obj
	policies, _ := props(r)["Policies"].([]any)
	for _, p := range policies {
		doc, _ := p.(obj)["PolicyDocument"].(obj)
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			for _, b := range branches(s) {
				if st := b.(obj); st["Effect"] == "Allow" {
					out = append(out, st)
				}
			}
		}
	}
	return out
}

// iamActions are the IAM actions a DynamoDB call needs: its own, or for
// TransactWriteItems those of its parts (IAM authorises each part).
func iamActions(t *testing.T, c awstest.Call) []string {
	t.Helper()
	if c.Op != "TransactWriteItems" {
		return []string{"dynamodb:" + c.Op}
	}
	var req struct{ TransactItems []map[string]json.RawMessage }
	if err := json.Unmarshal(c.Req, &req); err != nil {
		t.Fatal(err)
	}
	parts := map[string]string{"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem", "ConditionCheck": "dynamodb:ConditionCheckItem"}
	var out []string
	for _, it := range req.TransactItems {
		for k := range it {
			out = append(out, parts[k])
		}
	}
	return out
}

// compactorRoleCoversCalls runs the compactor in process against moto over
// the golden archive — a compaction, then a rerun with nothing to do —
// recording every S3 request on the wire, and checks that each is an action
// CompactorRole allows on the resource it names (the role scopes its
// writes to compacted/ and its removals to the JSON-lines objects). A
// DeleteObject with If-Match needs s3:GetObject as well as s3:DeleteObject.
func compactorRoleCoversCalls(t *testing.T, tp tmpl) {
	ctx := context.Background()
	s3log := &awstest.S3Log{}
	client := awstest.S3(t, func(o *s3.Options) { o.HTTPClient = &http.Client{Transport: s3log} })
	bucket := awstest.CreateBucket(ctx, t, client, "roles")
	makeArchive(t, objstore.NewS3(client, bucket, "", objstore.S3Options{}), "ttl")
	s3log.Take()

	env := compactorEnv(bucket)
	cfg, err := compactor.LoadConfig(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	h, err := compactor.New(cfg, seed.Environment(), objstore.NewS3(client, bucket, "", objstore.S3Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"removed":5`, `"removed":0`} {
		if out, err := h.Invoke(ctx, []byte(scheduleEvent)); err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("%s %v, want %s", out, err, want)
		}
	}

	stmts := s3Statements(t, tp, "CompactorRole", map[string]string{
		"ArchiveBucket.Arn": "arn:aws:s3:::" + bucket,
		"ArchivePrefix":     "ttl",
	})
	var used []string
	removals := 0
	for _, r := range s3log.Take() {
		if r.Method == http.MethodDelete {
			removals++
			if r.Header.Get("If-Match") == "" {
				t.Errorf("the compactor removes %s without If-Match: it must remove only the version it read", r.Path)
			}
		}
		res, prefix := s3Resource(t, r)
		for _, a := range s3Actions(r) {
			used = append(used, a)
			if !slices.ContainsFunc(stmts, func(s s3Statement) bool { return s.allows(a, res, prefix) }) {
				t.Errorf("the compactor sends %s %s?%s (%s on %s), which CompactorRole does not allow", r.Method, r.Path, r.Query, a, res)
			}
		}
	}
	if removals != 5 {
		t.Errorf("%d removals, want the golden archive's 5 objects", removals)
	}
	used = slices.Compact(slices.Sorted(slices.Values(used)))
	for _, want := range []string{"s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "s3:PutObject"} {
		if !slices.Contains(used, want) {
			t.Fatalf("no %s recorded (%v): the recording misses requests", want, used)
		}
	}
	t.Logf("actions used: %v", used)
}

// s3Actions are the IAM actions an S3 request needs: a multipart upload's
// requests need s3:PutObject, a DeleteObject with If-Match needs
// s3:GetObject too (the S3 user guide, "Enforce conditional deletes"), and
// reads are s3Action's.
func s3Actions(r awstest.S3Request) []string {
	switch r.Op {
	case "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload":
		return []string{"s3:PutObject"}
	case "AbortMultipartUpload":
		return []string{"s3:AbortMultipartUpload"}
	case http.MethodDelete:
		if r.Header.Get("If-Match") != "" {
			return []string{"s3:DeleteObject", "s3:GetObject"}
		}
		return []string{"s3:DeleteObject"}
	}
	return []string{s3Action(r)}
}

// s3Resource is the ARN a path-style S3 request names — the bucket's for a
// listing, with the listing's prefix, the object's otherwise.
func s3Resource(t *testing.T, r awstest.S3Request) (arn, prefix string) {
	t.Helper()
	p := strings.TrimPrefix(r.Path, "/")
	bucket, key, isObject := strings.Cut(p, "/")
	if !isObject || key == "" {
		q, err := url.ParseQuery(r.Query)
		if err != nil {
			t.Fatalf("query %q: %v", r.Query, err)
		}
		return "arn:aws:s3:::" + bucket, q.Get("prefix")
	}
	return "arn:aws:s3:::" + bucket + "/" + key, ""
}

// s3Statement is one Allow statement of a role: its s3 actions, the
// resources it names (IAM wildcards) and the s3:prefix its StringLike
// condition allows, if any.
type s3Statement struct {
	actions, resources, prefixes []string
}

// allows reports whether the statement grants action on resource (and,
// for a listing, on prefix).
func (s s3Statement) allows(action, resource, prefix string) bool {
	if !slices.Contains(s.actions, action) || !slices.ContainsFunc(s.resources, func(p string) bool { return iamMatch(p, resource) }) {
		return false
	}
	return len(s.prefixes) == 0 || slices.ContainsFunc(s.prefixes, func(p string) bool { return iamMatch(p, prefix) })
}

// iamMatch matches s against an IAM pattern, where * is any run of
// characters (slashes too) and ? any one character.
func iamMatch(pattern, s string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// s3Statements returns a role's Allow statements with s3 actions, their
// resources and s3:prefix conditions resolved with vals (the values of
// ${…} references and Fn::GetAtt names, "ArchiveBucket.Arn").
func s3Statements(t *testing.T, tp tmpl, role string, vals map[string]string) []s3Statement {
	t.Helper()
	resolve := func(v any) []string {
		var out []string
		for _, b := range branches(v) {
			switch x := b.(type) {
			case string:
				out = append(out, x)
			case []any:
				for _, e := range x {
					out = append(out, resolveRef(t, e, vals))
				}
			default:
				out = append(out, resolveRef(t, x, vals))
			}
		}
		return out
	}
	var out []s3Statement
	for _, st := range allowStatements(t, tp, role) {
		var s3s s3Statement
		for _, a := range resolve(st["Action"]) {
			if strings.HasPrefix(a, "s3:") {
				s3s.actions = append(s3s.actions, a)
			}
		}
		if len(s3s.actions) == 0 {
			continue
		}
		s3s.resources = resolve(st["Resource"])
		if cond, ok := st["Condition"].(obj); ok {
			for op, c := range cond {
				for k, v := range c.(obj) {
					if op != "StringLike" || k != "s3:prefix" {
						t.Fatalf("%s: condition %s %s: only StringLike s3:prefix is understood here", role, op, k)
					}
					s3s.prefixes = append(s3s.prefixes, resolve(v)...)
				}
			}
		}
		out = append(out, s3s)
	}
	return out
}

// resolveRef resolves a Fn::Sub string, Fn::GetAtt or Ref with vals.
func resolveRef(t *testing.T, v any, vals map[string]string) string {
	t.Helper()
	lookup := func(name string) string {
		s, ok := vals[name]
		if !ok {
			t.Fatalf("no value for %s", name)
		}
		return s
	}
	switch x := v.(type) {
	case string:
		return x
	case obj:
		if s, ok := x["Fn::Sub"].(string); ok {
			return regexp.MustCompile(`\$\{([A-Za-z0-9_.:]+)\}`).ReplaceAllStringFunc(s, func(m string) string { return lookup(m[2 : len(m)-1]) })
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			return lookup(g[0].(string) + "." + g[1].(string))
		}
		if name := refName(x); name != "" {
			return lookup(name)
		}
	}
	t.Fatalf("cannot resolve %v", v)
	return ""
}

// checkRoleCovers fails the test unless every action in used (recorded on
// the wire: DynamoDB and Kinesis calls, S3 requests) is one role allows,
// and unless used holds each of want (else the recording misses calls).
// what names the function, for the messages.
func checkRoleCovers(t *testing.T, tp tmpl, role, what string, used, want []string) {
	t.Helper()
	var allowed []string
	for _, service := range []string{"dynamodb:", "s3:", "kinesis:"} {
		allowed = append(allowed, roleActions(t, tp, role, service)...)
	}
	used = slices.Compact(slices.Sorted(slices.Values(used)))
	for _, w := range want {
		if !slices.Contains(used, w) {
			t.Fatalf("no %s recorded (%v): the recording misses calls", w, used)
		}
	}
	for _, a := range used {
		if !slices.Contains(allowed, a) {
			t.Errorf("the %s calls %s, which %s does not allow (allowed: %v)", what, a, role, allowed)
		}
	}
	t.Logf("actions used: %v", used)
}

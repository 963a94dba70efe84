package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/seed"
)

// TestRuntimeEmulatorRolesCoverCalls runs the projectors' init and a batch
// through them against moto, recording every DynamoDB call on the wire, and
// checks that each is an action the function's role in template.yaml allows
// on its aggregate table. moto does not enforce IAM, so the emulator tests
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
	r := tp.resources()[role]
	if r == nil {
		t.Fatalf("no role %s", role)
	}
	var out []string
	policies, _ := props(r)["Policies"].([]any)
	for _, p := range policies {
		doc, _ := p.(obj)["PolicyDocument"].(obj)
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			for _, b := range branches(s) {
				st := b.(obj)
				if st["Effect"] != "Allow" {
					continue
				}
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

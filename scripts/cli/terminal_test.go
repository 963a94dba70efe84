package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

// hostile sets the terminal's title and clears the screen.
const hostile = "\x1b]0;PWNED\a\x1b[2J"

// checkPrintable fails if out holds anything a terminal would interpret:
// control characters but the newline, DEL, C1 controls, bidirectional
// overrides, invalid UTF-8.
func checkPrintable(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		bad := (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
			(r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"))
		if bad {
			t.Errorf("%s writes %U to the terminal at byte %d: %q", what, r, i, out[max(0, i-40):min(len(out), i+40)])
			return
		}
	}
}

// streamsRecord renders one Lambda DynamoDB Streams INSERT of img.
func streamsRecord(seq int, img map[string]string) string {
	av := map[string]map[string]string{}
	for k, v := range img {
		if k == "version" || k == "rating" || k == "score" {
			av[k] = map[string]string{"N": v}
		} else {
			av[k] = map[string]string{"S": v}
		}
	}
	item, _ := json.Marshal(av)
	keys, _ := json.Marshal(map[string]map[string]string{"PK": av["PK"], "SK": av["SK"]})
	return fmt.Sprintf(`{"eventID":"e%d","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000","dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":%s,"NewImage":%s,"SequenceNumber":"44216000000000000000000%05d","StreamViewType":"NEW_AND_OLD_IMAGES"}}`, seq, keys, item, seq)
}

// Every command's human-readable output escapes what items hold: a
// player's handle, a season in an aggregate key, an entity type in the
// repartition table, a key in an error.
func TestTerminalOutputEscaped(t *testing.T) {
	events := filepath.Join(t.TempDir(), "event.json")
	recs := []string{
		streamsRecord(1, map[string]string{"PK": "PLAYER#u1", "SK": "PROFILE", "EntityType": "Player", "version": "1", "handle": hostile, "season": "2026-Q2", "rating": "1842"}),
		streamsRecord(2, map[string]string{"PK": "PLAYER#u1", "SK": "MATCH#2026-05-01T18:30:00Z#m1", "EntityType": "Match", "version": "1", "season": "2026" + hostile, "result": "WIN", "score": "3"}),
		streamsRecord(3, map[string]string{"PK": "USER#" + hostile, "SK": "ORDER#2026-11-30#o1", "EntityType": "Order", "version": "1", "status": "LOST" + hostile, "total": "1", "orderDate": "2026-11-30"}),
	}
	if err := os.WriteFile(events, []byte(`{"Records":[`+strings.Join(recs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	code, out, stderr := runCLI(t, "process", "--store", store, events)
	if code != 1 || !strings.Contains(out, "3 records, 2 applied") {
		t.Fatalf("process: exit %d\n%s%s", code, out, stderr)
	}
	checkPrintable(t, "process", out+stderr)
	for _, args := range [][]string{
		{"rows", "--store", store, "--projection", "season-leaderboard", "--partition", "SEASON#2026-Q2"},
		{"aggregates", "--store", store},
		{"decode", events},
	} {
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, stderr)
		}
		checkPrintable(t, args[0], out+stderr)
	}
	if _, out, _ := runCLI(t, "rows", "--store", store, "--projection", "season-leaderboard", "--partition", "SEASON#2026-Q2"); !strings.Contains(out, `"handle":{"S":"\u001b]0;PWNED\u0007\u001b[2J"}`) {
		t.Errorf("the handle is not shown escaped:\n%s", out)
	}

	// An export with the same in its entity types and keys.
	dir := t.TempDir()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(dir).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(at, 1), Prefix: "exports/app", Time: at, Files: 1},
		func(yield func(pipeline.Item) bool) {
			_ = yield(pipeline.Item{"PK": s("X#1"), "SK": s("A"), "EntityType": s(hostile)}) && yield(pipeline.Item{"PK": s("X#2"), "SK": s("B"), "EntityType": s("Order\u202egnp.exe")})
		})
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "repartition", "--export", filepath.Join(dir, res.Dir), "--out", t.TempDir(), "--no-sync")
	if code != 0 {
		t.Fatalf("repartition: exit %d: %s", code, stderr)
	}
	checkPrintable(t, "repartition", out+stderr)
}

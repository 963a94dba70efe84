package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/pipeline"
)

// ttlRemoval renders a TTL removal of an item of type typ.
func ttlRemoval(seq int, pk, typ string) string {
	img, _ := json.Marshal(map[string]map[string]string{"PK": {"S": pk}, "SK": {"S": "x"}, "EntityType": {"S": typ}, "ttl": {"N": "1767225000"}})
	return fmt.Sprintf(`{"eventID":"r%d","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/App/stream/2026-01-01T00:00:00.000","userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},"dynamodb":{"ApproximateCreationDateTime":1767225600,"Keys":{"PK":{"S":%q},"SK":{"S":"x"}},"OldImage":%s,"SequenceNumber":"44215845000000000174504%05d","SizeBytes":100,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`,
		seq, pk, img, seq)
}

// catKeys returns the PK of each line archive cat printed.
func catKeys(t *testing.T, out string) []string {
	t.Helper()
	var keys []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var l struct {
			Item struct{ PK struct{ S string } }
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("archive cat line %q: %v", line, err)
		}
		keys = append(keys, l.Item.PK.S)
	}
	return keys
}

// TestCollidingTypesArchive: the archiver puts the TTL removals of two
// types whose 64-bit shortened names were one into two objects, and
// archive cat --entity and restore --entity return the type asked for
// only. (With the 64-bit names both removals went into one object, and
// --entity A returned B's item too.)
func TestCollidingTypesArchive(t *testing.T) {
	a, b, _ := collidingTypes(t)
	events := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(events, []byte(`{"Records":[`+ttlRemoval(1, "A#1", a)+","+ttlRemoval(2, "B#1", b)+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	arch := t.TempDir()
	if code, stdout, stderr := runCLI(t, "process", "--events", events, "--store", t.TempDir(), "--archive", arch); code != 0 {
		t.Fatalf("process --archive: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, "archive", "ls", "--from", arch)
	if code != 0 || !strings.Contains(stdout, "total: 2 objects") {
		t.Errorf("archive ls: exit %d, want two objects\n%s%s", code, stdout, stderr)
	}
	for typ, pk := range map[string]string{a: "A#1", b: "B#1"} {
		code, stdout, stderr := runCLI(t, "archive", "cat", "--from", arch, "--entity", typ)
		if got := catKeys(t, stdout); code != 0 || !slices.Equal(got, []string{pk}) {
			t.Errorf("archive cat --entity %.12q…: exit %d, items %v, want only %s\n%s", typ, code, got, pk, stderr)
		}
	}
	to := t.TempDir()
	code, stdout, stderr = runCLI(t, "restore", "--from", arch, "--entity", a, "--to", to)
	if code != 0 || !strings.Contains(stdout, "wrote 1 items from 1 objects") {
		t.Errorf("restore --entity A: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestLegacyCollidedArchive: an archive written with the 64-bit names holds
// both types' removals in one object, under the name both types had. A
// reader asking for one type finds that object, under the name it has no
// longer, and returns that type's line only, saying it left the other out;
// without --entity it returns both.
func TestLegacyCollidedArchive(t *testing.T) {
	a, b, oldName := collidingTypes(t)
	arch := t.TempDir()
	var lines []byte
	for i, typ := range []string{a, b} {
		item := pipeline.Item{"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("%c#1", 'A'+i)}, "SK": &types.AttributeValueMemberS{Value: "x"}, "EntityType": &types.AttributeValueMemberS{Value: typ}}
		lines = archive.AppendLine(lines, item, archive.Meta{EventID: fmt.Sprint(i), Table: "App", SequenceNumber: fmt.Sprintf("4421584500000000017450439%03d", 91+i)})
	}
	key := archive.ObjectKey("", oldName, "2026-01-01", "4421584500000000017450439091")
	if err := objstore.NewDir(arch).Put(context.Background(), key, archive.Gzip(lines)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "archive", "cat", "--from", arch, "--entity", a)
	if got := catKeys(t, stdout); code != 0 || !slices.Equal(got, []string{"A#1"}) || !strings.Contains(stderr, "left out 1 line") {
		t.Errorf("archive cat --entity A of the old object: exit %d, items %v, want only A#1 and a note of the one left out\n%s", code, got, stderr)
	}
	code, stdout, _ = runCLI(t, "archive", "ls", "--from", arch, "--entity", b)
	if code != 0 || !strings.Contains(stdout, "total: 1 object ") || !regexpLine(stdout, `entity=`+oldName+`/date=2026-01-01/4421584500000000017450439091\.jsonl\.gz +1 +\d+`) {
		t.Errorf("archive ls --entity B: exit %d, want the old object with 1 item of B\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, "archive", "cat", "--from", arch)
	if got := catKeys(t, stdout); code != 0 || !slices.Equal(got, []string{"A#1", "B#1"}) {
		t.Errorf("archive cat: exit %d, items %v, want both", code, got)
	}
}

// regexpLine reports whether a line of s matches expr.
func regexpLine(s, expr string) bool {
	re := regexp.MustCompile(`(?m)^` + expr + `$`)
	return re.MatchString(s)
}

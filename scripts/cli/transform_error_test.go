package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

// TestTransformErrorNamesItOnce: an item a transform cannot take is
// reported with the transform's name once — by a declared transform (a
// spec's check) and by a Go one, in a remodel backfill's failure line and
// in a repartition's error — and with the item and what is wrong with it.
func TestTransformErrorNamesItOnce(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	items := []pipeline.Item{
		{"PK": s("WS#w1"), "SK": s("DOC#d1#CMT#c1"), "EntityType": s("Comment")},
		{"PK": s("WS#w1"), "SK": s("NOTE#d1"), "EntityType": s("Comment")},
	}
	exp := itemsExport(t, items)
	tests := []struct {
		name, transform string
		args            []string
		code            int
		// line is the output's line that reports the item.
		line *regexp.Regexp
		want string
	}{
		{"remodel backfill, declared", "comments-by-doc",
			[]string{"remodel", "backfill", "--spec", "testdata/comments-by-doc.yaml", "--store", t.TempDir(), "--no-sync"}, 1,
			regexp.MustCompile(`(?m)^failed: .*$`),
			"line 2 (item PK=WS#w1 SK=NOTE#d1): comments-by-doc: item WS#w1/NOTE#d1: SK: want DOC#<doc>#CMT#<comment>"},
		{"remodel backfill, Go", "comments-table",
			[]string{"remodel", "backfill", "--transform", "comments-table", "--store", t.TempDir(), "--no-sync"}, 1,
			regexp.MustCompile(`(?m)^failed: .*$`),
			"line 2 (item PK=WS#w1 SK=NOTE#d1): comments-table: item WS#w1/NOTE#d1: no docId/commentId, and the SK is not DOC#<doc>#CMT#<comment>"},
		{"repartition, Go", "comments-table",
			[]string{"repartition", "--transform", "comments-table", "--out", t.TempDir(), "--no-sync"}, 1,
			regexp.MustCompile(`(?m)^tributary repartition: .*$`),
			"line 2: transform comments-table: no docId/commentId, and the SK is not DOC#<doc>#CMT#<comment>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, append(tc.args, "--export", exp)...)
			line := tc.line.FindString(out + stderr)
			if code != tc.code || line == "" {
				t.Fatalf("exit %d, want %d with a line matching %s\n%s%s", code, tc.code, tc.line, out, stderr)
			}
			if n := strings.Count(line, tc.transform); n != 1 {
				t.Errorf("the line names %s %d times, want once:\n%s", tc.transform, n, line)
			}
			if !strings.Contains(line, tc.want) {
				t.Errorf("the line lacks %q:\n%s", tc.want, line)
			}
		})
	}
}

// itemsExport writes items as a full export of one data file, as of
// 2026-11-30T12:00:00Z, and returns its directory.
func itemsExport(t *testing.T, items []pipeline.Item) string {
	t.Helper()
	dir := t.TempDir()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(dir).WithoutSync(), exportgen.Export{ID: exportgen.ExportID(at, 9), Time: at, Files: 1}, slices.Values(items))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, res.Dir)
}

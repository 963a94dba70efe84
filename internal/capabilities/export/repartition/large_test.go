package repartition_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/pipeline"
)

// maxItem is a Document of DynamoDB's largest size whose bulk is attr.
func maxItem(version string, attr types.AttributeValue) pipeline.Item {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	it := pipeline.Item{"PK": s("WS#acme"), "SK": s("DOC#d9"), "EntityType": s("Document"), "version": &types.AttributeValueMemberN{Value: version}}
	room := pipeline.MaxItemBytes - pipeline.ItemSize(it) - len("body")
	switch a := attr.(type) {
	case *types.AttributeValueMemberB:
		a.Value = bytes.Repeat(a.Value, room/len(a.Value)+1)[:room]
	case *types.AttributeValueMemberS:
		a.Value = strings.Repeat(a.Value, room/len(a.Value)+1)[:room]
	}
	it["body"] = attr
	return it
}

// An incremental export line with both images of a 400 KB item (1.09 MB of
// base64) and a full export line of a 400 KB string of control characters
// (2.46 MB of \u0001) are read, decoded and repartitioned like any other.
func TestRepartitionLargestItems(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := objstore.NewDir(dir).WithoutSync()
	old := maxItem("1", &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 0xfe, 0xff}})
	cur := maxItem("2", &types.AttributeValueMemberB{Value: []byte{9, 8, 7, 0x80}})
	ctl := maxItem("1", &types.AttributeValueMemberS{Value: "\x01"})
	ctl["SK"] = &types.AttributeValueMemberS{Value: "DOC#d10"}
	keys := func(it pipeline.Item) pipeline.Item { return pipeline.Item{"PK": it["PK"], "SK": it["SK"]} }

	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	full, err := exportgen.WriteFull(ctx, st, exportgen.Export{ID: exportgen.ExportID(at, 1), Prefix: "exports/app", Time: at, Files: 1},
		func(yield func(pipeline.Item) bool) { _ = yield(old) && yield(ctl) })
	if err != nil {
		t.Fatal(err)
	}
	to := at.Add(time.Hour)
	inc, err := exportgen.WriteIncremental(ctx, st, exportgen.Export{ID: exportgen.ExportID(to, 2), Prefix: "exports/app", From: at, Time: to, Files: 1},
		[]exportgen.Change{{Keys: keys(cur), Old: old, New: cur, Time: at.Add(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	if full.UncompressedBytes < 3_000_000 || inc.UncompressedBytes < 1_090_000 {
		t.Fatalf("full export of %d bytes, incremental of %d: not the largest lines", full.UncompressedBytes, inc.UncompressedBytes)
	}

	src, err := export.OpenExport(ctx, st, full.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ie, err := export.OpenExport(ctx, st, inc.Dir, export.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := export.LoadOverlay(ctx, src, []*export.Export{ie}, pipeline.Options{}, false)
	if err != nil {
		t.Fatalf("incremental line of %d bytes: %v", inc.UncompressedBytes, err)
	}
	out := objstore.NewDir(t.TempDir()).WithoutSync()
	r, err := repartition.NewRepartitioner(src, ov, out, repartition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, 1, false); err != nil {
		t.Fatal(err)
	}
	exportgen.CompareLines(t, exportgen.OutputLines(t, out), exportgen.ExpectedLines([]pipeline.Item{cur, ctl}, nil))
}

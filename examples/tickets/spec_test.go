package tickets_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"example.com/tickets"

	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/spec"
)

// specSet loads the desk's projections from projections.yaml.
func specSet(t *testing.T) *projections.Set {
	t.Helper()
	sp, err := spec.LoadFile("projections.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := sp.Set()
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// fixtureImages returns every Ticket image the captured events carry, new
// and old, from both formats.
func fixtureImages(t *testing.T) []pipeline.Item {
	t.Helper()
	var out []pipeline.Item
	for _, f := range []struct {
		file   string
		decode func([]byte, pipeline.Options) ([]pipeline.Change, error)
	}{
		{"streams-event.json", pipeline.DecodeStreamsEvent},
		{"kinesis-event.json", pipeline.DecodeKinesisEvent},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", f.file))
		if err != nil {
			t.Fatal(err)
		}
		changes, err := f.decode(data, pipeline.Options{})
		if err != nil {
			t.Fatalf("%s: %v", f.file, err)
		}
		for _, c := range changes {
			for _, img := range []pipeline.Item{c.New, c.Old} {
				if et, ok := img["EntityType"].(*types.AttributeValueMemberS); ok && et.Value == "Ticket" {
					out = append(out, img)
				}
			}
		}
	}
	if len(out) < 8 {
		t.Fatalf("only %d Ticket images in the fixtures", len(out))
	}
	return out
}

// TestSpecAgreesWithGo: for every Ticket image of the captured events,
// and for those images with an attribute broken or at a boundary, the
// projections of projections.yaml fail exactly when the Go projections
// do, and otherwise contribute exactly the same.
func TestSpecAgreesWithGo(t *testing.T) {
	goPs := tickets.Set().Projections()
	specPs := specSet(t).Projections()
	if len(goPs) != len(specPs) {
		t.Fatalf("%d spec projections, want %d", len(specPs), len(goPs))
	}
	variants := []struct {
		attr string
		val  types.AttributeValue // nil: delete
	}{
		{"status", s("LOST")}, {"status", s("CLOSED")}, {"status", s("PENDING")}, {"status", n("1")},
		{"PK", s("QUEUE#")}, {"PK", s("QUEUE#a#b")}, {"PK", s("DESK#billing")}, {"SK", s("TICKET#")}, {"SK", nil},
		{"subject", nil}, {"subject", s("")}, {"minutes", nil}, {"minutes", n("1.25")}, {"minutes", n("x")}, {"minutes", s("5")},
		{"openedAt", n("-1")}, {"openedAt", n("0")}, {"openedAt", n("9999999999")}, {"openedAt", n("10000000000")},
		{"openedAt", n("1796030000.0")}, {"openedAt", n("1796030000.5")}, {"openedAt", nil},
	}
	var ok, failed int
	for _, img := range fixtureImages(t) {
		items := []pipeline.Item{img}
		for _, v := range variants {
			item := maps.Clone(img)
			if v.val == nil {
				delete(item, v.attr)
			} else {
				item[v.attr] = v.val
			}
			items = append(items, item)
		}
		for _, item := range items {
			for i, gp := range goPs {
				sp := specPs[i]
				if sp.Name() != gp.Name() {
					t.Fatalf("projection %d is %s, want %s", i, sp.Name(), gp.Name())
				}
				gc, gerr := gp.Contribute(item)
				sc, serr := sp.Contribute(item)
				switch {
				case (gerr == nil) != (serr == nil):
					t.Errorf("%s on %s:\n  Go:   %v\n  spec: %v", gp.Name(), pipeline.AppendItem(nil, item), gerr, serr)
				case gerr != nil:
					failed++
				default:
					ok++
					g, err := projections.Recompute([]pipeline.Item{item}, "", gp)
					if err != nil {
						t.Fatal(err)
					}
					s, err := projections.Recompute([]pipeline.Item{item}, "", sp)
					if err != nil {
						t.Fatal(err)
					}
					if d := projections.Diff(s, g); len(d) > 0 || len(gc.Counters) != len(sc.Counters) || len(gc.Rows) != len(sc.Rows) {
						t.Errorf("%s on %s: the spec contributes otherwise:\n%s", gp.Name(), pipeline.AppendItem(nil, item), strings.Join(d, "\n"))
					}
				}
			}
		}
	}
	if ok < 50 || failed < 50 {
		t.Errorf("too few of each: %d contributed alike, %d failed alike", ok, failed)
	}
}

// TestSpecProjector runs both captured events through the desk's
// projector functions built on projections.yaml: the store holds what the
// Go projections recompute from the final items.
func TestSpecProjector(t *testing.T) {
	for _, f := range []struct {
		file string
		new  func(context.Context, projector.Config, *projections.Environment, driver.Table, *slog.Logger, io.Writer, ...projector.Option) (*projector.Handler, error)
	}{
		{"streams-event.json", projector.New},
		{"kinesis-event.json", kinesisprojector.New},
	} {
		t.Run(f.file, func(t *testing.T) {
			st := boltstoretest.Open(t)
			p, err := f.new(context.Background(), projector.Config{Table: "desk-aggregates"}, &projections.Environment{Projections: specSet(t)}, st, quiet(), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			invoke(t, p, f.file)
			checkView(t, st)
		})
	}
}

package remodel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func str(it pipeline.Item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(it pipeline.Item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// clone copies an item's top level: a transform builds new maps.
func clone(it pipeline.Item) pipeline.Item {
	out := make(pipeline.Item, len(it)+2)
	for k, v := range it {
		out[k] = v
	}
	return out
}

// newDesign is a new key design for the simulated table's seed domains,
// as a team might remodel it:
//
//	Comment  PK=DOC#<doc>, SK=CMT#<comment>       (the shipped comments-table transform)
//	Order    PK=STATUS#<status>, SK=ORDER#<id>     a status change moves the item
//	Player   PK=SEASON#<season>, SK=<source PK>    a season move moves it; no season: SEASON#NONE
//	Match    two items: PK=RESULT#<result>, SK=MATCH#<id>, and the match
//	         under its player, PK=<source PK>, SK=<source SK>
//
// Workspaces, documents, users, carts and their items are not part of it.
func newDesign() *projections.Transform {
	comments := seed.CommentsTable().ByType["Comment"]
	return &projections.Transform{
		Name:    "new-design",
		Version: "1",
		ByType: map[string]projections.TransformFunc{
			"Comment": comments,
			"Order": func(it pipeline.Item) ([]pipeline.Item, error) {
				out := clone(it)
				out["PK"], out["SK"] = s("STATUS#"+str(it, "status")), s("ORDER#"+str(it, "orderId"))
				out["sourcePK"], out["sourceSK"] = it["PK"], it["SK"]
				return []pipeline.Item{out}, nil
			},
			"Player": func(it pipeline.Item) ([]pipeline.Item, error) {
				season := str(it, "season")
				if season == "" {
					season = "NONE"
				}
				out := clone(it)
				out["PK"], out["SK"] = s("SEASON#"+season), it["PK"]
				delete(out, "active")
				return []pipeline.Item{out}, nil
			},
			"Match": func(it pipeline.Item) ([]pipeline.Item, error) {
				id := str(it, "matchId")
				if id == "" {
					return nil, fmt.Errorf("a match without matchId")
				}
				byResult := clone(it)
				byResult["PK"], byResult["SK"] = s("RESULT#"+str(it, "result")), s("MATCH#"+id)
				return []pipeline.Item{byResult, clone(it)}, nil
			},
		},
	}
}

var pkSK = target.Key{Partition: target.KeyAttr{Name: "PK", Type: target.KeyS}, Sort: target.KeyAttr{Name: "SK", Type: target.KeyS}}

func mustRemodel(t testing.TB, tr *projections.Transform) *remodel.Remodel {
	t.Helper()
	r, err := remodel.New(tr, pkSK, pipeline.Schema{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// openEngine opens r's engine over tab (Remodel.Open), again while an
// injected fault (a sim.FaultyTable's) fails its read of the marker.
func openEngine(t testing.TB, r *remodel.Remodel, tab driver.Table, cfg engine.Config) *engine.Engine {
	t.Helper()
	for {
		e, err := r.Open(context.Background(), tab, cfg)
		if err == nil {
			return e
		}
		if !errors.Is(err, sim.ErrInjected) {
			t.Fatal(err)
		}
	}
}

// openTarget opens an empty embedded target of r, closed when t ends.
func openTarget(t testing.TB, r *remodel.Remodel) *boltstore.TargetStore {
	t.Helper()
	ts, err := boltstore.OpenTarget(filepath.Join(t.TempDir(), "target.db"), r.Name(), r.Key(), boltstore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

// expected is the transform of items: the target they must make, by key.
func expected(t testing.TB, r *remodel.Remodel, items []pipeline.Item) map[driver.RowRef]string {
	t.Helper()
	want := map[driver.RowRef]string{}
	for _, it := range items {
		outs, err := r.Apply(it)
		if err != nil {
			t.Fatalf("the transform refuses a final item %s: %v", pipeline.AppendItem(nil, it), err)
		}
		for _, o := range outs {
			ref, err := r.Key().Ref(r.Name(), o)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := want[ref]; dup {
				t.Fatalf("the transform maps two final items to %v: the test's design collides", ref)
			}
			want[ref] = string(pipeline.AppendItem(nil, o))
		}
	}
	return want
}

// targetItems reads what a target holds, by key.
func targetItems(t testing.TB, rd driver.Reader) map[driver.RowRef]string {
	t.Helper()
	got := map[driver.RowRef]string{}
	err := rd.ScanRows(context.Background(), func(row driver.StoredRow) error {
		got[row.Ref] = string(pipeline.AppendItem(nil, row.Attrs))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sameTarget fails t unless the target holds exactly want.
func sameTarget(t testing.TB, stage string, rd driver.Reader, want map[driver.RowRef]string) {
	t.Helper()
	got := targetItems(t, rd)
	var diff []string
	for ref, w := range want {
		switch g, ok := got[ref]; {
		case !ok:
			diff = append(diff, fmt.Sprintf("missing %s/%s: %s", ref.Partition, ref.Sort, w))
		case g != w:
			diff = append(diff, fmt.Sprintf("%s/%s: got %s, want %s", ref.Partition, ref.Sort, g, w))
		}
	}
	for ref, g := range got {
		if _, ok := want[ref]; !ok {
			diff = append(diff, fmt.Sprintf("unexpected %s/%s: %s", ref.Partition, ref.Sort, g))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		if len(diff) > 20 {
			diff = append(diff[:20], "...")
		}
		t.Fatalf("%s: the target differs from transform(final items) in %d items:\n%s", stage, len(diff), strings.Join(diff, "\n"))
	}
}

// agreeButSecond reports whether a check agrees but for source items it
// could not judge in the export's own second: a simulated stream changes
// items many times a second, removes and re-creates them, so some of
// their states there the version cannot order against the export's.
func agreeButSecond(res *remodel.CheckResult) bool {
	for _, u := range res.Unjudged {
		if !strings.Contains(u, "in the export's own second") {
			return false
		}
	}
	r := *res
	r.Unjudged = nil
	return r.Agree()
}

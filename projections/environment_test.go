package projections_test

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// TestWithSpec: a spec's projections replace the binary's, and a spec of
// transforms alone leaves them; a spec's transform of the name of one the
// binary registers takes its place (a team's declared copy of it), the
// others stay beside.
func TestWithSpec(t *testing.T) {
	rewrite := func(pipeline.Item) ([]pipeline.Item, error) { return nil, nil }
	binary := func(name string) *projections.Transform {
		return &projections.Transform{Name: name, Doc: "binary", ByType: map[string]projections.TransformFunc{"A": rewrite}}
	}
	fromSpec := &projections.Transform{Name: "moves", Doc: "spec", ByType: map[string]projections.TransformFunc{"B": rewrite}}
	copyAll := &projections.Transform{Name: "copy-all", CopyOthers: true}
	base := projections.Environment{
		Projections: projections.MustSet(counter{}),
		Transforms:  []*projections.Transform{binary("moves"), binary("keeps")},
	}
	for _, tc := range []struct {
		name     string
		spec     projections.Environment
		wantSet  string
		wantDocs string
	}{
		{"transforms alone", projections.Environment{Transforms: []*projections.Transform{fromSpec, copyAll}}, base.Projections.String(), "copy-all= keeps=binary moves=spec"},
		{"projections and transforms", projections.Environment{Projections: projections.MustSet(summer{"v1"}), Transforms: []*projections.Transform{fromSpec}},
			projections.MustSet(summer{"v1"}).String(), "keeps=binary moves=spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := base
			env.LoadSpec = func(string) (*projections.Environment, error) { s := tc.spec; return &s, nil }
			got, err := env.WithSpec("spec.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if got.Projections.String() != tc.wantSet {
				t.Errorf("projections %s, want %s", got.Projections, tc.wantSet)
			}
			var docs []string
			for _, name := range got.TransformNames() {
				tr, _ := got.Transform(name)
				docs = append(docs, name+"="+tr.Doc)
			}
			if strings.Join(docs, " ") != tc.wantDocs {
				t.Errorf("transforms %s, want %s", strings.Join(docs, " "), tc.wantDocs)
			}
		})
	}
	env := base
	env.LoadSpec = func(string) (*projections.Environment, error) {
		return &projections.Environment{Transforms: []*projections.Transform{{Name: "nothing"}}}, nil
	}
	if _, err := env.WithSpec("spec.yaml"); err == nil || !strings.Contains(err.Error(), "spec.yaml: transform nothing: rewrites no entity type and copies no other") {
		t.Errorf("a transform that does nothing: %v", err)
	}
}

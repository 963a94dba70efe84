package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// FuzzTransforms is FuzzLoad seeded with the transforms' test specs: a
// spec that loads gives transforms whose Version is deterministic and
// whose rewrites never panic on any item (items built to fit their
// declarations from the fuzzed bytes, and items that do not); a rewrite
// is deterministic, leaves its source item alone, and fails with the
// transform's *projections.ItemError or returns items keyed as the
// transform says.
func FuzzTransforms(f *testing.F) {
	files, _ := filepath.Glob("testdata/transforms/*.yaml")
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "DOC#d1#CMT#c1", "7")
	}
	f.Fuzz(func(t *testing.T, data []byte, str, num string) {
		sp, err := Parse("fuzz.yaml", data)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || len(se.Problems) == 0 {
				t.Fatalf("%v (%T) is not an *Error with problems", err, err)
			}
			return
		}
		again, err := Parse("fuzz.yaml", data)
		if err != nil {
			t.Fatalf("loads once, then: %v", err)
		}
		checkTransforms(t, sp, again, str, num)
	})
}

// checkTransforms checks sp's transforms (see FuzzTransforms); again is
// the same spec loaded again.
func checkTransforms(t *testing.T, sp, again *Spec, str, num string) {
	t.Helper()
	for i, tr := range sp.transforms {
		if tr.def == "" || again.transforms[i].def != tr.def {
			t.Fatalf("%s: Version %q, then %q", tr.name, tr.def, again.transforms[i].def)
		}
		pt := tr.transform()
		env := projections.Environment{Transforms: []*projections.Transform{pt}}
		if err := env.Validate(); err != nil {
			t.Fatalf("%s: %v", tr.name, err)
		}
		for typ, rw := range tr.byType {
			fresh := fuzzItems(rw.p, str, num)
			for j, item := range fuzzItems(rw.p, str, num) {
				checkRewrite(t, tr, pt.ByType[typ], item, fresh[j])
			}
		}
	}
}

func checkRewrite(t *testing.T, tr *transform, fn projections.TransformFunc, item, fresh pipeline.Item) {
	t.Helper()
	out, err := fn(item)
	out2, err2 := fn(item)
	if !reflect.DeepEqual(out, out2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
		t.Fatalf("%s: the rewrite is not deterministic: %v %v, then %v %v", tr.name, out, err, out2, err2)
	}
	if !reflect.DeepEqual(item, fresh) {
		t.Fatalf("%s: the rewrite changed its source item", tr.name)
	}
	if err != nil {
		var ie *projections.ItemError
		if !errors.As(err, &ie) || ie.Projection != "" {
			t.Fatalf("%s: error %v (%T) is not a *projections.ItemError that leaves the transform for its caller to name", tr.name, err, err)
		}
		return
	}
	for _, o := range out {
		if _, err := tr.keys.Ref(tr.name, o); err != nil {
			var ke *driver.KeyError
			if errors.As(err, &ke) {
				continue // a key the target cannot hold: the remodel refuses the item
			}
			t.Fatalf("%s: a target item not keyed %s: %v", tr.name, tr.keys, err)
		}
	}
}

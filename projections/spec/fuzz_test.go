package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// FuzzLoad checks that loading never panics and that an invalid spec is an
// *Error with located problems; and that a spec that loads is
// deterministic (loading it again gives the same definitions) and gives
// projections that never panic on any item: items built to fit their
// declarations from the fuzzed bytes, and items that do not. Contribute is
// deterministic, leaves its image alone, and fails with the projection's
// *projections.ItemError or returns what the stores accept.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.*")
	files = append(files, "../../internal/seed/seed.yaml")
	for _, path := range files {
		if strings.HasSuffix(path, ".golden") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, strings.HasSuffix(path, ".json"), "ACCOUNT#a1", "12.5")
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool, str, num string) {
		name := "fuzz.yaml"
		if asJSON {
			name = "fuzz.json"
		}
		sp, err := Parse(name, data)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || len(se.Problems) == 0 {
				t.Fatalf("%v (%T) is not an *Error with problems", err, err)
			}
			for _, p := range se.Problems {
				if p.File != name || p.Msg == "" || p.Line < 0 {
					t.Fatalf("problem %+v", p)
				}
			}
			return
		}
		again, err := Parse(name, data)
		if err != nil {
			t.Fatalf("loads once, then: %v", err)
		}
		if len(sp.projections) > 0 {
			if _, err := sp.Set(); err != nil {
				t.Fatalf("the spec's projections make no set: %v", err)
			}
		}
		checkTransforms(t, sp, again, str, num)
		for i, p := range sp.projections {
			if p.def == "" || again.projections[i].def != p.def {
				t.Fatalf("%s: Definition %q, then %q", p.name, p.def, again.projections[i].def)
			}
			fresh := fuzzItems(p, str, num)
			for j, item := range fuzzItems(p, str, num) {
				checkContribute(t, p, item, fresh[j])
			}
		}
	})
}

// fuzzItems builds items for p from two fuzzed strings: one that fits
// every declaration, and variants of it with each attribute missing, NULL,
// of another type or holding the fuzzed strings.
func fuzzItems(p *Projection, str, num string) []pipeline.Item {
	fit := pipeline.Item{p.typeAttr: &types.AttributeValueMemberS{Value: p.types[0]}}
	for _, v := range p.vars {
		fit[v.attr] = fitting(v.typ, str, num)
	}
	items := []pipeline.Item{fit, nil, {}}
	for _, v := range p.vars {
		for _, av := range []types.AttributeValue{
			nil,
			&types.AttributeValueMemberNULL{Value: true},
			&types.AttributeValueMemberS{Value: str},
			&types.AttributeValueMemberN{Value: num},
			&types.AttributeValueMemberBOOL{Value: true},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: num}}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{str: &types.AttributeValueMemberS{Value: num}}},
			(*types.AttributeValueMemberL)(nil),
			&types.UnknownUnionMember{Tag: str},
		} {
			item := pipeline.Item{}
			for k, x := range fit {
				item[k] = x
			}
			if av == nil {
				delete(item, v.attr)
			} else {
				item[v.attr] = av
			}
			items = append(items, item)
		}
	}
	return items
}

// fitting returns a value of type t made of the fuzzed strings.
func fitting(t attrType, str, num string) types.AttributeValue {
	switch t {
	case typeN:
		return &types.AttributeValueMemberN{Value: num}
	case typeInt:
		return &types.AttributeValueMemberN{Value: strconv.Itoa(len(str))}
	case typeB:
		return &types.AttributeValueMemberB{Value: []byte(str)}
	case typeBOOL:
		return &types.AttributeValueMemberBOOL{Value: len(str)%2 == 0}
	case typeL:
		return &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: str}, &types.AttributeValueMemberN{Value: num}}}
	case typeM:
		return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"tier": &types.AttributeValueMemberS{Value: str}, "n": &types.AttributeValueMemberN{Value: num}}}
	case typeSS:
		return &types.AttributeValueMemberSS{Value: []string{str, num}}
	case typeNS:
		return &types.AttributeValueMemberNS{Value: []string{num}}
	case typeBS:
		return &types.AttributeValueMemberBS{Value: [][]byte{[]byte(str)}}
	}
	return &types.AttributeValueMemberS{Value: str}
}

// checkContribute contributes item twice and checks what the engine
// relies on; fresh is an equal item, which item must still equal.
func checkContribute(t *testing.T, p *Projection, item, fresh pipeline.Item) {
	t.Helper()
	c, err := p.Contribute(item)
	c2, err2 := p.Contribute(item)
	if !reflect.DeepEqual(c, c2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
		t.Fatalf("%s: Contribute is not deterministic: %+v %v, then %+v %v", p.name, c, err, c2, err2)
	}
	if !reflect.DeepEqual(item, fresh) {
		t.Fatalf("%s: Contribute changed its image", p.name)
	}
	if err != nil {
		var ie *projections.ItemError
		if !errors.As(err, &ie) || ie.Projection != p.name {
			t.Fatalf("%s: error %v (%T) is not the projection's *projections.ItemError", p.name, err, err)
		}
		if len(c.Counters) != 0 || len(c.Rows) != 0 {
			t.Fatalf("%s: a contribution with an error", p.name)
		}
		return
	}
	for _, ctr := range c.Counters {
		if ctr.Key == "" || len(ctr.Values) == 0 || ctr.Shards < 0 {
			t.Fatalf("%s: bad counter %+v", p.name, ctr)
		}
		for name := range ctr.Values {
			if driver.ReservedName(name) {
				t.Fatalf("%s: reserved value name %q", p.name, name)
			}
		}
	}
	for _, r := range c.Rows {
		if r.Partition == "" || r.Sort == "" {
			t.Fatalf("%s: bad row %+v", p.name, r)
		}
		for name := range r.Attrs {
			if driver.ReservedName(name) {
				t.Fatalf("%s: reserved row attribute %q", p.name, name)
			}
		}
	}
}

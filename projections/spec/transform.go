package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver/target"
)

// A transform is a declared projections.Transform: per entity type, what
// item of the new key design a source item becomes (a remodel's target
// items, a repartition's output). docs/projections-spec.md, "Transforms",
// is the reference:
//
//	transforms:
//	  - name: orders-by-status
//	    keys: [PK, SK]                  # the target's key ("NAME" or "NAME:TYPE")
//	    entityTypes:
//	      Order:
//	        item: {status: S, orderId: S}
//	        key: {PK: "STATUS#{status}", SK: "ORDER#{orderId}"}
//	        rename: {PK: userPK}          # kept under another name
//	        drop: [paymentRef]
//	        attributes: {day: {S: "{orderDate}"}}
type transform struct {
	name       string
	keys       target.Key
	ttlAttr    string
	copyOthers bool
	byType     map[string]*rewrite
	def        string
}

// A rewrite is one entity type's part of a transform.
type rewrite struct {
	// p reads the item: its declared attributes, checks and condition (a
	// projection without counters or rows). An item whose condition does
	// not hold becomes no target item.
	p *Projection
	// key builds each target key attribute, in the key's order.
	key []keyPart
	// copyAll copies every attribute, else only those of copy.
	copyAll bool
	copy    []string
	drop    []string
	// rename is from the source's name to the target's, sorted.
	rename [][2]string
	attrs  []rowAttr
}

type keyPart struct {
	name string
	typ  attrType // typeS or typeN (a B key cannot be built from text)
	tmpl template
}

// transform returns t as the projections.Transform it declares.
func (t *transform) transform() *projections.Transform {
	out := &projections.Transform{
		Name:         t.name,
		Doc:          "declared in a spec",
		ByType:       map[string]projections.TransformFunc{},
		Keys:         []string{t.keys.Partition.String()},
		CopyOthers:   t.copyOthers,
		TTLAttribute: t.ttlAttr,
		Version:      t.def,
	}
	if t.keys.HasSort() {
		out.Keys = append(out.Keys, t.keys.Sort.String())
	}
	for typ, rw := range t.byType {
		out.ByType[typ] = rw.apply
	}
	return out
}

// apply is the rewrite's projections.TransformFunc.
func (rw *rewrite) apply(item pipeline.Item) ([]pipeline.Item, error) {
	r, ok, err := rw.p.begin(item)
	if err != nil {
		return nil, rw.p.itemError(item, err)
	}
	if !ok {
		return nil, nil
	}
	out := make(pipeline.Item, len(item)+len(rw.attrs))
	if rw.copyAll {
		for k, v := range item {
			out[k] = v
		}
	} else {
		for _, k := range rw.copy {
			if v, ok := item[k]; ok {
				out[k] = v
			}
		}
	}
	for _, k := range rw.drop {
		delete(out, k)
	}
	for _, rn := range rw.rename {
		if v, ok := item[rn[0]]; ok {
			delete(out, rn[0])
			out[rn[1]] = v
		}
	}
	if err := r.attributes(out, rw.attrs, "attributes"); err != nil {
		return nil, rw.p.itemError(item, err)
	}
	for _, k := range rw.key {
		s, err := r.render(k.tmpl)
		if err != nil {
			return nil, rw.p.itemError(item, err)
		}
		if k.typ == typeN {
			if _, err := decimal.Parse(s); err != nil {
				return nil, rw.p.itemError(item, fmt.Errorf("key.%s: %q is not a number", k.name, clip(s)))
			}
			out[k.name] = &types.AttributeValueMemberN{Value: s}
			continue
		}
		out[k.name] = &types.AttributeValueMemberS{Value: s}
	}
	return []pipeline.Item{out}, nil
}

// transforms reads the document's transforms.
func (l *loader) transforms(n *node, typeAttr string, keyAttrs []string) []*transform {
	items, ok := l.list(n, "transforms")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		l.problem(n.line, "transforms", "empty: leave it out, or declare a transform")
	}
	names := map[string]int{}
	var out []*transform
	for i, it := range items {
		if t := l.transform(it, i, typeAttr, keyAttrs, names); t != nil {
			out = append(out, t)
		}
	}
	l.proj = ""
	return out
}

// transform reads transforms[i]; nil if it has a problem.
func (l *loader) transform(n *node, i int, typeAttr string, keyAttrs []string, names map[string]int) *transform {
	l.proj = index("transforms", i)
	if n.kind != mapNode {
		l.problem(n.line, "", "want a transform (a mapping with name, entityTypes, ...), got %s", n.describe())
		return nil
	}
	if j := slices.Index(n.keys, "name"); j >= 0 && n.vals[j].kind == scalarNode && validName(n.vals[j].text) {
		l.proj = "transform " + n.vals[j].text
	}
	before := len(l.probs)
	f := l.fields(n, "", "name", "keys", "ttlAttribute", "copyOthers", "entityTypes")
	t := &transform{byType: map[string]*rewrite{}}
	t.name = l.uniqueName(n, f, names, "transform")
	keys := keyAttrs
	if kn, ok := f["keys"]; ok {
		if list, ok := l.list(kn, "keys"); ok {
			keys = nil
			for j, it := range list {
				if s, ok := l.nonEmpty(it, index("keys", j)); ok {
					keys = append(keys, s)
				}
			}
		}
	}
	var err error
	if t.keys, err = target.NewKey(keys...); err != nil {
		line := n.line
		if kn, ok := f["keys"]; ok {
			line = kn.line
		}
		l.problem(line, "keys", "%v", err)
	}
	if tn, ok := f["ttlAttribute"]; ok {
		t.ttlAttr, _ = l.nonEmpty(tn, "ttlAttribute")
	}
	if cn, ok := f["copyOthers"]; ok {
		if cn.kind != scalarNode || cn.tag != "bool" {
			l.problem(cn.line, "copyOthers", "want true or false, got %s", cn.describe())
		} else {
			t.copyOthers = cn.text == "true"
		}
	}
	en, ok := f["entityTypes"]
	switch {
	case !ok:
		l.problem(n.line, "entityTypes", "missing: the entity types the transform rewrites, each with its rewrite")
	case en.kind != mapNode:
		l.problem(en.line, "entityTypes", "want a mapping of entity types to their rewrites, got %s", en.describe())
	case len(en.keys) == 0 && !t.copyOthers:
		l.problem(en.line, "entityTypes", "empty: the transform rewrites no entity type and copies none")
	default:
		for j, typ := range en.keys {
			path := join("entityTypes", typ)
			if typ == "" {
				l.problem(en.kline[j], path, "an empty entity type")
				continue
			}
			if rw := l.rewrite(en.vals[j], path, typ, typeAttr, keyAttrs, t.keys); rw != nil {
				t.byType[typ] = rw
			}
		}
	}
	if len(l.probs) > before {
		return nil
	}
	t.def = t.canonical(typeAttr)
	return t
}

// rewrite reads one entity type's rewrite.
func (l *loader) rewrite(n *node, path, typ, typeAttr string, keyAttrs []string, keys target.Key) *rewrite {
	before := len(l.probs)
	f := l.fields(n, path, "item", "when", "checks", "key", "copy", "drop", "rename", "attributes")
	if f == nil {
		return nil
	}
	// The rewrite reads an item as a projection of the type does. It has
	// no name: its *projections.ItemError names the item and the
	// attribute, and the transform's caller names the transform.
	p := &Projection{types: []string{typ}, typeAttr: typeAttr, keyAttrs: keyAttrs}
	if in, ok := f["item"]; ok {
		p.vars = l.item(in, typeAttr)
	}
	l.vars = make(map[string]int, len(p.vars))
	for i, v := range p.vars {
		l.vars[v.name] = i
	}
	p.when = l.when(f, path, p.vars)
	if cn, ok := f["checks"]; ok {
		if items, ok := l.list(cn, join(path, "checks")); ok {
			for j, it := range items {
				if c, ok := l.check(it, index(join(path, "checks"), j), p.vars); ok {
					p.checks = append(p.checks, c)
				}
			}
		}
	}
	rw := &rewrite{p: p, copyAll: true}
	produced := map[string]string{} // target attribute → what makes it
	kn, ok := f["key"]
	switch {
	case !ok:
		l.problem(n.line, join(path, "key"), "missing: the target key, %s, each a template", strings.Join(keys.Names(), " and "))
	case kn.kind != mapNode:
		l.problem(kn.line, join(path, "key"), "want a mapping of the target's key attributes (%s) to templates, got %s", strings.Join(keys.Names(), ", "), kn.describe())
	default:
		for _, attr := range []target.KeyAttr{keys.Partition, keys.Sort} {
			if attr.Name == "" {
				continue
			}
			j := slices.Index(kn.keys, attr.Name)
			if j < 0 {
				l.problem(kn.line, join(path, "key"), "no template for the target key attribute %s", clip(attr.Name))
				continue
			}
			if attr.Type == target.KeyB {
				l.problem(kn.kline[j], join(join(path, "key"), attr.Name), "a B key attribute cannot be built from a template")
				continue
			}
			t, ok := l.template(kn.vals[j], join(join(path, "key"), attr.Name), p.vars, false, attr.Type == target.KeyN)
			if ok {
				t.free = true
				kt := typeS
				if attr.Type == target.KeyN {
					kt = typeN
				}
				rw.key = append(rw.key, keyPart{name: attr.Name, typ: kt, tmpl: t})
				produced[attr.Name] = "the target key"
			}
		}
		for j, k := range kn.keys {
			if k != keys.Partition.Name && k != keys.Sort.Name {
				l.problem(kn.kline[j], join(join(path, "key"), k), "%s is not a key attribute of the target (%s)", clip(k), keys)
			}
		}
	}
	if cn, ok := f["copy"]; ok {
		switch {
		case cn.kind == scalarNode && cn.tag == "str" && cn.text == "all":
		case cn.kind == seqNode:
			rw.copyAll = false
			rw.copy = l.names(cn, join(path, "copy"))
		default:
			l.problem(cn.line, join(path, "copy"), "want all, or a list of the attributes to copy, got %s", cn.describe())
		}
	}
	if dn, ok := f["drop"]; ok {
		if dn.kind != seqNode {
			l.problem(dn.line, join(path, "drop"), "want a list of the attributes not to copy, got %s", dn.describe())
		} else {
			rw.drop = l.names(dn, join(path, "drop"))
		}
	}
	if rn, ok := f["rename"]; ok {
		if rn.kind != mapNode {
			l.problem(rn.line, join(path, "rename"), "want a mapping of source attribute names to target ones, got %s", rn.describe())
		} else {
			for j, from := range rn.keys {
				to, ok := l.nonEmpty(rn.vals[j], join(join(path, "rename"), from))
				switch {
				case !ok:
				case from == "":
					l.problem(rn.kline[j], join(path, "rename"), "an empty attribute name")
				case slices.Contains(rw.drop, from):
					l.problem(rn.kline[j], join(join(path, "rename"), from), "%s is also dropped", clip(from))
				case produced[to] != "":
					l.problem(rn.vals[j].line, join(join(path, "rename"), from), "%s is also %s", clip(to), produced[to])
				default:
					produced[to] = "the rename of " + clip(from)
					rw.rename = append(rw.rename, [2]string{from, to})
				}
			}
			slices.SortFunc(rw.rename, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		}
	}
	if an, ok := f["attributes"]; ok {
		if an.kind != mapNode {
			l.problem(an.line, join(path, "attributes"), "want a mapping of target attribute names to what they hold, got %s", an.describe())
		} else {
			for j, name := range an.keys {
				ap := join(join(path, "attributes"), name)
				switch {
				case name == "":
					l.problem(an.kline[j], join(path, "attributes"), "an empty attribute name")
				case len(name) > maxAttrName:
					l.problem(an.kline[j], ap, "an attribute name is at most %d bytes", maxAttrName)
				case produced[name] != "":
					l.problem(an.kline[j], ap, "%s is also %s", clip(name), produced[name])
				default:
					if a, ok := l.rowAttr(name, an.vals[j], ap, p.vars); ok {
						a.tmpl.free = true
						rw.attrs = append(rw.attrs, a)
						produced[name] = "a built attribute"
					}
				}
			}
			slices.SortFunc(rw.attrs, func(a, b rowAttr) int { return strings.Compare(a.name, b.name) })
		}
	}
	if len(l.probs) > before || !l.finish(p, "rewrite") {
		return nil
	}
	return rw
}

// names reads a list of attribute names, each once.
func (l *loader) names(n *node, path string) []string {
	var out []string
	for i, it := range n.items {
		s, ok := l.nonEmpty(it, index(path, i))
		switch {
		case !ok:
		case slices.Contains(out, s):
			l.problem(it.line, index(path, i), "%s given twice", clip(s))
		default:
			out = append(out, s)
		}
	}
	return out
}

// canonTransform is a transform's canonical form: its Version, which a
// remodel's target records, so that another definition is another
// transform to it. Layout, order and comments change nothing.
type canonTransform struct {
	Spec          int                     `json:"spec"`
	Name          string                  `json:"name"`
	Keys          string                  `json:"keys"`
	TTLAttribute  string                  `json:"ttlAttribute,omitempty"`
	CopyOthers    bool                    `json:"copyOthers,omitempty"`
	TypeAttribute string                  `json:"typeAttribute"`
	EntityTypes   map[string]canonRewrite `json:"entityTypes"`
}

type canonRewrite struct {
	Item       map[string]canonVar     `json:"item"`
	When       string                  `json:"when,omitempty"`
	Checks     []string                `json:"checks,omitempty"`
	Key        map[string]string       `json:"key"`
	Copy       []string                `json:"copy,omitempty"` // nil: all
	Drop       []string                `json:"drop,omitempty"`
	Rename     map[string]string       `json:"rename,omitempty"`
	Attributes map[string]canonRowAttr `json:"attributes,omitempty"`
}

func (t *transform) canonical(typeAttr string) string {
	c := canonTransform{Spec: specVersion, Name: t.name, Keys: t.keys.String(), TTLAttribute: t.ttlAttr, CopyOthers: t.copyOthers,
		TypeAttribute: typeAttr, EntityTypes: map[string]canonRewrite{}}
	for typ, rw := range t.byType {
		p := rw.p
		cr := canonRewrite{Item: map[string]canonVar{}, When: canonExpr(p.when), Key: map[string]string{},
			Copy: slices.Sorted(slices.Values(rw.copy)), Drop: slices.Sorted(slices.Values(rw.drop))}
		if !rw.copyAll && cr.Copy == nil {
			cr.Copy = []string{}
		}
		for _, v := range p.vars {
			typ := v.typ.String()
			if v.optional {
				typ += "?"
			}
			cr.Item[v.name] = canonVar{Attribute: v.attr, Type: typ}
		}
		for _, ck := range p.checks {
			cr.Checks = append(cr.Checks, string(marshal(canonCheck{When: canonExpr(ck.when), Expr: canonExpr(ck.expr)})))
		}
		slices.Sort(cr.Checks)
		for _, k := range rw.key {
			cr.Key[k.name] = k.tmpl.canonical(p.vars)
		}
		if len(rw.rename) > 0 {
			cr.Rename = map[string]string{}
			for _, rn := range rw.rename {
				cr.Rename[rn[0]] = rn[1]
			}
		}
		if len(rw.attrs) > 0 {
			cr.Attributes = map[string]canonRowAttr{}
			for _, a := range rw.attrs {
				cr.Attributes[a.name] = canonAttr(a, p.vars)
			}
		}
		c.EntityTypes[typ] = cr
	}
	return string(marshal(c))
}

// TransformInfo describes a declared transform, for tools that print it.
type TransformInfo struct {
	Name string
	// Keys is the target's key schema, "PK:S,SK:S".
	Keys       string
	CopyOthers bool
	Rewrites   []rewriteInfo // by entity type
}

// rewriteInfo describes one entity type's rewrite.
type rewriteInfo struct {
	EntityType string
	// Key lists the target key's templates, "PK=DOC#{SK[1]}".
	Key []string
	// Copy is "all", or the attributes copied; Drop, Rename ("PK→userPK")
	// and Attributes (built) what else it does.
	Copy                     string
	Drop, Rename, Attributes []string
}

// DescribeTransforms describes the spec's transforms, in the order the
// file lists them.
func (s *Spec) DescribeTransforms() []TransformInfo {
	out := make([]TransformInfo, len(s.transforms))
	for i, t := range s.transforms {
		info := TransformInfo{Name: t.name, Keys: t.keys.String(), CopyOthers: t.copyOthers}
		for _, typ := range slices.Sorted(maps.Keys(t.byType)) {
			rw := t.byType[typ]
			ri := rewriteInfo{EntityType: typ, Copy: "all", Drop: slices.Clone(rw.drop)}
			if !rw.copyAll {
				ri.Copy = strings.Join(rw.copy, ", ")
			}
			for _, k := range rw.key {
				ri.Key = append(ri.Key, k.name+"="+k.tmpl.canonical(rw.p.vars))
			}
			for _, rn := range rw.rename {
				ri.Rename = append(ri.Rename, rn[0]+"→"+rn[1])
			}
			for _, a := range rw.attrs {
				ri.Attributes = append(ri.Attributes, a.name)
			}
			info.Rewrites = append(info.Rewrites, ri)
		}
		out[i] = info
	}
	return out
}

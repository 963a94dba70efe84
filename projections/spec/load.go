package spec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// loader turns a document into a Spec, collecting every problem.
type loader struct {
	file   string
	probs  []problem
	proj   string     // the projection being read: its name, or "projections[N]"
	budget loadBudget // what the spec's expressions cost to load so far
	// vars indexes the declared variables of the projection being read
	// by name.
	vars map[string]int
}

// Limits from DynamoDB's.
const (
	// maxAttrName is the longest attribute name DynamoDB allows (64 KB).
	maxAttrName = 65535
	// maxName is the longest projection name: NAME_MAX, as a name may
	// become a file's name.
	maxName = 255
	// maxShards bounds write shards: the engine picks a shard from a 32-bit
	// hash.
	maxShards = math.MaxUint32
)

func (l *loader) problem(line int, field, format string, args ...any) {
	l.probs = append(l.probs, problem{File: l.file, Line: line, Projection: l.proj, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// join appends a field name to a path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// fields reads mapping n: the values of its known fields by name. Any
// other field is a problem (with a suggestion for a likely typo).
func (l *loader) fields(n *node, path string, known ...string) map[string]*node {
	if n.kind != mapNode {
		l.problem(n.line, path, "want a mapping, got %s", n.describe())
		return nil
	}
	out := make(map[string]*node, len(n.keys))
	for i, k := range n.keys {
		if !slices.Contains(known, k) {
			l.problem(n.kline[i], join(path, k), "unknown field%s (known: %s)", suggest(k, known), strings.Join(known, ", "))
			continue
		}
		out[k] = n.vals[i]
	}
	return out
}

// suggest returns " (did you mean X?)" for a known name within two edits
// of name, or "".
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return ": did you mean " + best + "?"
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// text returns a scalar's text; null, a mapping or a list is a problem.
func (l *loader) text(n *node, path string) (string, bool) {
	if n.kind != scalarNode || n.tag == "null" {
		l.problem(n.line, path, "want a string, got %s", n.describe())
		return "", false
	}
	return n.text, true
}

// nonEmpty returns a scalar's text, which must not be empty.
// uniqueName reads the name field f holds of n, a projection or a
// transform (kind): a valid name no other of its kind in the spec has
// (names, by line). It returns "" after a problem.
func (l *loader) uniqueName(n *node, f map[string]*node, names map[string]int, kind string) string {
	nn, ok := f["name"]
	if !ok {
		l.problem(n.line, "name", "missing")
		return ""
	}
	name, ok := l.nonEmpty(nn, "name")
	switch {
	case !ok:
	case !validName(name):
		l.problem(nn.line, "name", "%q: want letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d bytes", clip(name), maxName)
	case names[name] > 0:
		l.problem(nn.line, "name", "%s is also the name of the %s on line %d", name, kind, names[name])
	default:
		names[name] = nn.line
		return name
	}
	return ""
}

func (l *loader) nonEmpty(n *node, path string) (string, bool) {
	s, ok := l.text(n, path)
	if ok && s == "" {
		l.problem(n.line, path, "empty")
		return "", false
	}
	return s, ok
}

// whole returns a whole number written as a decimal YAML or JSON integer.
func (l *loader) whole(n *node, path string) (int, bool) {
	if n.kind == scalarNode && n.tag == "int" {
		if v, err := strconv.ParseInt(n.text, 10, 64); err == nil {
			return int(v), true
		}
	}
	l.problem(n.line, path, "want a whole number, got %s", n.describe())
	return 0, false
}

// list returns a list's items.
func (l *loader) list(n *node, path string) ([]*node, bool) {
	if n.kind != seqNode {
		l.problem(n.line, path, "want a list, got %s", n.describe())
		return nil, false
	}
	return n.items, true
}

// spec reads the document.
func (l *loader) spec(root *node) *Spec {
	f := l.fields(root, "", "version", "typeAttribute", "versionAttribute", "keyAttributes", "ttlAttribute", "projections", "transforms")
	if f == nil {
		return nil
	}
	switch v, ok := f["version"]; {
	case !ok:
		l.problem(root.line, "version", "missing: a spec starts with version: %d", specVersion)
		return nil
	default:
		n, ok := l.whole(v, "version")
		if !ok {
			return nil
		}
		if n != specVersion {
			l.problem(v.line, "version", "%d is not known: this Tributary reads version %d", n, specVersion)
			return nil
		}
	}
	s := &Spec{typeAttribute: pipeline.DefaultTypeAttribute}
	if n, ok := f["typeAttribute"]; ok {
		if t, ok := l.nonEmpty(n, "typeAttribute"); ok {
			s.typeAttribute = t
		}
	}
	if n, ok := f["versionAttribute"]; ok {
		if v, ok := l.nonEmpty(n, "versionAttribute"); ok {
			s.schema.VersionAttribute = v
		}
	}
	if n, ok := f["ttlAttribute"]; ok {
		if v, ok := l.nonEmpty(n, "ttlAttribute"); ok {
			s.schema.TTLAttribute = v
		}
	}
	keyAttrs := pipeline.DefaultKeyAttributes()
	if n, ok := f["keyAttributes"]; ok {
		keyAttrs = l.keyAttributes(n)
		s.schema.KeyAttributes = keyAttrs
	}
	s.schema.TypeAttribute = s.typeAttribute
	if err := s.schema.Validate(); err != nil && len(l.probs) == 0 {
		for _, e := range unjoin(err) {
			l.problem(root.line, "", "%v", e)
		}
	}
	if tn, ok := f["transforms"]; ok {
		s.transforms = l.transforms(tn, s.typeAttribute, keyAttrs)
	}
	pn, ok := f["projections"]
	if !ok {
		if _, ok := f["transforms"]; !ok {
			l.problem(root.line, "projections", "missing: a spec declares at least one projection, or transforms")
		}
		return s
	}
	items, ok := l.list(pn, "projections")
	if !ok {
		return s
	}
	if len(items) == 0 {
		l.problem(pn.line, "projections", "empty: a spec declares at least one projection")
	}
	names := map[string]int{} // name → line
	for i, it := range items {
		if p := l.projection(it, i, s.typeAttribute, keyAttrs, names); p != nil {
			s.projections = append(s.projections, p)
		}
	}
	l.proj = ""
	return s
}

func (l *loader) keyAttributes(n *node) []string {
	items, ok := l.list(n, "keyAttributes")
	if !ok {
		return pipeline.DefaultKeyAttributes()
	}
	if len(items) < 1 || len(items) > 2 {
		l.problem(n.line, "keyAttributes", "want one or two names (the partition key's and, if the table has one, the sort key's), got %d", len(items))
	}
	var out []string
	for i, it := range items {
		if s, ok := l.nonEmpty(it, index("keyAttributes", i)); ok {
			if slices.Contains(out, s) {
				l.problem(it.line, index("keyAttributes", i), "%s given twice", s)
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return pipeline.DefaultKeyAttributes()
	}
	return out
}

// unjoin returns the errors that errors.Join joined into err, or err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// projection reads projections[i]; nil if it has a problem.
func (l *loader) projection(n *node, i int, typeAttr string, keyAttrs []string, names map[string]int) *Projection {
	if n.kind != mapNode {
		l.proj = ""
		l.problem(n.line, index("projections", i), "want a projection (a mapping with name, entityTypes, ...), got %s", n.describe())
		return nil
	}
	l.proj = index("projections", i)
	if j := slices.Index(n.keys, "name"); j >= 0 && n.vals[j].kind == scalarNode && validName(n.vals[j].text) {
		l.proj = n.vals[j].text // so that every problem names the projection
	}
	before := len(l.probs)
	f := l.fields(n, "", "name", "entityTypes", "item", "when", "checks", "counters", "rows")
	p := &Projection{typeAttr: typeAttr, keyAttrs: keyAttrs}
	p.name = l.uniqueName(n, f, names, "projection")
	if tn, ok := f["entityTypes"]; !ok {
		l.problem(n.line, "entityTypes", "missing: name the entity types the projection reads")
	} else {
		p.types = l.entityTypes(tn)
	}
	if in, ok := f["item"]; ok {
		p.vars = l.item(in, typeAttr)
	}
	l.vars = make(map[string]int, len(p.vars))
	for i, v := range p.vars {
		l.vars[v.name] = i
	}
	p.when = l.when(f, "", p.vars)
	if cn, ok := f["checks"]; ok {
		if items, ok := l.list(cn, "checks"); ok {
			for j, it := range items {
				if c, ok := l.check(it, index("checks", j), p.vars); ok {
					p.checks = append(p.checks, c)
				}
			}
		}
	}
	counters, rows := f["counters"], f["rows"]
	if counters != nil {
		if items, ok := l.list(counters, "counters"); ok {
			for j, it := range items {
				if c, ok := l.counter(it, index("counters", j), p.vars); ok {
					p.counters = append(p.counters, c)
				}
			}
		}
	}
	if rows != nil {
		if items, ok := l.list(rows, "rows"); ok {
			for j, it := range items {
				if r, ok := l.row(it, index("rows", j), p.vars); ok {
					p.rows = append(p.rows, r)
				}
			}
		}
	}
	if len(l.probs) == before && len(p.counters) == 0 && len(p.rows) == 0 {
		l.problem(n.line, "counters", "missing: the projection contributes nothing (give counters or rows)")
	}
	if len(l.probs) > before || !l.finish(p, "projection") {
		return nil
	}
	p.def = p.canonical()
	return p
}

// finish checks what p's expressions may cost together (what names p in
// the problem: "projection", "rewrite") and counts the variables they
// read; false if they may cost too much.
func (l *loader) finish(p *Projection, what string) bool {
	var steps, bytes float64
	for _, e := range p.expressions() {
		steps += e.estSteps
		bytes += e.estBytes
		if steps > maxSteps || bytes > maxBytes {
			l.problem(e.line, e.field, "with the %s's expressions before it, it may take %s", what, describeLimit(steps, bytes))
			return false
		}
	}
	for _, v := range p.vars {
		if v.inExpr {
			p.inExpr++
		}
	}
	return true
}

// validName reports whether s can name a projection: it appears in
// aggregate keys, metrics, comma-separated lists and file names.
func validName(s string) bool {
	if s == "" || len(s) > maxName || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// isIdent reports whether s is an identifier: a letter or '_', then
// letters, digits or '_' (ASCII).
func isIdent(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' {
			return false
		}
	}
	return true
}

func (l *loader) entityTypes(n *node) []string {
	items, ok := l.list(n, "entityTypes")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		l.problem(n.line, "entityTypes", "empty: name the entity types the projection reads")
	}
	var out []string
	for i, it := range items {
		t, ok := l.nonEmpty(it, index("entityTypes", i))
		if !ok {
			continue
		}
		if slices.Contains(out, t) {
			l.problem(it.line, index("entityTypes", i), "%s given twice", clip(t))
			continue
		}
		out = append(out, t)
	}
	return out
}

// item reads the attribute declarations, sorted by variable name.
func (l *loader) item(n *node, typeAttr string) []variable {
	if n.kind != mapNode {
		l.problem(n.line, "item", "want a mapping of attribute names to types, got %s", n.describe())
		return nil
	}
	var vars []variable
	byAttr := map[string]string{}
	for i, name := range n.keys {
		path := join("item", name)
		line := n.kline[i]
		v := variable{name: name, attr: name, line: line}
		d := n.vals[i]
		typ := ""
		switch d.kind {
		case scalarNode:
			s, ok := l.text(d, path)
			if !ok {
				continue
			}
			typ = s
		case mapNode:
			f := l.fields(d, path, "type", "attribute")
			tn, ok := f["type"]
			if !ok {
				l.problem(d.line, join(path, "type"), "missing")
				continue
			}
			if typ, ok = l.text(tn, join(path, "type")); !ok {
				continue
			}
			if an, ok := f["attribute"]; ok {
				if v.attr, ok = l.nonEmpty(an, join(path, "attribute")); !ok {
					continue
				}
			}
		default:
			l.problem(d.line, path, "want a type (S, N, int, B, BOOL, L, M, SS, NS, BS or any, ? for optional) or {type, attribute}, got %s", d.describe())
			continue
		}
		switch {
		case !isIdent(name):
			l.problem(line, path, "%q cannot name a variable in expressions and templates: use letters, digits and '_', and {type: ..., attribute: %q}", clip(name), clip(name))
			continue
		case exprKeywords[name] || builtinNames[name]:
			l.problem(line, path, "%s is a word of the expression language: declare it under another name with {type: ..., attribute: %s}", name, name)
			continue
		case len(v.attr) > maxAttrName:
			l.problem(line, path, "an attribute name is at most %d bytes", maxAttrName)
			continue
		}
		// A declaration with a problem still declares its name, as of
		// unknown type, so that what uses it reports nothing more.
		t, optional, ok := parseType(typ)
		if !ok {
			l.problem(d.line, path, "type %q: want S, N, int, B, BOOL, L, M, SS, NS, BS or any, with ? for optional", clip(typ))
			t = typeUnknown
		}
		v.typ, v.optional = t, optional
		if v.attr == typeAttr && ok && (t != typeS || optional) {
			l.problem(d.line, path, "%s is the type attribute: every item has it as an S", typeAttr)
			v.typ = typeUnknown
		}
		if other, dup := byAttr[v.attr]; dup {
			l.problem(line, path, "attribute %s is also declared as %s", clip(v.attr), other)
		}
		byAttr[v.attr] = name
		vars = append(vars, v)
	}
	slices.SortFunc(vars, func(a, b variable) int { return strings.Compare(a.name, b.name) })
	return vars
}

// parseType parses a declared type: a name, with ? for optional.
func parseType(s string) (attrType, bool, bool) {
	name, optional := strings.CutSuffix(strings.TrimSpace(s), "?")
	for _, t := range declarable {
		if t.String() == name {
			return t, optional, true
		}
	}
	return 0, false, false
}

// varIndex returns the index of the declared variable called name in the
// projection being read, or -1.
func (l *loader) varIndex(name string) int {
	if i, ok := l.vars[name]; ok {
		return i
	}
	return -1
}

// when compiles f's optional when field: nil if absent.
func (l *loader) when(f map[string]*node, path string, vars []variable) *expression {
	if n, ok := f["when"]; ok {
		return l.expression(n, join(path, "when"), vars)
	}
	return nil
}

// expression compiles an expression field.
func (l *loader) expression(n *node, path string, vars []variable) *expression {
	src, ok := l.text(n, path)
	if !ok {
		return nil
	}
	if strings.TrimSpace(src) == "" {
		l.problem(n.line, path, "empty")
		return nil
	}
	e, err := compileExpr(src, vars, l.vars, &l.budget)
	if err != nil {
		l.problem(n.line, path, "%s: %v", clip(strings.TrimSpace(src)), err)
		return nil
	}
	e.field, e.line = path, n.line
	return e
}

func (l *loader) check(n *node, path string, vars []variable) (check, bool) {
	c := check{attr: -1, field: path}
	before := len(l.probs)
	if n.kind == scalarNode {
		c.expr = l.expression(n, path, vars)
		return c, len(l.probs) == before
	}
	f := l.fields(n, path, "expr", "when", "attribute", "message")
	if f == nil {
		return c, false
	}
	if en, ok := f["expr"]; ok {
		c.expr = l.expression(en, join(path, "expr"), vars)
	} else {
		l.problem(n.line, join(path, "expr"), "missing: the expression an item must satisfy")
	}
	c.when = l.when(f, path, vars)
	if an, ok := f["attribute"]; ok {
		if name, ok := l.text(an, join(path, "attribute")); ok {
			if c.attr = l.varIndex(name); c.attr < 0 {
				l.problem(an.line, join(path, "attribute"), "%s is not declared in item", clip(name))
			}
		}
	}
	if mn, ok := f["message"]; ok {
		c.message, _ = l.nonEmpty(mn, join(path, "message"))
	}
	return c, len(l.probs) == before
}

// template reads a template field; an empty one is a problem unless
// allowEmpty. number is true for an {N: template}, which must render a
// number.
func (l *loader) template(n *node, path string, vars []variable, allowEmpty, number bool) (template, bool) {
	src, ok := l.text(n, path)
	if !ok {
		return template{}, false
	}
	if src == "" && !allowEmpty {
		l.problem(n.line, path, "empty")
		return template{}, false
	}
	raw, probs := parseTemplate(src)
	for _, p := range probs {
		l.problem(n.line, path, "%s", p)
	}
	t := template{}
	ok = len(probs) == 0
	for _, rp := range raw {
		if rp.name == "" {
			t.parts = append(t.parts, part{lit: rp.lit, v: -1, seg: -1})
			continue
		}
		i := l.varIndex(rp.name)
		if i < 0 {
			l.problem(n.line, path, "placeholder %s: %s is not declared in item", clip(rp.src), rp.name)
			ok = false
			continue
		}
		typ := vars[i].typ
		switch {
		case typ == typeUnknown: // its declaration has a problem already
		case rp.seg >= 0 && typ != typeS:
			l.problem(n.line, path, "placeholder %s: a segment is taken from an S attribute; %s is %s", clip(rp.src), rp.name, typ)
			ok = false
		case rp.width > 0 && typ != typeN && typ != typeInt:
			l.problem(n.line, path, "placeholder %s: zero-padding takes an N or int attribute; %s is %s", clip(rp.src), rp.name, typ)
			ok = false
		case rp.sortable && typ != typeN && typ != typeInt:
			l.problem(n.line, path, "placeholder %s: the sortable encoding takes an N or int attribute; %s is %s", clip(rp.src), rp.name, typ)
			ok = false
		case rp.sortable && number:
			l.problem(n.line, path, "placeholder %s: the sortable encoding is text, not a number: write {%s} in an N", clip(rp.src), rp.name)
			ok = false
		case typ != typeS && typ != typeN && typ != typeInt:
			l.problem(n.line, path, "placeholder %s: a placeholder takes an S, N or int attribute; %s is %s", clip(rp.src), rp.name, typ)
			ok = false
		}
		t.parts = append(t.parts, part{v: i, seg: rp.seg, width: rp.width, sortable: rp.sortable})
	}
	return t, ok
}

// outputs reads a mapping of counter values or row attributes (what the
// mapping maps, for its problem), passing each entry with a valid name to
// read. A name is valid as an attribute of the aggregate table's items:
// not reserved, not too long. It returns whether n is a mapping.
func (l *loader) outputs(n *node, path, what string, read func(name string, v *node, path string)) bool {
	if n.kind != mapNode {
		l.problem(n.line, path, "want a mapping of %s, got %s", what, n.describe())
		return false
	}
	for i, name := range n.keys {
		p := join(path, name)
		switch {
		case driver.ReservedName(name):
			l.problem(n.kline[i], p, "%q is reserved: the stores use it for their own bookkeeping", name)
		case len(name) > maxAttrName:
			l.problem(n.kline[i], p, "an attribute name is at most %d bytes", maxAttrName)
		default:
			read(name, n.vals[i], p)
		}
	}
	return true
}

func (l *loader) counter(n *node, path string, vars []variable) (counter, bool) {
	c := counter{field: path}
	before := len(l.probs)
	f := l.fields(n, path, "key", "when", "shards", "values")
	if f == nil {
		return c, false
	}
	if kn, ok := f["key"]; ok {
		c.key, _ = l.template(kn, join(path, "key"), vars, false, false)
	} else {
		l.problem(n.line, join(path, "key"), "missing")
	}
	c.when = l.when(f, path, vars)
	if sn, ok := f["shards"]; ok {
		if s, ok := l.whole(sn, join(path, "shards")); ok {
			switch {
			case s < 0 || s > maxShards:
				l.problem(sn.line, join(path, "shards"), "%d: want 0 (or 1: unsharded) to %d", s, int64(maxShards))
			case s > 1:
				c.shards = s
			}
		}
	}
	vn, ok := f["values"]
	if !ok {
		l.problem(n.line, join(path, "values"), "missing: what the counter adds, e.g. values: {orders: 1}")
		return c, false
	}
	vpath := join(path, "values")
	if l.outputs(vn, vpath, "value names to what they add", func(name string, v *node, vp string) {
		if val, ok := l.value(name, v, vp, vars); ok {
			c.values = append(c.values, val)
		}
	}) && len(vn.keys) == 0 {
		l.problem(vn.line, vpath, "empty: what the counter adds, e.g. values: {orders: 1}")
	}
	slices.SortFunc(c.values, func(a, b value) int { return strings.Compare(a.name, b.name) })
	return c, len(l.probs) == before
}

// value reads one counter value: a number, an attribute, or {add, when,
// missing}.
func (l *loader) value(name string, n *node, path string, vars []variable) (value, bool) {
	v := value{name: name, v: -1}
	before := len(l.probs)
	add := n
	if n.kind == mapNode {
		f := l.fields(n, path, "add", "when", "missing")
		an, ok := f["add"]
		if !ok {
			l.problem(n.line, join(path, "add"), "missing: a number or an N attribute")
			return v, false
		}
		add = an
		v.when = l.when(f, path, vars)
		if mn, ok := f["missing"]; ok {
			if d, ok := l.number(mn, join(path, "missing")); ok {
				v.missing = &d
			}
		}
	}
	addPath := path
	if add != n {
		addPath = join(path, "add")
	}
	switch {
	case add.kind == scalarNode && (add.tag == "int" || add.tag == "float"):
		v.lit, _ = l.number(add, addPath)
	case add.kind == scalarNode && add.tag == "str":
		v.v = l.varIndex(add.text)
		switch {
		case v.v < 0:
			hint := ""
			if _, err := decimal.Parse(add.text); err == nil {
				hint = " (a number is added per item when written without quotes)"
			}
			l.problem(add.line, addPath, "%s is not declared in item%s", clip(add.text), hint)
		case vars[v.v].typ != typeN && vars[v.v].typ != typeInt && vars[v.v].typ != typeUnknown:
			l.problem(add.line, addPath, "%s is %s: a value sums an N or int attribute", add.text, vars[v.v].typ)
		}
	default:
		l.problem(add.line, addPath, "want a number or an N attribute, got %s", add.describe())
	}
	if v.missing != nil && v.v >= 0 && !vars[v.v].optional {
		l.problem(n.line, join(path, "missing"), "%s is required (declared %s): declare it %s? for missing to apply", vars[v.v].name, vars[v.v].typ, vars[v.v].typ)
	}
	if v.missing != nil && v.v < 0 && len(l.probs) == before {
		l.problem(n.line, join(path, "missing"), "only a value that sums an attribute has a missing value")
	}
	return v, len(l.probs) == before
}

// number reads a number literal exactly, as DynamoDB would store it.
func (l *loader) number(n *node, path string) (decimal.Decimal, bool) {
	if n.kind != scalarNode || (n.tag != "int" && n.tag != "float") {
		l.problem(n.line, path, "want a number, got %s", n.describe())
		return decimal.Decimal{}, false
	}
	d, err := decimal.Parse(n.text)
	if err != nil {
		l.problem(n.line, path, "%s: want a decimal number DynamoDB can store (at most 38 significant digits)", clip(n.text))
		return decimal.Decimal{}, false
	}
	return d, true
}

func (l *loader) row(n *node, path string, vars []variable) (row, bool) {
	r := row{field: path}
	before := len(l.probs)
	f := l.fields(n, path, "partition", "sort", "when", "attributes")
	if f == nil {
		return r, false
	}
	for _, k := range []string{"partition", "sort"} {
		kn, ok := f[k]
		if !ok {
			l.problem(n.line, join(path, k), "missing")
			continue
		}
		t, _ := l.template(kn, join(path, k), vars, false, false)
		if k == "partition" {
			r.partition = t
		} else {
			r.sort = t
		}
	}
	r.when = l.when(f, path, vars)
	if an, ok := f["attributes"]; ok {
		l.outputs(an, join(path, "attributes"), "row attribute names to what they hold", func(name string, v *node, ap string) {
			if a, ok := l.rowAttr(name, v, ap, vars); ok {
				r.attrs = append(r.attrs, a)
			}
		})
	}
	slices.SortFunc(r.attrs, func(a, b rowAttr) int { return strings.Compare(a.name, b.name) })
	return r, len(l.probs) == before
}

// rowAttr reads a row attribute: an attribute to copy, or {S: template}
// or {N: template}.
func (l *loader) rowAttr(name string, n *node, path string, vars []variable) (rowAttr, bool) {
	a := rowAttr{name: name, copy: -1}
	const want = "want a declared attribute to copy, {S: template} or {N: template}"
	switch {
	case n.kind == scalarNode && n.tag == "str":
		if a.copy = l.varIndex(n.text); a.copy < 0 {
			l.problem(n.line, path, "%s is not declared in item (%s)", clip(n.text), want)
			return a, false
		}
		return a, true
	case n.kind == mapNode && len(n.keys) == 1 && (n.keys[0] == "S" || n.keys[0] == "N"):
		a.typ = typeS
		if n.keys[0] == "N" {
			a.typ = typeN
		}
		t, ok := l.template(n.vals[0], join(path, n.keys[0]), vars, a.typ == typeS, a.typ == typeN)
		a.tmpl = t
		return a, ok
	}
	l.problem(n.line, path, "%s, got %s", want, n.describe())
	return a, false
}

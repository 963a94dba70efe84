package spec

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// A Projection is one projection of a spec. It implements
// projections.Projection and projections.Definer; it is immutable and safe
// for concurrent use.
type Projection struct {
	name     string
	types    []string
	typeAttr string
	keyAttrs []string // for error messages: the item's key attributes
	vars     []variable
	inExpr   int // how many of vars expressions read
	when     *expression
	checks   []check
	counters []counter
	rows     []row
	def      string
}

var (
	_ projections.Projection = (*Projection)(nil)
	_ projections.Definer    = (*Projection)(nil)
)

type check struct {
	when    *expression
	expr    *expression
	attr    int // the variable the check names as at fault; -1 for none
	message string
	field   string // "checks[2]"
}

type counter struct {
	when   *expression
	key    template
	shards int
	values []value // sorted by name
	field  string  // "counters[0]"
}

// value is one counter value: a literal added per item, or the exact
// value of an N or int attribute.
type value struct {
	name    string
	lit     decimal.Decimal
	v       int // the variable summed; -1 for a literal
	when    *expression
	missing *decimal.Decimal // what an absent or NULL optional variable adds; nil: an error
}

type row struct {
	when            *expression
	partition, sort template
	attrs           []rowAttr // sorted by name
	field           string    // "rows[0]"
}

// rowAttr is a row attribute: a copy of a variable's value, or an S or N
// built from a template.
type rowAttr struct {
	name string
	copy int // the variable copied; -1 for a template
	typ  attrType
	tmpl template
}

// expressions returns every expression of the projection.
func (p *Projection) expressions() []*expression {
	var out []*expression
	add := func(es ...*expression) {
		for _, e := range es {
			if e != nil {
				out = append(out, e)
			}
		}
	}
	add(p.when)
	for _, c := range p.checks {
		add(c.when, c.expr)
	}
	for _, c := range p.counters {
		add(c.when)
		for _, v := range c.values {
			add(v.when)
		}
	}
	for _, r := range p.rows {
		add(r.when)
	}
	return out
}

// Name returns the projection's name.
func (p *Projection) Name() string { return p.name }

// EntityTypes returns the entity types the projection reads, as the spec
// lists them.
func (p *Projection) EntityTypes() []string { return slices.Clone(p.types) }

// Definition returns the canonical JSON of the projection's normalised
// spec (see docs/projections-spec.md, "Identity").
func (p *Projection) Definition() string { return p.def }

// Contribute returns what item contributes, or a *projections.ItemError naming
// the projection, the item's keys and the attribute at fault.
func (p *Projection) Contribute(item pipeline.Item) (projections.Contribution, error) {
	c, err := p.contribute(item)
	if err != nil {
		return projections.Contribution{}, p.itemError(item, err)
	}
	return c, nil
}

// itemError makes err item's *projections.ItemError, naming p (a
// projection, or a transform's rewrite of one type) and the item's keys.
func (p *Projection) itemError(item pipeline.Item, err error) error {
	var ie *projections.ItemError
	if !errors.As(err, &ie) {
		ie = &projections.ItemError{Err: err}
	}
	ie.Projection = p.name
	sort := ""
	if len(p.keyAttrs) > 1 {
		sort = p.keyAttrs[1]
	}
	return ie.SetKeys(item, p.keyAttrs[0], sort)
}

// run holds one item's values while a Contribute reads it, and the meter
// of its expressions' evaluation.
type run struct {
	p    *Projection
	vals []val
	env  map[string]any
	m    meter
}

func (p *Projection) contribute(item pipeline.Item) (projections.Contribution, error) {
	var none projections.Contribution
	r, ok, err := p.begin(item)
	if err != nil || !ok {
		return none, err
	}
	var c projections.Contribution
	for i := range p.counters {
		out, ok, err := r.counter(&p.counters[i])
		if err != nil {
			return none, err
		}
		if ok && len(out.Values) > 0 {
			c.Counters = append(c.Counters, out)
		}
	}
	for i := range p.rows {
		out, ok, err := r.row(&p.rows[i])
		if err != nil {
			return none, err
		}
		if ok {
			c.Rows = append(c.Rows, out)
		}
	}
	return c, nil
}

// begin reads item for p: its entity type, its declared attributes, its
// checks, and whether p's condition (when) holds for it.
func (p *Projection) begin(item pipeline.Item) (*run, bool, error) {
	if err := p.entityType(item); err != nil {
		return nil, false, err
	}
	r := &run{p: p, vals: make([]val, len(p.vars)), env: make(map[string]any, p.inExpr+1)}
	r.env[meterName] = &r.m
	for i := range p.vars {
		v := &p.vars[i]
		var err error
		if r.vals[i], err = v.read(item); err != nil {
			return nil, false, err
		}
		if v.inExpr {
			r.env[v.name] = r.vals[i].native
		}
	}
	// The checks first: an item the projection's condition leaves out is
	// still checked, so that a value written otherwise than the checks
	// want ("SETTLED" for "settled") is an error, not left out silently.
	for i := range p.checks {
		if err := r.check(&p.checks[i]); err != nil {
			return nil, false, err
		}
	}
	ok, err := r.holds(p.when, "when")
	return r, ok, err
}

// entityType checks the item's type attribute: an S naming one of the
// projection's entity types.
func (p *Projection) entityType(item pipeline.Item) error {
	av := item[p.typeAttr]
	t, absent, _ := dynamoType(av)
	switch {
	case absent:
		return attrErr(p.typeAttr, projections.ErrMissing)
	case t != typeS:
		return attrErr(p.typeAttr, fmt.Errorf("want S, got %s", t))
	}
	if s := av.(*types.AttributeValueMemberS).Value; !slices.Contains(p.types, s) {
		return attrErr(p.typeAttr, fmt.Errorf("want %s, got %q", orList(p.types), clip(s)))
	}
	return nil
}

// holds evaluates an optional condition: no condition holds.
func (r *run) holds(e *expression, field string) (bool, error) {
	if e == nil {
		return true, nil
	}
	ok, err := e.eval(r.env, &r.m)
	if err != nil {
		return false, fmt.Errorf("%s: %s: %w", field, clip(e.src), err)
	}
	return ok, nil
}

func (r *run) check(c *check) error {
	ok, err := r.holds(c.when, c.field+".when")
	if err != nil || !ok {
		return err
	}
	pass, evalErr := c.expr.eval(r.env, &r.m)
	if evalErr == nil && pass {
		return nil
	}
	if le := (*limitError)(nil); errors.As(evalErr, &le) {
		// Not the item failing the check: the evaluation could not
		// finish.
		return fmt.Errorf("%s: %s: %w", c.field, clip(c.expr.src), le)
	}
	msg := c.message
	if msg == "" {
		msg = "check failed: " + clip(c.expr.src)
	}
	if c.attr >= 0 {
		msg += ", got " + show(r.vals[c.attr].av)
	}
	if evalErr != nil {
		msg += " (" + evalErr.Error() + ")"
	}
	if c.attr < 0 {
		return errors.New(msg)
	}
	return attrErr(r.p.vars[c.attr].attr, errors.New(msg))
}

// counter returns what counter ctr adds, and false if its condition
// does not hold.
func (r *run) counter(ctr *counter) (projections.Counter, bool, error) {
	if ok, err := r.holds(ctr.when, ctr.field+".when"); err != nil || !ok {
		return projections.Counter{}, false, err
	}
	key, err := r.render(ctr.key)
	if err != nil {
		return projections.Counter{}, false, err
	}
	out := projections.Counter{Key: key, Shards: ctr.shards, Values: make(map[string]decimal.Decimal, len(ctr.values))}
	for i := range ctr.values {
		v := &ctr.values[i]
		ok, err := r.holds(v.when, ctr.field+".values."+v.name+".when")
		if err != nil {
			return out, false, err
		}
		if !ok {
			continue
		}
		if v.v < 0 {
			out.Values[v.name] = v.lit
			continue
		}
		x := r.vals[v.v]
		switch {
		case x.present:
			out.Values[v.name] = x.d
		case v.missing != nil:
			out.Values[v.name] = *v.missing
		default:
			return out, false, attrErr(r.p.vars[v.v].attr, projections.ErrMissing)
		}
	}
	return out, true, nil
}

// row returns row rw, and false if its condition does not hold.
func (r *run) row(rw *row) (projections.Row, bool, error) {
	var out projections.Row
	ok, err := r.holds(rw.when, rw.field+".when")
	if err != nil || !ok {
		return out, false, err
	}
	if out.Partition, err = r.render(rw.partition); err != nil {
		return out, false, err
	}
	if out.Sort, err = r.render(rw.sort); err != nil {
		return out, false, err
	}
	out.Attrs = make(pipeline.Item, len(rw.attrs))
	if err := r.attributes(out.Attrs, rw.attrs, rw.field+".attributes"); err != nil {
		return out, false, err
	}
	return out, true, nil
}

// attributes builds attrs into out: copies of declared attributes (none
// for an optional one the item lacks), and S and N built from templates;
// field names them in errors.
func (r *run) attributes(out pipeline.Item, attrs []rowAttr, field string) error {
	for _, a := range attrs {
		if a.copy >= 0 {
			x := r.vals[a.copy]
			if x.av == nil {
				continue // an optional attribute the item lacks
			}
			c, err := cloneValue(x.av, 0)
			if err != nil {
				return attrErr(r.p.vars[a.copy].attr, err)
			}
			out[a.name] = c
			continue
		}
		s, err := r.render(a.tmpl)
		if err != nil {
			return err
		}
		if a.typ == typeN {
			if _, err := decimal.Parse(s); err != nil {
				return fmt.Errorf("%s.%s: %q is not a number", field, a.name, clip(s))
			}
			out[a.name] = &types.AttributeValueMemberN{Value: s}
			continue
		}
		out[a.name] = &types.AttributeValueMemberS{Value: s}
	}
	return nil
}

// render substitutes the item's values into t.
func (r *run) render(t template) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.v < 0 {
			b.WriteString(p.lit)
			continue
		}
		s, err := r.substitute(p, t.free)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// substitute returns one placeholder's text: non-empty and, unless its
// template is free, free of '#'.
func (r *run) substitute(p part, free bool) (string, error) {
	v := &r.p.vars[p.v]
	x := r.vals[p.v]
	if !x.present {
		return "", attrErr(v.attr, projections.ErrMissing)
	}
	var s string
	switch {
	case p.seg >= 0:
		segs := strings.Split(x.s, "#")
		if p.seg >= len(segs) {
			return "", attrErr(v.attr, fmt.Errorf("%s has no segment %d (it has %d)", strconv.Quote(clip(x.s)), p.seg, len(segs)))
		}
		s = segs[p.seg]
		if s == "" {
			return "", attrErr(v.attr, fmt.Errorf("segment %d of %s is empty", p.seg, strconv.Quote(clip(x.s))))
		}
		return s, nil
	case p.sortable:
		s, err := x.d.Sortable()
		if err != nil {
			return "", attrErr(v.attr, err)
		}
		return s, nil
	case p.width > 0:
		s = canonicalNumber(x.d)
		if strings.ContainsAny(s, "-.") || len(s) > p.width {
			return "", attrErr(v.attr, fmt.Errorf("want an integer from 0 to %s for {%s:0%d}, got %s", strings.Repeat("9", p.width), v.name, p.width, show(x.av)))
		}
		return strings.Repeat("0", p.width-len(s)) + s, nil
	case v.typ == typeS:
		s = x.s
	default:
		s = canonicalNumber(x.d)
	}
	switch {
	case s == "":
		return "", attrErr(v.attr, errors.New("empty"))
	case strings.Contains(s, "#") && !free:
		return "", attrErr(v.attr, fmt.Errorf("%s contains '#'", strconv.Quote(clip(s))))
	}
	return s, nil
}

// orList renders want as "A, B or C".
func orList(want []string) string {
	if len(want) < 2 {
		return strings.Join(want, "")
	}
	return strings.Join(want[:len(want)-1], ", ") + " or " + want[len(want)-1]
}

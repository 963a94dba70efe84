package spec

import (
	"bytes"
	"encoding/json"
	"slices"
)

// The canonical form of a projection, its Definition: JSON of everything
// that decides what it contributes, normalised. Object keys are sorted (by
// encoding/json), lists whose order does not matter (entity types,
// checks, counters, rows) are sorted, expressions are their tokens one
// space apart, templates are re-rendered, numbers are decimal strings and
// defaults are written out. What only labels an error (a check's message
// and attribute, keyAttributes) is left out.
type canonProjection struct {
	Spec          int                 `json:"spec"`
	Name          string              `json:"name"`
	EntityTypes   []string            `json:"entityTypes"`
	TypeAttribute string              `json:"typeAttribute"`
	Item          map[string]canonVar `json:"item"`
	When          string              `json:"when,omitempty"`
	Checks        []json.RawMessage   `json:"checks,omitempty"`
	Counters      []json.RawMessage   `json:"counters,omitempty"`
	Rows          []json.RawMessage   `json:"rows,omitempty"`
}

type canonVar struct {
	Attribute string `json:"attribute"`
	Type      string `json:"type"`
}

type canonCheck struct {
	When string `json:"when,omitempty"`
	Expr string `json:"expr"`
}

type canonCounter struct {
	When   string                `json:"when,omitempty"`
	Key    string                `json:"key"`
	Shards int                   `json:"shards,omitempty"`
	Values map[string]canonValue `json:"values"`
}

type canonValue struct {
	Literal string `json:"literal,omitempty"`
	Sum     string `json:"sum,omitempty"`
	When    string `json:"when,omitempty"`
	Missing string `json:"missing,omitempty"`
}

type canonRow struct {
	When       string                  `json:"when,omitempty"`
	Partition  string                  `json:"partition"`
	Sort       string                  `json:"sort"`
	Attributes map[string]canonRowAttr `json:"attributes,omitempty"`
}

type canonRowAttr struct {
	Copy string  `json:"copy,omitempty"`
	S    *string `json:"S,omitempty"` // a pointer: an empty S template is written
	N    string  `json:"N,omitempty"`
}

func canonExpr(e *expression) string {
	if e == nil {
		return ""
	}
	return e.canon
}

// canonical returns p's Definition.
func (p *Projection) canonical() string {
	c := canonProjection{
		Spec:          specVersion,
		Name:          p.name,
		EntityTypes:   slices.Sorted(slices.Values(p.types)),
		TypeAttribute: p.typeAttr,
		Item:          map[string]canonVar{},
		When:          canonExpr(p.when),
	}
	for _, v := range p.vars {
		t := v.typ.String()
		if v.optional {
			t += "?"
		}
		c.Item[v.name] = canonVar{Attribute: v.attr, Type: t}
	}
	for _, ck := range p.checks {
		c.Checks = append(c.Checks, marshal(canonCheck{When: canonExpr(ck.when), Expr: canonExpr(ck.expr)}))
	}
	for _, ctr := range p.counters {
		cc := canonCounter{When: canonExpr(ctr.when), Key: ctr.key.canonical(p.vars), Shards: ctr.shards, Values: map[string]canonValue{}}
		for _, v := range ctr.values {
			cv := canonValue{When: canonExpr(v.when)}
			if v.v < 0 {
				cv.Literal = v.lit.String()
			} else {
				cv.Sum = p.vars[v.v].name
			}
			if v.missing != nil {
				cv.Missing = v.missing.String()
			}
			cc.Values[v.name] = cv
		}
		c.Counters = append(c.Counters, marshal(cc))
	}
	for _, r := range p.rows {
		cr := canonRow{When: canonExpr(r.when), Partition: r.partition.canonical(p.vars), Sort: r.sort.canonical(p.vars)}
		if len(r.attrs) > 0 {
			cr.Attributes = map[string]canonRowAttr{}
		}
		for _, a := range r.attrs {
			cr.Attributes[a.name] = canonAttr(a, p.vars)
		}
		c.Rows = append(c.Rows, marshal(cr))
	}
	for _, list := range [][]json.RawMessage{c.Checks, c.Counters, c.Rows} {
		slices.SortFunc(list, func(a, b json.RawMessage) int { return bytes.Compare(a, b) })
	}
	return string(marshal(c))
}

// canonAttr is a row attribute's canonical form.
func canonAttr(a rowAttr, vars []variable) canonRowAttr {
	var ca canonRowAttr
	switch {
	case a.copy >= 0:
		ca.Copy = vars[a.copy].name
	case a.typ == typeN:
		ca.N = a.tmpl.canonical(vars)
	default:
		s := a.tmpl.canonical(vars)
		ca.S = &s
	}
	return ca
}

// marshal encodes v as JSON without HTML escaping. The canonical types
// always encode.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A node is one value of a spec document, from YAML or JSON alike: a
// mapping, a sequence or a scalar, with the line it starts on.
type node struct {
	kind nodeKind
	// tag is a scalar's resolved type: "str", "int", "float", "bool",
	// "null", "timestamp" or "binary".
	tag  string
	text string // a scalar's text: unquoted, unescaped
	line int
	// keys and vals are a mapping's entries, in document order, keys
	// unique.
	keys  []string
	kline []int // the line of each key
	vals  []*node
	items []*node // a sequence's items
	// index is the position of each key, once a mapping has many: while
	// it is read, so that a mapping of many keys is not quadratic.
	index map[string]int
}

type nodeKind uint8

const (
	scalarNode nodeKind = iota
	mapNode
	seqNode
)

func (k nodeKind) String() string {
	switch k {
	case mapNode:
		return "a mapping"
	case seqNode:
		return "a list"
	}
	return "a scalar"
}

// describe names what n is, for "want X, got Y" messages.
func (n *node) describe() string {
	if n.kind != scalarNode {
		return n.kind.String()
	}
	switch n.tag {
	case "str":
		return fmt.Sprintf("the string %q", clip(n.text))
	case "null":
		return "null"
	}
	return fmt.Sprintf("%s %s", n.tag, clip(n.text))
}

// Limits on a document, far beyond any real spec (the stock spec has 5 KB
// and 300 values), so that a hostile file (a "billion laughs" of YAML
// aliases, a deeply nested list) costs little: docs/projections-spec.md,
// "Cost", gives what the largest accepted costs to load.
const (
	// maxFileBytes is the largest spec file, in bytes.
	maxFileBytes = 256 << 10
	// maxNodes bounds the values of a document, each alias counting the
	// values it stands for.
	maxNodes = 1 << 16
	maxDepth = 64
)

// A syntaxError is a document that is not well-formed YAML or JSON.
type syntaxError struct {
	line int
	path string // the field at fault, if known
	msg  string
}

func (e *syntaxError) Error() string { return e.msg }

// parseYAML reads a YAML document (one; a stream of several is an error).
// Keys given twice are returned as dups (the first one counts); only a
// document that cannot be read at all is an error.
func parseYAML(data []byte) (root *node, dups []*syntaxError, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, &syntaxError{msg: "the document is empty"}
		}
		return nil, nil, yamlError(err)
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil:
		return nil, nil, &syntaxError{line: more.Line, msg: "a second YAML document: a spec is one document"}
	case !errors.Is(err, io.EOF):
		return nil, nil, yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil, &syntaxError{line: doc.Line, msg: "not a YAML document"}
	}
	c := yamlConv{anchors: map[*yaml.Node]anchored{}}
	root, err = c.conv(doc.Content[0], 0, "")
	return root, c.dups, err
}

// anchored is a value with an anchor, converted once: every alias to it
// shares it (the loader never changes a node), and counts its values and
// depth without converting it again.
type anchored struct {
	n             *node
	values, depth int
}

// yamlError turns the library's error, "yaml: line 3: did not find
// expected key", into a syntaxError with its line.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	return &syntaxError{line: line, msg: msg}
}

type yamlConv struct {
	count   int // values converted, or stood for by an alias
	deepest int // the deepest depth reached
	dups    []*syntaxError
	anchors map[*yaml.Node]anchored
}

func (c *yamlConv) conv(y *yaml.Node, depth int, path string) (*node, error) {
	if y.Anchor == "" || y.Kind == yaml.AliasNode {
		return c.convert(y, depth, path)
	}
	count, deepest := c.count, c.deepest
	c.deepest = depth
	n, err := c.convert(y, depth, path)
	if err != nil {
		return nil, err
	}
	c.anchors[y] = anchored{n: n, values: c.count - count, depth: c.deepest - depth}
	c.deepest = max(c.deepest, deepest)
	return n, nil
}

func (c *yamlConv) convert(y *yaml.Node, depth int, path string) (*node, error) {
	c.count++
	if err := c.limits(y, depth); err != nil {
		return nil, err
	}
	switch y.Kind {
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, &syntaxError{line: y.Line, msg: "an alias without its anchor"}
		}
		a, ok := c.anchors[y.Alias]
		if !ok {
			// An alias to a value not converted yet: there is none in a
			// document the YAML library accepts (an alias follows its
			// anchor, and an anchor within itself is an error).
			return nil, &syntaxError{line: y.Line, msg: "an alias to a value that does not precede it"}
		}
		c.count += a.values - 1
		if err := c.limits(y, depth+a.depth); err != nil {
			return nil, err
		}
		cp := *a.n
		cp.line = y.Line
		return &cp, nil
	case yaml.ScalarNode:
		tag := strings.TrimPrefix(y.ShortTag(), "!!")
		switch tag {
		case "str", "int", "float", "bool", "null", "timestamp", "binary":
		default:
			return nil, &syntaxError{line: y.Line, msg: fmt.Sprintf("tag %s is not supported in a spec", y.Tag)}
		}
		return &node{kind: scalarNode, tag: tag, text: y.Value, line: y.Line}, nil
	case yaml.SequenceNode:
		n := &node{kind: seqNode, line: y.Line}
		for i, it := range y.Content {
			v, err := c.conv(it, depth+1, index(path, i))
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		return n, nil
	case yaml.MappingNode:
		n := &node{kind: mapNode, line: y.Line}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				return nil, &syntaxError{line: k.Line, msg: "merge keys (<<) are not supported in a spec: write the fields out"}
			}
			if k.Kind != yaml.ScalarNode {
				return nil, &syntaxError{line: k.Line, msg: "a mapping key must be a scalar"}
			}
			val, err := c.conv(v, depth+1, join(path, k.Value))
			if err != nil {
				return nil, err
			}
			if dup := n.add(path, k.Value, k.Line, val); dup != nil {
				c.dups = append(c.dups, dup)
			}
		}
		return n, nil
	}
	return nil, &syntaxError{line: y.Line, msg: "unexpected YAML node"}
}

// limits reports a document that goes over maxNodes or maxDepth.
func (c *yamlConv) limits(y *yaml.Node, depth int) error {
	c.deepest = max(c.deepest, depth)
	if c.count > maxNodes {
		return &syntaxError{line: y.Line, msg: fmt.Sprintf("more than %d values, aliases counting the values they stand for (are aliases expanding without end?)", maxNodes)}
	}
	if depth > maxDepth {
		return &syntaxError{line: y.Line, msg: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	return nil
}

// add appends an entry to mapping n. A key given twice is not added: the
// problem is returned.
func (n *node) add(path, key string, line int, val *node) *syntaxError {
	const indexFrom = 16
	if n.index == nil && len(n.keys) >= indexFrom {
		n.index = make(map[string]int, 2*len(n.keys))
		for i, k := range n.keys {
			n.index[k] = i
		}
	}
	first := -1
	if n.index != nil {
		if i, ok := n.index[key]; ok {
			first = i
		}
	} else {
		first = slices.Index(n.keys, key)
	}
	if first >= 0 {
		return &syntaxError{line: line, path: join(path, key), msg: fmt.Sprintf("given twice (first on line %d)", n.kline[first])}
	}
	if n.index != nil {
		n.index[key] = len(n.keys)
	}
	n.keys = append(n.keys, key)
	n.kline = append(n.kline, line)
	n.vals = append(n.vals, val)
	return nil
}

// parseJSON reads a JSON document with encoding/json, keeping lines and
// numbers as written.
// Keys given twice are returned as dups, as by parseYAML.
func parseJSON(data []byte) (root *node, dups []*syntaxError, err error) {
	p := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, &syntaxError{msg: "the document is empty"}
	}
	root, err = p.value(0, "")
	if err != nil {
		return nil, p.dups, err
	}
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, p.dups, &syntaxError{line: p.line(), msg: "more after the document's end"}
	}
	return root, p.dups, nil
}

type jsonParser struct {
	data  []byte
	dec   *json.Decoder
	count int
	dups  []*syntaxError
}

// line is the line of the last token read: the line its last byte is on
// (a JSON token never spans lines).
func (p *jsonParser) line() int {
	off := min(max(int(p.dec.InputOffset())-1, 0), len(p.data))
	return 1 + bytes.Count(p.data[:off], []byte("\n"))
}

func (p *jsonParser) err(err error) error {
	if errors.Is(err, io.EOF) {
		return &syntaxError{line: p.line(), msg: "unexpected end of the document"}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := min(int(se.Offset), len(p.data))
		return &syntaxError{line: 1 + bytes.Count(p.data[:off], []byte("\n")), msg: se.Error()}
	}
	return &syntaxError{line: p.line(), msg: err.Error()}
}

func (p *jsonParser) value(depth int, path string) (*node, error) {
	p.count++
	if p.count > maxNodes {
		return nil, &syntaxError{line: p.line(), msg: fmt.Sprintf("more than %d values", maxNodes)}
	}
	if depth > maxDepth {
		return nil, &syntaxError{line: p.line(), msg: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.err(err)
	}
	line := p.line()
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: mapNode, line: line}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.err(err)
				}
				key, _ := kt.(string) // encoding/json returns object keys as strings
				kline := p.line()
				v, err := p.value(depth+1, join(path, key))
				if err != nil {
					return nil, err
				}
				if dup := n.add(path, key, kline, v); dup != nil {
					p.dups = append(p.dups, dup)
				}
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.err(err)
			}
			return n, nil
		case '[':
			n := &node{kind: seqNode, line: line}
			for p.dec.More() {
				v, err := p.value(depth+1, index(path, len(n.items)))
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.err(err)
			}
			return n, nil
		}
	case string:
		return &node{kind: scalarNode, tag: "str", text: t, line: line}, nil
	case json.Number:
		tag := "int"
		if strings.ContainsAny(string(t), ".eE") {
			tag = "float"
		}
		return &node{kind: scalarNode, tag: tag, text: string(t), line: line}, nil
	case bool:
		return &node{kind: scalarNode, tag: "bool", text: fmt.Sprint(t), line: line}, nil
	case nil:
		return &node{kind: scalarNode, tag: "null", text: "null", line: line}, nil
	}
	return nil, &syntaxError{line: line, msg: fmt.Sprintf("unexpected JSON token %v", tok)}
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

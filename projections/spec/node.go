package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Limits on a document, far beyond any real spec, so that a hostile file
// (a "billion laughs" of YAML aliases, a deeply nested list) costs little.
const (
	maxNodes = 1 << 20
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
	c := yamlConv{}
	root, err = c.conv(doc.Content[0], 0, "")
	return root, c.dups, err
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
	count int
	dups  []*syntaxError
}

func (c *yamlConv) conv(y *yaml.Node, depth int, path string) (*node, error) {
	c.count++
	if c.count > maxNodes {
		return nil, &syntaxError{line: y.Line, msg: fmt.Sprintf("more than %d values (are aliases expanding without end?)", maxNodes)}
	}
	if depth > maxDepth {
		return nil, &syntaxError{line: y.Line, msg: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	switch y.Kind {
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, &syntaxError{line: y.Line, msg: "an alias without its anchor"}
		}
		n, err := c.conv(y.Alias, depth+1, path)
		if err != nil {
			return nil, err
		}
		cp := *n
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

// add appends an entry to mapping n. A key given twice is not added: the
// problem is returned.
func (n *node) add(path, key string, line int, val *node) *syntaxError {
	for i, k := range n.keys {
		if k == key {
			return &syntaxError{line: line, path: join(path, key), msg: fmt.Sprintf("given twice (first on line %d)", n.kline[i])}
		}
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

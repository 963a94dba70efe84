package repartition

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// TransformFunc rewrites one item of an entity type during a repartition.
// It returns the items to write in its place: none drops it, one rewrites
// it (renamed attributes, rebuilt keys), several split it. Each returned
// item is partitioned by its own entity type, so a transform may also
// retype. It must be deterministic and must not keep or modify item (build
// new maps; attribute values may be shared). An error fails the run, naming
// the file and line.
type TransformFunc func(item pipeline.Item) ([]pipeline.Item, error)

// Transform is a named set of per-entity-type rewrites. Types it does not
// name pass through unchanged (and byte for byte).
type Transform struct {
	Name string
	// Doc says what the transform does, for `tributary repartition -h`.
	Doc    string
	ByType map[string]TransformFunc
}

// Types returns the entity types the transform rewrites, sorted.
func (t *Transform) Types() []string { return slices.Sorted(maps.Keys(t.ByType)) }

// Registry holds the transforms a command or function can run, by name.
// Registration happens explicitly from main (no init side effects), so
// tests build exactly the set they need.
type Registry struct {
	byName map[string]*Transform
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]*Transform{}} }

// Register adds t. It panics on a nil or unnamed transform, one with no
// rewrites, or a duplicate name: those are wiring mistakes.
func (r *Registry) Register(t *Transform) {
	switch {
	case t == nil || t.Name == "":
		panic("repartition: Register of a nil or unnamed transform")
	case len(t.ByType) == 0:
		panic("repartition: transform " + t.Name + " rewrites no entity type")
	case r.byName[t.Name] != nil:
		panic("repartition: transform " + t.Name + " registered twice")
	}
	for typ, fn := range t.ByType {
		if fn == nil {
			panic("repartition: transform " + t.Name + ": nil function for " + typ)
		}
	}
	r.byName[t.Name] = t
}

// Lookup returns the named transform, or an error listing the known ones.
func (r *Registry) Lookup(name string) (*Transform, error) {
	if t := r.byName[name]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("repartition: no transform %q (known: %s)", name, strings.Join(r.Names(), ", "))
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.byName)) }

// Transforms returns the registered transforms, sorted by name.
func (r *Registry) Transforms() []*Transform {
	out := make([]*Transform, 0, len(r.byName))
	for _, n := range r.Names() {
		out = append(out, r.byName[n])
	}
	return out
}

// DefaultTransforms returns a registry holding the transforms Tributary
// ships: CommentsTable.
func DefaultTransforms() *Registry {
	r := NewRegistry()
	r.Register(CommentsTable())
	return r
}

// CommentsTable is the shipped example transform, "comments-table": it moves
// every Comment item of the documents domain from its place in the
// workspace's item collection (PK=WS#<ws>, SK=DOC#<doc>#CMT#<c>) to a key
// of its own for a comments table, PK=DOC#<doc>, SK=CMT#<c>. The document
// and comment IDs come from the docId and commentId attributes, or else from
// the old sort key. The old keys are kept as workspacePK and sourceSK, so
// nothing is lost; every other attribute is copied as it is.
func CommentsTable() *Transform {
	return &Transform{
		Name: "comments-table",
		Doc:  "move Comment items to PK=DOC#<doc>, SK=CMT#<comment> for a comments table of their own",
		ByType: map[string]TransformFunc{
			"Comment": moveComment,
		},
	}
}

func moveComment(item pipeline.Item) ([]pipeline.Item, error) {
	doc, cmt := stringAttr(item, "docId"), stringAttr(item, "commentId")
	sk := stringAttr(item, "SK")
	if doc == "" || cmt == "" {
		// SK = DOC#<doc>#CMT#<c>
		d, c, ok := strings.Cut(strings.TrimPrefix(sk, "DOC#"), "#CMT#")
		if !ok || !strings.HasPrefix(sk, "DOC#") || d == "" || c == "" {
			return nil, errors.New("comments-table: Comment has no docId/commentId and its SK is not DOC#<doc>#CMT#<comment>")
		}
		if doc == "" {
			doc = d
		}
		if cmt == "" {
			cmt = c
		}
	}
	out := make(pipeline.Item, len(item)+2)
	for k, v := range item {
		out[k] = v
	}
	if pk, ok := item["PK"]; ok {
		out["workspacePK"] = pk
	}
	if v, ok := item["SK"]; ok {
		out["sourceSK"] = v
	}
	out["PK"] = &types.AttributeValueMemberS{Value: "DOC#" + doc}
	out["SK"] = &types.AttributeValueMemberS{Value: "CMT#" + cmt}
	return []pipeline.Item{out}, nil
}

func stringAttr(item pipeline.Item, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

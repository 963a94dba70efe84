package projections

import (
	"maps"
	"slices"

	"github.com/tributary/tributary/pipeline"
)

// TransformFunc rewrites one item of an entity type: it returns the items
// to write in its place. None drops it, one rewrites it (renamed
// attributes, rebuilt keys), several split it; each returned item keeps or
// names its own entity type. It must be deterministic and must not keep or
// modify item (build new maps; attribute values may be shared). An error
// marks an item the transform cannot take, named by the caller with the
// item's place (an export's file and line, a record).
type TransformFunc func(item pipeline.Item) ([]pipeline.Item, error)

// Transform is a named set of per-entity-type rewrites of a table's items,
// for a new key design: a repartition of an export runs it, so that the
// result can be imported into a table of that design. Types it does not
// name pass through unchanged (and byte for byte).
type Transform struct {
	Name string
	// Doc says what the transform does, for `tributary repartition -h`.
	Doc    string
	ByType map[string]TransformFunc
}

// Types returns the entity types the transform rewrites, sorted.
func (t *Transform) Types() []string { return slices.Sorted(maps.Keys(t.ByType)) }

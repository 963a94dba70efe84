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
// marks an item the transform cannot take; the caller names the transform
// and the item's place (an export's file and line, a record), so the
// error says what is wrong with the item and names neither.
type TransformFunc func(item pipeline.Item) ([]pipeline.Item, error)

// Transform is a named set of per-entity-type rewrites of a table's items,
// for a new key design: a repartition of an export runs it, so that the
// result can be imported into a table of that design, and a remodel
// (internal/capabilities/remodel) keeps a target table of that design equal to it,
// live. In a repartition, types it does not name pass through unchanged
// (and byte for byte); in a remodel, they are not part of the target
// unless CopyOthers says so.
type Transform struct {
	Name string
	// Doc says what the transform does, for `tributary repartition -h`.
	Doc    string
	ByType map[string]TransformFunc

	// The fields below are a remodel's; a repartition reads none of them.

	// Keys are the target table's key attributes, "NAME" or "NAME:TYPE"
	// (S, N or B; S when left out), the partition key's first: what the
	// items the transform returns are keyed by. Empty: the target table's
	// own key schema (a DynamoDB table says it), or else the table's key
	// attributes (the environment's Schema), as S.
	Keys []string
	// CopyOthers copies the items of the types ByType does not name (and
	// items without a type) into the target as they are.
	CopyOthers bool
	// TTLAttribute is the target items' time-to-live attribute, epoch
	// seconds, when the target keeps one: a check of the target leaves
	// out the items whose time has passed, which the target's own TTL may
	// have removed. Empty: the source table's (the environment's Schema).
	TTLAttribute string
	// Version is part of the transform's identity, which a target table
	// records: change it whenever what the transform makes of some item
	// changes, so that a target built by the old one is refused rather
	// than mixed (a spec's transforms are identified by their canonical
	// form instead).
	Version string
}

// Types returns the entity types the transform rewrites, sorted.
func (t *Transform) Types() []string { return slices.Sorted(maps.Keys(t.ByType)) }

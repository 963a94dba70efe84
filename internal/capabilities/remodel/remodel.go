// Package remodel keeps a table of a new key design — the target — equal
// to a transform of a live table's items, exactly once: backfilled from an
// export, then kept current from the table's stream, and checked against
// the export before a switch (docs/remodel.md).
//
// A remodel is the projection engine with a transform in place of the
// projections. A Remodel is a projections.Projection whose rows are the
// target items: each source item contributes the items its transform
// makes of it, keyed by the target's key (target.Key), and the
// engine's per-item ledger fences every change by its stream position or
// version, never by wall-clock time. So a change that moves an item's
// target key removes the old target item, a removal removes every target
// item of the old image, and retries, redeliveries, the Kinesis form's
// duplicates and reordering change nothing. Two source items that map to
// one target key are the engine's row collision: a permanent failure
// naming both, never an overwrite, and a retryable one while the claim
// may be transient (Config.ClaimWait).
//
// The target items hold nothing but what the transform made: the ledger
// entries and the claims (which source item owns each target key) live in
// a store of their own beside the target (a driver target store:
// infra/boltstore.OpenTarget, infra/dynamostore.NewTarget), written in the
// same transaction as the target items.
package remodel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
)

// A Remodel is one transform of a table's items into a target table: a
// projections.Projection (with projections.Definer, and the engine's
// OthersReader and ClaimDescriber) whose rows are the target items. It is immutable and
// safe for concurrent use.
type Remodel struct {
	t        *projections.Transform
	key      target.Key
	typeAttr string
	ttlAttr  string
	// keyAttrs are the source table's key attributes, which name an item
	// in errors.
	keyAttrs []string
	def      string
}

var (
	_ projections.Projection = (*Remodel)(nil)
	_ projections.Definer    = (*Remodel)(nil)
	_ engine.OthersReader    = (*Remodel)(nil)
	_ engine.ClaimDescriber  = (*Remodel)(nil)
)

// New returns the remodel of t into a target table keyed by key, for a
// source table whose items are read by schema (its type attribute, and
// its TTL attribute where t names none).
func New(t *projections.Transform, key target.Key, schema pipeline.Schema) (*Remodel, error) {
	if t == nil || t.Name == "" {
		return nil, errors.New("remodel: a transform without a name")
	}
	if len(t.ByType) == 0 && !t.CopyOthers {
		return nil, fmt.Errorf("remodel: transform %s rewrites no entity type and copies none", t.Name)
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("remodel: transform %s: the target's key: %w", t.Name, err)
	}
	schema = schema.WithDefaults()
	r := &Remodel{t: t, key: key, typeAttr: schema.TypeAttribute, ttlAttr: t.TTLAttribute, keyAttrs: schema.KeyAttributes}
	if r.ttlAttr == "" {
		r.ttlAttr = schema.TTLAttribute
	}
	var b strings.Builder
	fmt.Fprintf(&b, "remodel 1\ntransform %q version %q\nkeys %s\ntype attribute %q\nttl attribute %q\ncopy others %v\n",
		t.Name, t.Version, key, r.typeAttr, r.ttlAttr, t.CopyOthers)
	if t.Version == "" {
		fmt.Fprintf(&b, "doc %q\n", t.Doc)
	}
	r.def = b.String()
	return r, nil
}

// ResolveKey returns the target's key schema: the transform's Keys when
// it names them (they must be table's, when table is not zero: a DynamoDB
// target says its own), else table's, else the source table's key
// attributes (schema) as S.
func ResolveKey(t *projections.Transform, table target.Key, schema pipeline.Schema) (target.Key, error) {
	switch {
	case len(t.Keys) > 0:
		k, err := target.NewKey(t.Keys...)
		if err != nil {
			return k, fmt.Errorf("transform %s: keys: %w", t.Name, err)
		}
		if table.Partition.Name != "" && k != table {
			return k, fmt.Errorf("transform %s makes items keyed %s, but the target table's key is %s", t.Name, k, table)
		}
		return k, nil
	case table.Partition.Name != "":
		return table, table.Validate()
	}
	return target.NewKey(schema.WithDefaults().KeyAttributes...)
}

// Name is the transform's name: the name of the remodel's projection, and
// of its target items' RowRefs.
func (r *Remodel) Name() string { return r.t.Name }

// EntityTypes returns the entity types the transform rewrites.
func (r *Remodel) EntityTypes() []string { return r.t.Types() }

// ReadsOtherTypes reports whether the remodel copies the items of the
// types the transform does not name.
func (r *Remodel) ReadsOtherTypes() bool { return r.t.CopyOthers }

// Definition identifies what the remodel makes of items: the transform's
// name and Version (its Doc when it has none), the target's key, the
// attributes it reads and whether it copies the other types.
func (r *Remodel) Definition() string { return r.def }

// Key returns the target's key schema.
func (r *Remodel) Key() target.Key { return r.key }

// TTLAttribute returns the target items' TTL attribute.
func (r *Remodel) TTLAttribute() string { return r.ttlAttr }

// TypeAttribute returns the source items' type attribute.
func (r *Remodel) TypeAttribute() string { return r.typeAttr }

// transform returns the transform.
func (r *Remodel) transform() *projections.Transform { return r.t }

// Set returns the projection set of the remodel alone, which a target
// store's marker records.
func (r *Remodel) Set() *projections.Set { return projections.MustSet(r) }

// Open makes the engine that keeps target t equal to the remodel of the
// changes it is given (engine.Open, which marks an empty target for
// the remodel and refuses one another remodel or transform built). Items
// of the types the remodel does not take are skipped and counted without
// a log line.
func (r *Remodel) Open(ctx context.Context, t driver.Table, cfg engine.Config) (*engine.Engine, error) {
	e, err := engine.Open(ctx, t, r.Set(), engineConfig(cfg))
	if mismatch, ok := errors.AsType[*engine.SetMismatchError](err); ok {
		return nil, r.refusal(mismatch)
	}
	return e, err
}

// refusal says why a target is not this remodel's, in a remodel's terms
// (the projection-set marker's advice is for aggregate tables).
func (r *Remodel) refusal(m *engine.SetMismatchError) error {
	var built string
	switch {
	case m.Table == nil:
		built = "it holds items but no remodel's marker: a table of its own, or one written by another tool"
	default:
		ids := make([]string, len(m.Table.Set))
		for i, id := range m.Table.Set {
			ids[i] = id.String()
		}
		built = "it is the target of " + strings.Join(ids, ", ")
		for _, id := range m.Table.Set {
			if id.Name == r.Name() {
				built += " (this transform as it was, with another definition: a changed transform, or other attributes: --type-attribute, --ttl-attribute, --key-attributes)"
			}
		}
	}
	return fmt.Errorf("%w: not a target of transform %s: %s; remodel into a new, empty target (docs/remodel.md)", engine.ErrProjectionSet, r.Set().IDs()[0], built)
}

// engineConfig is cfg for a remodel's engine: the types the remodel does
// not take are skipped without a log line each.
func engineConfig(cfg engine.Config) engine.Config {
	cfg.Policy = pipeline.IgnoreUnknown
	return cfg
}

// Handler returns e, the remodel's engine, as the handler a processor
// runs (pipeline.NewKinesisProcessor): one that says the entity types it
// reads, so that records of the others are counted skipped; but a remodel
// that copies the other types reads them all, and says none.
func (r *Remodel) Handler(e *engine.Engine) pipeline.BatchHandler {
	if r.t.CopyOthers {
		return allTypes{e}
	}
	return e
}

// allTypes is an engine that does not say which entity types it reads.
type allTypes struct{ e *engine.Engine }

func (a allTypes) HandleBatch(ctx context.Context, changes []pipeline.Change) error {
	return a.e.HandleBatch(ctx, changes)
}

func (a allTypes) ImageNeed() pipeline.ImageNeed { return a.e.ImageNeed() }

// Apply returns the target items the transform makes of a source item
// (none for an item the remodel does not take), each checked: its key
// attributes the target's, within DynamoDB's limits, and the item one
// DynamoDB can store.
func (r *Remodel) Apply(item pipeline.Item) ([]pipeline.Item, error) {
	rows, err := r.rows(item)
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Item, len(rows))
	for i, row := range rows {
		out[i] = row.Attrs
	}
	return out, nil
}

// Contribute returns the target items the transform makes of item as
// rows (projections.Row: the key's text in Partition and Sort, the whole
// item in Attrs, its TTL in Expires).
func (r *Remodel) Contribute(item pipeline.Item) (projections.Contribution, error) {
	rows, err := r.rows(item)
	return projections.Contribution{Rows: rows}, err
}

func (r *Remodel) rows(item pipeline.Item) ([]projections.Row, error) {
	typ := ""
	if s, ok := item[r.typeAttr].(*types.AttributeValueMemberS); ok {
		typ = s.Value
	}
	fn, named := r.t.ByType[typ]
	var outs []pipeline.Item
	switch {
	case named:
		var err error
		if outs, err = fn(item); err != nil {
			return nil, r.itemError(item, err)
		}
	case r.t.CopyOthers:
		outs = []pipeline.Item{item}
	default:
		return nil, nil
	}
	rows := make([]projections.Row, 0, len(outs))
	for i, out := range outs {
		ref, err := r.key.Ref(r.t.Name, out)
		if err == nil {
			err = checkItem(out)
		}
		if err != nil {
			what := "the target item"
			if len(outs) > 1 {
				what = fmt.Sprintf("target item %d of %d", i+1, len(outs))
			}
			return nil, r.itemError(item, fmt.Errorf("%s: %w", what, err))
		}
		rows = append(rows, projections.Row{Partition: ref.Partition, Sort: ref.Sort, Attrs: out, Expires: expiry(out[r.ttlAttr])})
	}
	return rows, nil
}

// itemError is err, met rewriting item, as the *projections.ItemError
// that names the transform (the remodel's projection) and the item once,
// which the engine passes on as it is: "comments-table: item
// WS#a/DOC#d1#CMT#c1: SK: want …". A transform's own ItemError (a
// declared one's names the item and the attribute) is completed.
func (r *Remodel) itemError(item pipeline.Item, err error) error {
	ie, ok := err.(*projections.ItemError)
	switch {
	case ok && ie.Projection == r.t.Name:
		return ie
	case ok && ie.Projection == "":
		c := *ie
		ie = &c
	default:
		ie = &projections.ItemError{Err: err}
	}
	ie.Projection = r.t.Name
	if ie.PK == "" && ie.SK == "" && len(r.keyAttrs) > 0 {
		sort := ""
		if len(r.keyAttrs) > 1 {
			sort = r.keyAttrs[1]
		}
		ie = ie.SetKeys(item, r.keyAttrs[0], sort)
	}
	return ie
}

// expiry reads a TTL attribute as DynamoDB's TTL does: a number of epoch
// seconds (its whole part); anything else is no expiry.
func expiry(av types.AttributeValue) int64 {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	d, err := decimal.Parse(n.Value)
	if err != nil {
		return 0
	}
	s := d.Normal().String()
	if whole, _, found := strings.Cut(s, "."); found {
		s = whole
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// DescribeKey renders a target item's key for people, as
// pipeline.KeyString renders a source item's: "PK=DOC#d1 SK=CMT#c1".
func (r *Remodel) DescribeKey(ref driver.RowRef) string {
	s := r.key.Partition.Name + "=" + ref.Partition
	if r.key.HasSort() {
		s += " " + r.key.Sort.Name + "=" + ref.Sort
	}
	return s
}

// DescribeClaim names a target item two source items claim, and says
// what to do: the transform maps both to one key.
func (r *Remodel) DescribeClaim(ref driver.RowRef) (row, hint string) {
	return fmt.Sprintf("transform %s, target item %s", r.t.Name, r.DescribeKey(ref)),
		"two live source items that the transform maps to one target key collide: no target item is written or removed on another source item's behalf. Change the transform so that the target key identifies its source item, or the items, then redrive the failed record"
}

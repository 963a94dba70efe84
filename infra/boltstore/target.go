package boltstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	bolt "go.etcd.io/bbolt"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
	"github.com/tributary/tributary/projections/driver/target"
)

// A TargetStore is the embedded store of a remodel's target (driver's
// target store; docs/remodel.md): the target items, exactly what the
// transform made of the source's, and beside them, in the same file, what
// exactly-once needs: the source items' ledger entries and, per target
// key, the claim naming the source item that owns it (kept as the
// aggregate store keeps a row with an owner and no attributes,
// layout.ClaimRef). One bbolt transaction writes all three, as one
// TransactWriteItems writes the DynamoDB target and its ledger table.
//
// The file records the remodel's name and the target's key schema when it
// is created, and refuses another. It is a file of its own, not an
// aggregate store's: OpenTarget refuses a file an aggregate store wrote,
// and Open one a target store wrote is read as an aggregate store with no
// aggregates.
//
//	items   uvarint(len(p)) p s  → the item as DynamoDB JSON
//	target  "meta"               → {"name": …, "key": …} (JSON)
//
// where p is the item's partition key as text (target.Key.Ref) and s
// its sort key in an order-preserving form (an S as it is, an N in
// decimal's sortable encoding, a B as its bytes), so that QueryRows reads
// a partition in the target's sort order.
type TargetStore struct {
	target.Base
	st   *Store
	name string
}

var (
	_ driver.Table              = (*TargetStore)(nil)
	_ driver.KeyLimiter         = (*TargetStore)(nil)
	_ driver.NameReserver       = (*TargetStore)(nil)
	_ driver.ActionCounter      = (*TargetStore)(nil)
	_ driver.WriteUnitEstimator = (*TargetStore)(nil)
	_ driver.GroupCommitter     = (*TargetStore)(nil)
)

var (
	bucketItems  = []byte("items")
	bucketTarget = []byte("target")
	metaKey      = []byte("meta")
)

// targetMeta is what a target file records of its target.
type targetMeta struct {
	Name string     `json:"name"`
	Key  target.Key `json:"key"`
}

// errNoTarget is returned by OpenTarget when asked to open a target as it
// was recorded and the file records none.
var errNoTarget = errors.New("boltstore: no target store here")

// OpenTarget opens (creating it) the target store file at path for the
// remodel name, keyed by key. A file that records another name or key is
// refused. An empty name and a zero key open the target the file records
// (errNoTarget when it records none): for readers.
func OpenTarget(path, name string, key target.Key, opts ...Option) (*TargetStore, error) {
	st, err := Open(path, opts...)
	if err != nil {
		return nil, err
	}
	ts := &TargetStore{Base: target.Base{Key: key}, st: st, name: name}
	if err := ts.init(); err != nil {
		_ = st.Close() // the error says what went wrong
		return nil, fmt.Errorf("boltstore: open target %s: %w", path, err)
	}
	return ts, nil
}

func (ts *TargetStore) init() error {
	read := ts.name == "" && ts.Key == (target.Key{})
	if !read {
		if err := ts.Key.Validate(); err != nil {
			return err
		}
	}
	return ts.st.db.Update(func(btx *bolt.Tx) error {
		meta := btx.Bucket(bucketTarget)
		if meta == nil {
			if read {
				return errNoTarget
			}
			// A file an aggregate store has written is not a target.
			if err := empty(btx, bucketAggregates, bucketRows, bucketLedgers); err != nil {
				return err
			}
			var err error
			if meta, err = btx.CreateBucket(bucketTarget); err != nil {
				return err
			}
			if _, err := btx.CreateBucket(bucketItems); err != nil {
				return err
			}
			b, err := json.Marshal(targetMeta{Name: ts.name, Key: ts.Key})
			if err != nil {
				return err
			}
			return meta.Put(metaKey, b)
		}
		var m targetMeta
		if err := json.Unmarshal(meta.Get(metaKey), &m); err != nil {
			return fmt.Errorf("the target's record is corrupt: %w", err)
		}
		if read {
			ts.name, ts.Key = m.Name, m.Key
			return nil
		}
		if m.Name != ts.name || m.Key != ts.Key {
			return fmt.Errorf("it is the target of %s, keyed %s, not of %s keyed %s: a target is one remodel's", m.Name, m.Key, ts.name, ts.Key)
		}
		return nil
	})
}

// empty fails unless each bucket is empty.
func empty(btx *bolt.Tx, buckets ...[]byte) error {
	for _, name := range buckets {
		if k, _ := btx.Bucket(name).Cursor().First(); k != nil {
			return errors.New("the file is an aggregate store's, with data, not a remodel's target")
		}
	}
	return nil
}

// Close closes the file.
func (ts *TargetStore) Close() error { return ts.st.Close() }

// Name is the remodel the target is of (its target items' RowRef.Projection).
func (ts *TargetStore) Name() string { return ts.name }

// ReadLedgers reads the source items' ledger entries.
func (ts *TargetStore) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	return ts.st.ReadLedgers(ctx, keys)
}

// Commit writes tx's ledger entries, target items and claims in one bbolt
// transaction: a row put writes the target item (its attributes, as they
// are) and, unless its owner holds it already (RowPut.Held), its claim,
// refused with a *driver.ClaimError naming the target item when another
// source item owns it; a row delete deletes both, on the same condition.
// A target holds no aggregates: a Tx with an Add is refused.
func (ts *TargetStore) Commit(ctx context.Context, tx *driver.Tx) error {
	return ts.CommitGroup(ctx, []*driver.Tx{tx})
}

// CommitGroup applies txs in order, each as Commit would, in one bbolt
// transaction, synced once (driver.GroupCommitter): all of them, or, on
// the first that fails, none. The error is that one's, as Commit returns
// it.
func (ts *TargetStore) CommitGroup(ctx context.Context, txs []*driver.Tx) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: commit to the target: %w", err)
	}
	var writes []*targetWrite
	for _, tx := range txs {
		if tx == nil || tx.Len() == 0 {
			continue
		}
		w, err := ts.prepare(tx)
		if err != nil {
			return err
		}
		writes = append(writes, w)
	}
	if len(writes) == 0 {
		return nil
	}
	var failed *targetWrite
	err := ts.st.db.Update(func(btx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, w := range writes {
			if err := w.apply(btx); err != nil {
				failed = w
				return err
			}
		}
		return nil
	})
	var (
		conflict *driver.ConflictError
		claim    *driver.ClaimError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &conflict):
		return conflict
	case errors.As(err, &claim) && failed != nil:
		return &driver.ClaimError{Ref: failed.byClaim[claim.Ref], Owner: claim.Owner, Claimant: claim.Claimant}
	}
	return fmt.Errorf("boltstore: commit to the target: %w", err)
}

// targetWrite is a validated Tx of a target: its ledger entries and claims
// prepared, and its target items encoded.
type targetWrite struct {
	claims  *prepared
	items   []itemWrite
	byClaim map[driver.RowRef]driver.RowRef
}

type itemWrite struct {
	ref   driver.RowRef
	key   []byte
	value []byte // nil: delete
}

// apply writes w inside btx: the claims' and ledgers' conditions checked
// first (prepared.apply), then the target items.
func (w *targetWrite) apply(btx *bolt.Tx) error {
	if err := w.claims.apply(btx); err != nil {
		return err
	}
	b := btx.Bucket(bucketItems)
	for _, it := range w.items {
		var err error
		if it.value == nil {
			err = b.Delete(it.key)
		} else {
			err = b.Put(it.key, it.value)
		}
		if err != nil {
			return fmt.Errorf("item %s: %w", describeRow(it.ref), err)
		}
	}
	return nil
}

// prepare validates tx for the target and encodes it.
func (ts *TargetStore) prepare(tx *driver.Tx) (*targetWrite, error) {
	if len(tx.Adds) > 0 {
		return nil, fmt.Errorf("boltstore: commit to the target: %d aggregate additions: a remodel's target holds no aggregates", len(tx.Adds))
	}
	if n := driver.Actions(ts, tx); n > driver.MaxTxActions {
		return nil, fmt.Errorf("boltstore: commit to the target: %d actions, more than the %d a transaction allows", n, driver.MaxTxActions)
	}
	claims := &driver.Tx{Ledgers: tx.Ledgers}
	byClaim := map[driver.RowRef]driver.RowRef{}
	var items []itemWrite
	for _, p := range tx.Puts {
		if err := ts.check(p.Ref); err != nil {
			return nil, err
		}
		if !p.Held {
			c := layout.ClaimRef(p.Ref)
			byClaim[c] = p.Ref
			claims.Puts = append(claims.Puts, driver.RowPut{Ref: c, Owner: p.Owner, From: p.From, CheckFrom: p.CheckFrom, FromRev: p.FromRev})
		}
		if err := checkTargetItem(p.Attrs); err != nil {
			return nil, fmt.Errorf("boltstore: commit to the target: item %s: %w", describeRow(p.Ref), err)
		}
		v, err := attributevalue.MarshalMapJSON(p.Attrs)
		if err != nil {
			return nil, fmt.Errorf("boltstore: commit to the target: item %s: %w", describeRow(p.Ref), err)
		}
		k, err := ts.itemKey(p.Ref)
		if err != nil {
			return nil, err
		}
		items = append(items, itemWrite{ref: p.Ref, key: k, value: v})
	}
	for _, d := range tx.Deletes {
		if err := ts.check(d.Ref); err != nil {
			return nil, err
		}
		c := layout.ClaimRef(d.Ref)
		byClaim[c] = d.Ref
		claims.Deletes = append(claims.Deletes, driver.RowDelete{Ref: c, Owner: d.Owner})
		k, err := ts.itemKey(d.Ref)
		if err != nil {
			return nil, err
		}
		items = append(items, itemWrite{ref: d.Ref, key: k})
	}
	p, err := prepare(claims)
	if err != nil {
		return nil, fmt.Errorf("boltstore: commit to the target: %w", err)
	}
	seen := make(map[string]bool, len(items))
	for _, w := range items {
		if seen[string(w.key)] {
			return nil, fmt.Errorf("boltstore: commit to the target: item %s: the transaction touches it more than once", describeRow(w.ref))
		}
		seen[string(w.key)] = true
	}
	return &targetWrite{claims: p, items: items, byClaim: byClaim}, nil
}

// check refuses a row of another remodel, or a key the target cannot hold.
func (ts *TargetStore) check(ref driver.RowRef) error {
	if ref.Projection != ts.name {
		return fmt.Errorf("boltstore: commit to the target of %s: a row of %s", ts.name, ref.Projection)
	}
	if err := ts.Key.CheckRef(ref); err != nil {
		return fmt.Errorf("boltstore: commit to the target: %w", err)
	}
	return nil
}

// checkTargetItem refuses what DynamoDB would: values it cannot store, or
// an item over its size limit.
func checkTargetItem(item pipeline.Item) error {
	for name, av := range item {
		if name == "" {
			return errors.New("an attribute with an empty name")
		}
		if err := checkAV(name, av); err != nil {
			return err
		}
	}
	if size := pipeline.ItemSize(item); size > 400<<10 {
		return fmt.Errorf("%d bytes, more than DynamoDB's %d for an item", size, 400<<10)
	}
	return nil
}

// itemKey is the items bucket's key of the target item of ref.
func (ts *TargetStore) itemKey(ref driver.RowRef) ([]byte, error) {
	k := binary.AppendUvarint(nil, uint64(len(ref.Partition)))
	k = append(k, ref.Partition...)
	s, err := sortBytes(ts.Key.Sort, ref.Sort)
	if err != nil {
		return nil, fmt.Errorf("boltstore: target item %s: %w", describeRow(ref), err)
	}
	return append(k, s...), nil
}

// sortBytes is a sort key's text in an order-preserving form.
func sortBytes(a target.KeyAttr, s string) ([]byte, error) {
	switch a.Type {
	case target.KeyN:
		d, err := decimal.Parse(s)
		if err != nil {
			return nil, err
		}
		enc, err := d.Sortable()
		return []byte(enc), err
	case target.KeyB:
		return base64.StdEncoding.DecodeString(s)
	}
	return []byte(s), nil
}

// ScanRows calls fn with every target item, in key order: its RowRef and
// attributes, and the source item that owns it (its claim's owner).
func (ts *TargetStore) ScanRows(ctx context.Context, fn func(row driver.StoredRow) error) error {
	return ts.st.scan(ctx, bucketItems, "scan the target's items", func(_, v []byte) error {
		row, err := ts.decodeItem(v)
		if err != nil {
			return err
		}
		return fn(row)
	})
}

// decodeItem decodes a stored target item, with its owner.
func (ts *TargetStore) decodeItem(v []byte) (driver.StoredRow, error) {
	attrs, err := attributevalue.UnmarshalMapJSON(v)
	if err != nil {
		return driver.StoredRow{}, fmt.Errorf("boltstore: a target item is corrupt: %w", err)
	}
	ref, err := ts.Key.Ref(ts.name, attrs)
	if err != nil {
		return driver.StoredRow{}, fmt.Errorf("boltstore: a target item is corrupt: %w", err)
	}
	row := driver.StoredRow{Ref: ref, Attrs: attrs}
	c, err := rowKey(layout.ClaimRef(ref))
	if err != nil {
		return row, err
	}
	err = ts.st.db.View(func(btx *bolt.Tx) error {
		if cv := btx.Bucket(bucketRows).Get(c); cv != nil {
			claim, err := decodeStoredRow(c, cv)
			if err != nil {
				return err
			}
			row.Owner = claim.Owner
		}
		return nil
	})
	return row, err
}

// QueryRows returns up to limit target items of one partition key, in
// descending sort-key order (limit <= 0: all of them).
func (ts *TargetStore) QueryRows(ctx context.Context, projection, partition string, limit int) ([]driver.StoredRow, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("boltstore: query the target: %w", err)
	}
	if projection != ts.name {
		return nil, nil
	}
	prefix := binary.AppendUvarint(nil, uint64(len(partition)))
	prefix = append(prefix, partition...)
	var vals [][]byte
	err := ts.st.db.View(func(btx *bolt.Tx) error {
		c := btx.Bucket(bucketItems).Cursor()
		var k, v []byte
		if end := nextPrefix(prefix); end == nil {
			k, v = c.Last()
		} else if seek, _ := c.Seek(end); seek == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			vals = append(vals, bytes.Clone(v))
			if limit > 0 && len(vals) == limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: query the target, partition %q: %w", partition, err)
	}
	rows := make([]driver.StoredRow, 0, len(vals))
	for _, v := range vals {
		row, err := ts.decodeItem(v)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// nextPrefix is the smallest key after every key with prefix p; nil when
// there is none (p is all 0xff).
func nextPrefix(p []byte) []byte {
	out := bytes.Clone(p)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] < 0xff {
			out[i]++
			return out[:i+1]
		}
	}
	return nil
}

// ScanLedgers scans the source items' ledger entries (and the markers).
func (ts *TargetStore) ScanLedgers(ctx context.Context, fn func(key string, entry driver.LedgerEntry) error) error {
	return ts.st.ScanLedgers(ctx, fn)
}

// Package boltstore is Tributary's embedded projection store: a single bbolt
// file on local disk that implements projections.Store and projections.Reader
// with DynamoDB's semantics, for the demo, local runs and tests.
//
// Every Commit is one bbolt read-write transaction. It first checks the
// revision condition of every ledger put and, if any fails, writes nothing and
// returns a *projections.ConflictError holding the entries now stored under
// the failed keys; otherwise it applies all of the Tx. As in DynamoDB's
// TransactWriteItems, a Tx that touches one stored item twice is rejected,
// numbers must be valid DynamoDB numbers, and a sum that leaves DynamoDB's
// number range (38 significant digits) fails the whole Tx. bbolt runs one
// writer at a time, so Commit never reports projections.ErrContention.
//
// The file holds three buckets:
//
//	ledgers     key                                    → 0x01 uvarint(rev) varint(expiresAt) body
//	aggregates  projection 0x00 key 0x00 uint32(shard)  → 0x01 uvarint(n), n × (uvarint len, name, uvarint len, decimal string)
//	rows        projection 0x00 partition 0x00 sort    → the attributes as DynamoDB JSON (attributevalue.MarshalMapJSON)
//
// so that QueryRows is a reverse cursor scan over one projection and
// partition prefix, in the byte order DynamoDB uses for string sort keys.
// Projections, aggregate keys, partitions and sort keys must therefore not
// contain a 0x00 byte; they, and ledger keys, must be valid UTF-8 (as DynamoDB
// strings are). The store keeps its bookkeeping in keys and buckets, not in
// attributes, but refuses the names a Store may reserve
// (projections.ReservedNames) as aggregate value names and top-level row
// attribute names, as the DynamoDB store must: code that passes here passes
// there.
//
// Decimal values keep their scale as written ("0.30" stays "0.30"), where
// DynamoDB would return "0.3"; compare them with decimal.Decimal.Cmp.
//
// Ledger entries with an ExpiresAt stay readable until deleteExpired removes
// them, as DynamoDB's TTL deletes expired items some time after they expire.
//
// A file can be open in one Store at a time: a second Open, from this process
// or another, waits briefly for the file lock and then fails with errInUse.
// Each commit is synced to disk before Commit returns, unless the store was
// opened WithoutSync (for tests).
package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/layout"
)

var (
	_ driver.Store              = (*Store)(nil)
	_ driver.Reader             = (*Store)(nil)
	_ driver.WriteUnitEstimator = (*Store)(nil)
	_ driver.GroupCommitter     = (*Store)(nil)
)

// errInUse is returned by Open when another Store, in this process or
// another, has the file open.
var errInUse = errors.New("boltstore: store is in use")

// defaultOpenTimeout is how long Open waits for the file lock by default.
const defaultOpenTimeout = time.Second

var (
	bucketLedgers    = []byte("ledgers")
	bucketAggregates = []byte("aggregates")
	bucketRows       = []byte("rows")
)

// Store is an open store file. It is safe for concurrent use.
type Store struct {
	db *bolt.DB
}

// An Option changes how Open opens a store.
type Option func(*options)

type options struct {
	timeout time.Duration
	noSync  bool
}

// withOpenTimeout sets how long Open waits for the file lock that another
// Store holds before it fails with errInUse (default defaultOpenTimeout).
func withOpenTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithoutSync skips the fsync after each commit (and each group,
// CommitGroup). Commits get much faster, and
// a crash of the process still loses nothing, but a crash of the machine can
// lose recent commits or corrupt the file: use it for tests and data you can
// rebuild, never for a store you keep.
func WithoutSync() Option {
	return func(o *options) { o.noSync = true }
}

// Open opens the store file at path, creating it and its parent directory if
// they do not exist.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{timeout: defaultOpenTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		// bbolt would wait forever.
		o.timeout = defaultOpenTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.timeout, NoSync: o.noSync})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("boltstore: open %s: %w: no lock on the file after %s (%w)", path, errInUse, o.timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		for _, name := range [][]byte{bucketLedgers, bucketAggregates, bucketRows} {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the file. Calls after Close fail.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close %s: %w", s.db.Path(), err)
	}
	return nil
}

// ReadLedgers returns the ledger entries stored under keys; keys with no entry
// are absent from the map. Reads are strongly consistent.
func (s *Store) ReadLedgers(ctx context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("boltstore: read ledgers: %w", err)
	}
	for _, k := range keys {
		if err := checkLedgerKey(k); err != nil {
			return nil, fmt.Errorf("boltstore: read ledgers: %w", err)
		}
	}
	out := make(map[string]driver.LedgerEntry, len(keys))
	err := s.db.View(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketLedgers)
		for _, k := range keys {
			if _, done := out[k]; done {
				continue
			}
			v := b.Get([]byte(k))
			if v == nil {
				continue
			}
			e, _, err := decodeLedger(v)
			if err != nil {
				return fmt.Errorf("ledger %q: %w", k, err)
			}
			out[k] = e
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: read ledgers: %w", err)
	}
	return out, nil
}

// Commit applies tx atomically in one bbolt transaction. See the package
// documentation for the conditions and checks.
func (s *Store) Commit(ctx context.Context, tx *driver.Tx) error {
	return s.CommitGroup(ctx, []*driver.Tx{tx})
}

// CommitGroup applies txs in order, each as Commit would, in one bbolt
// transaction, synced once (driver.GroupCommitter): all of them, or, on
// the first that fails, none. The error is that one's, as Commit returns
// it.
func (s *Store) CommitGroup(ctx context.Context, txs []*driver.Tx) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: commit: %w", err)
	}
	ps := make([]*prepared, 0, len(txs))
	for _, tx := range txs {
		if tx == nil || tx.Len() == 0 {
			continue
		}
		if n := driver.Actions(s, tx); n > driver.MaxTxActions {
			// DynamoDB refuses larger transactions; so does the embedded twin, so
			// that code which builds them fails here first.
			return fmt.Errorf("boltstore: commit: %d actions, more than the %d a transaction allows", n, driver.MaxTxActions)
		}
		p, err := prepare(tx)
		if err != nil {
			return fmt.Errorf("boltstore: commit: %w", err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil
	}
	err := s.db.Update(func(btx *bolt.Tx) error {
		// Waiting for the writer lock may have taken a while.
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, p := range ps {
			if err := p.apply(btx); err != nil {
				return err
			}
		}
		return nil
	})
	var conflict *driver.ConflictError
	if errors.As(err, &conflict) {
		return conflict
	}
	if err != nil {
		return fmt.Errorf("boltstore: commit: %w", err)
	}
	return nil
}

// WriteUnits implements projections.WriteUnitEstimator with what the same
// commit would cost in DynamoDB (dynamostore.WriteUnits), whose semantics
// the store models: the demo and the cost benchmarks count DynamoDB's bill
// over the embedded store.
func (s *Store) WriteUnits(tx *driver.Tx) float64 { return layout.WriteUnits(tx) }

// prepared is a validated Tx with its keys and values encoded, ready to
// apply inside a bbolt transaction.
type prepared struct {
	ledgers []preparedLedger
	adds    []preparedAdd
	puts    []preparedPut
	deletes []preparedDelete
}

type preparedLedger struct {
	put driver.LedgerPut
	key []byte
}

type preparedAdd struct {
	add driver.Add
	key []byte
}

type preparedPut struct {
	ref         driver.RowRef
	key         []byte
	value       []byte
	owner, from string
	checkFrom   bool
	fromRev     int64
}

type preparedDelete struct {
	ref   driver.RowRef
	key   []byte
	owner string
}

func prepare(tx *driver.Tx) (*prepared, error) {
	p := &prepared{}
	// seen maps each stored item the Tx touches to a description of it, to
	// reject a second operation on the same item as DynamoDB does.
	seen := make(map[string]struct{}, tx.Len())
	touch := func(bucket []byte, key []byte, what string) error {
		id := string(bucket) + "/" + string(key)
		if _, dup := seen[id]; dup {
			return fmt.Errorf("%s: the transaction touches this item more than once", what)
		}
		seen[id] = struct{}{}
		return nil
	}
	for _, l := range tx.Ledgers {
		what := fmt.Sprintf("ledger %q", l.Key)
		if err := checkLedgerKey(l.Key); err != nil {
			return nil, err
		}
		if l.ExpectRev < 0 {
			return nil, fmt.Errorf("%s: negative ExpectRev %d", what, l.ExpectRev)
		}
		key := []byte(l.Key)
		if err := touch(bucketLedgers, key, what); err != nil {
			return nil, err
		}
		p.ledgers = append(p.ledgers, preparedLedger{put: l, key: key})
	}
	for _, a := range tx.Adds {
		key, err := aggregateKey(a.Ref)
		if err != nil {
			return nil, err
		}
		if err := checkValueNames(a); err != nil {
			return nil, err
		}
		if err := touch(bucketAggregates, key, describeAggregate(a.Ref)); err != nil {
			return nil, err
		}
		p.adds = append(p.adds, preparedAdd{add: a, key: key})
	}
	for _, r := range tx.Puts {
		key, err := rowKey(r.Ref)
		if err != nil {
			return nil, err
		}
		what := describeRow(r.Ref)
		if err := touch(bucketRows, key, what); err != nil {
			return nil, err
		}
		value, err := encodeRow(r.Attrs, r.Owner)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		p.puts = append(p.puts, preparedPut{ref: r.Ref, key: key, value: value, owner: r.Owner, from: r.From, checkFrom: r.CheckFrom, fromRev: r.FromRev})
	}
	for _, d := range tx.Deletes {
		key, err := rowKey(d.Ref)
		if err != nil {
			return nil, err
		}
		if err := touch(bucketRows, key, describeRow(d.Ref)); err != nil {
			return nil, err
		}
		p.deletes = append(p.deletes, preparedDelete{ref: d.Ref, key: key, owner: d.Owner})
	}
	return p, nil
}

// apply checks every ledger condition, then writes everything. An error
// rolls the bbolt transaction back.
func (p *prepared) apply(btx *bolt.Tx) error {
	ledgers := btx.Bucket(bucketLedgers)
	var conflicts map[string]driver.LedgerEntry
	for _, l := range p.ledgers {
		var cur driver.LedgerEntry
		if v := ledgers.Get(l.key); v != nil {
			var err error
			if cur, _, err = decodeLedger(v); err != nil {
				return fmt.Errorf("ledger %q: %w", l.put.Key, err)
			}
		}
		if cur.Rev != l.put.ExpectRev {
			if conflicts == nil {
				conflicts = make(map[string]driver.LedgerEntry)
			}
			conflicts[l.put.Key] = cur
		}
	}
	if conflicts != nil {
		return &driver.ConflictError{Current: conflicts}
	}
	rows := btx.Bucket(bucketRows)
	// A row another item owns is refused, as DynamoDB's condition on the
	// owner refuses it.
	claimed := func(ref driver.RowRef, key []byte, owner, from string) error {
		if owner == "" {
			return nil
		}
		v := rows.Get(key)
		if v == nil {
			return nil
		}
		cur, err := decodeStoredRow(key, v)
		if err != nil {
			return err
		}
		if cur.Owner != "" && cur.Owner != owner && cur.Owner != from {
			return &driver.ClaimError{Ref: ref, Owner: cur.Owner, Claimant: owner}
		}
		return nil
	}
	for _, r := range p.puts {
		if err := claimed(r.ref, r.key, r.owner, r.from); err != nil {
			return err
		}
		if r.checkFrom {
			// A takeover rests on the revision of From's entry the
			// engine read: one that has changed since refuses it.
			var rev int64
			if v := ledgers.Get([]byte(r.from)); v != nil {
				cur, _, err := decodeLedger(v)
				if err != nil {
					return fmt.Errorf("ledger %q: %w", r.from, err)
				}
				rev = cur.Rev
			}
			if rev != r.fromRev {
				return &driver.ClaimError{Ref: r.ref, Owner: r.from, Claimant: r.owner}
			}
		}
	}
	for _, d := range p.deletes {
		if err := claimed(d.ref, d.key, d.owner, ""); err != nil {
			return err
		}
	}

	for _, l := range p.ledgers {
		v := encodeLedger(l.put.ExpectRev+1, l.put.ExpiresAt, l.put.Body)
		if err := ledgers.Put(l.key, v); err != nil {
			return fmt.Errorf("put ledger %q: %w", l.put.Key, err)
		}
	}
	aggregates := btx.Bucket(bucketAggregates)
	for _, a := range p.adds {
		what := describeAggregate(a.add.Ref)
		values, err := decodeValues(aggregates.Get(a.key))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for name, d := range a.add.Values {
			sum := values[name].Add(d)
			if err := checkNumber(sum); err != nil {
				return &driver.RangeError{Ref: a.add.Ref, Name: name, Err: fmt.Errorf("%s + %s: %w", values[name], d, err)}
			}
			// As DynamoDB keeps it: no trailing zeros, whatever the scales
			// of the operands (some since retracted) that made it.
			values[name] = sum.Normal()
		}
		if err := aggregates.Put(a.key, encodeValues(values)); err != nil {
			return fmt.Errorf("put %s: %w", what, err)
		}
	}
	for _, r := range p.puts {
		if err := rows.Put(r.key, r.value); err != nil {
			return fmt.Errorf("put %s: %w", describeRow(r.ref), err)
		}
	}
	for _, d := range p.deletes {
		if err := rows.Delete(d.key); err != nil {
			return fmt.Errorf("delete %s: %w", describeRow(d.ref), err)
		}
	}
	return nil
}

// deleteExpired deletes the ledger entries whose ExpiresAt is before now, as
// DynamoDB's TTL would, and returns how many it deleted.
func (s *Store) deleteExpired(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("boltstore: delete expired: %w", err)
	}
	n := 0
	err := s.db.Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketLedgers)
		var expired [][]byte
		err := b.ForEach(func(k, v []byte) error {
			_, expiresAt, err := decodeLedger(v)
			if err != nil {
				return fmt.Errorf("ledger %q: %w", k, err)
			}
			if expiresAt != 0 && expiresAt < now.Unix() {
				expired = append(expired, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range expired {
			if err := b.Delete(k); err != nil {
				return fmt.Errorf("delete ledger %q: %w", k, err)
			}
		}
		n = len(expired)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: delete expired: %w", err)
	}
	return n, nil
}

var _ driver.KeyLimiter = (*Store)(nil)

// CheckAggregate reports whether ref's aggregate can be stored: within
// DynamoDB's key limits, which the embedded store keeps so that what runs
// here runs there, and without the 0x00 byte its keys reserve.
func (s *Store) CheckAggregate(ref driver.AggregateRef) error {
	if err := layout.CheckAggregate(ref); err != nil {
		return err
	}
	if _, err := aggregateKey(ref); err != nil {
		return &driver.KeyError{What: "aggregate key", Key: ref.Key, Reason: err.Error()}
	}
	return nil
}

// CheckRow reports whether ref's row can be stored, as CheckAggregate.
func (s *Store) CheckRow(ref driver.RowRef) error {
	if err := layout.CheckRow(ref); err != nil {
		return err
	}
	if _, err := rowKey(ref); err != nil {
		return &driver.KeyError{What: "row key", Key: ref.Partition + "/" + ref.Sort, Reason: err.Error()}
	}
	return nil
}

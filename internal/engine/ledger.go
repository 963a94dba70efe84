package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// ledger is what the engine records per source item: the token of the last
// change applied and what the item contributed at that point. A removal
// leaves a tombstone (Removed, no contributions) so that a late, older change
// cannot bring the item back.
type ledger struct {
	Tok     Token      `json:"t"`
	Removed bool       `json:"d,omitempty"`
	C       contribSet `json:"c"`
}

// contribSet is everything one item image contributes, across projections,
// in physical form (aggregate shards) and sorted, so that equal sets encode
// equally.
type contribSet struct {
	Aggs []aggContrib `json:"a,omitempty"`
	Rows []rowContrib `json:"r,omitempty"`
}

type aggContrib struct {
	Ref    driver.AggregateRef        `json:"-"`
	Values map[string]decimal.Decimal `json:"-"`
	// Shards is the counter's write-shard count; only on freshly computed
	// contributions, before a physical shard is chosen.
	Shards int `json:"-"`
}

// MarshalJSON keeps ledger rows small: DynamoDB bills writes per kilobyte.
func (a aggContrib) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		P string                     `json:"p"`
		K string                     `json:"k"`
		S int                        `json:"s,omitempty"`
		V map[string]decimal.Decimal `json:"v"`
	}{a.Ref.Projection, a.Ref.Key, a.Ref.Shard, a.Values})
}

func (a *aggContrib) UnmarshalJSON(b []byte) error {
	var v struct {
		P string                     `json:"p"`
		K string                     `json:"k"`
		S int                        `json:"s"`
		V map[string]decimal.Decimal `json:"v"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	a.Ref, a.Values = driver.AggregateRef{Projection: v.P, Key: v.K, Shard: v.S}, v.V
	return nil
}

type rowContrib struct {
	Ref   driver.RowRef `json:"-"`
	Hash  string        `json:"-"`
	Attrs pipeline.Item `json:"-"` // only on freshly computed contributions
	// Expires is the row's projections.Row.Expires; 0: none.
	Expires int64 `json:"-"`
}

// MarshalJSON writes [projection, partition, sort, hash], and the expiry
// as a fifth element when there is one: an entry written before rows had
// one reads as without, and a reader that knows four elements ignores it.
func (r rowContrib) MarshalJSON() ([]byte, error) {
	if r.Expires != 0 {
		return json.Marshal([5]string{r.Ref.Projection, r.Ref.Partition, r.Ref.Sort, r.Hash, strconv.FormatInt(r.Expires, 10)})
	}
	return json.Marshal([4]string{r.Ref.Projection, r.Ref.Partition, r.Ref.Sort, r.Hash})
}

func (r *rowContrib) UnmarshalJSON(b []byte) error {
	var v [5]string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.Ref, r.Hash, r.Expires = driver.RowRef{Projection: v[0], Partition: v[1], Sort: v[2]}, v[3], 0
	if v[4] != "" {
		n, err := strconv.ParseInt(v[4], 10, 64)
		if err != nil {
			return fmt.Errorf("row %s/%s: expiry %q: %w", v[1], v[2], v[4], err)
		}
		r.Expires = n
	}
	return nil
}

func (s *contribSet) sort() {
	sort.Slice(s.Aggs, func(i, j int) bool { return refLess(s.Aggs[i].Ref, s.Aggs[j].Ref) })
	sort.Slice(s.Rows, func(i, j int) bool { return s.Rows[i].Ref.Compare(s.Rows[j].Ref) < 0 })
}

func refLess(a, b driver.AggregateRef) bool {
	if a.Projection != b.Projection {
		return a.Projection < b.Projection
	}
	if a.Key != b.Key {
		return a.Key < b.Key
	}
	return a.Shard < b.Shard
}

func encodeLedger(l *ledger) []byte {
	b, err := json.Marshal(l)
	if err != nil {
		// Only maps of strings and decimals: cannot fail.
		panic(fmt.Sprintf("projections: encoding a ledger: %v", err))
	}
	return b
}

func decodeLedger(key string, e driver.LedgerEntry) (*ledger, error) {
	var l ledger
	if err := json.Unmarshal(e.Body, &l); err != nil {
		return nil, fmt.Errorf("projections: ledger entry %s (rev %d) is corrupt: %w", key, e.Rev, err)
	}
	return &l, nil
}

// ledgerKey is the key a source item's ledger entry is stored under: its
// canonical key JSON, or a hash of it when that is too long for a DynamoDB
// partition key.
func ledgerKey(keys pipeline.Item) string {
	k := pipeline.ItemKey(keys)
	if len(k) > 1024 {
		sum := sha256.Sum256([]byte(k))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}

// batchShard picks the write shard that a batch's new contributions to
// sharded aggregates go to: one shard per batch, so a batch writes each hot
// aggregate once, and concurrent batches (other stream shards) most likely
// write other shards. It depends only on the batch's first record, so a
// redelivered batch chooses the same shard.
func batchShard(c *pipeline.Change) uint32 {
	h := fnv.New32a()
	h.Write([]byte(c.Position.SequenceNumber))
	h.Write([]byte(c.EventID))
	if c.Position.Source == pipeline.SourceExport {
		// An export line has neither: its file and line place it.
		h.Write([]byte(c.Position.Stream))
		h.Write([]byte(strconv.Itoa(c.Position.Index)))
	}
	return h.Sum32()
}

func hashString(s string) string {
	if s == "" {
		return ""
	}
	h := fnv.New64a()
	h.Write([]byte(s))
	return fmt.Sprintf("%016x", h.Sum64())
}

func hashItem(item pipeline.Item) string { return hashEncoded(pipeline.AppendItem(nil, item)) }

// hashEncoded is hashItem of an item encoded as pipeline.AppendItem does.
func hashEncoded(b []byte) string {
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

// describeOwner renders a source item's ledger key for people, as
// pipeline.KeyString renders keys ("PK=USER#u42 SK=PROFILE"): a key too
// long to be stored as it is ("sha256:…") stays as it is.
func describeOwner(key string) string {
	var attrs map[string]map[string]string
	if json.Unmarshal([]byte(key), &attrs) != nil || len(attrs) == 0 {
		return key
	}
	names := make([]string, 0, len(attrs))
	for name, v := range attrs {
		if len(v) != 1 {
			return key
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var b []byte
	for i, name := range names {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, name...)
		b = append(b, '=')
		for _, s := range attrs[name] {
			b = append(b, s...)
		}
	}
	return string(b)
}

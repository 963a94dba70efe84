// Package shardreadtest holds the conformance suite that every
// shardread.Source passes (Run), and Mem, an in-memory stream that passes it
// too, for tests that need a stream without a server: resharding, throttling
// and expired iterators on demand.
package shardreadtest

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
)

// Mem is an in-memory stream with Kinesis's semantics: records go to the
// open shard whose hash-key range holds the MD5 of their partition key;
// sequence numbers increase in the stream; a split or a merge closes its
// parents, which keep their records, and opens children that get the
// records written from then on; a closed shard read to its end gives no next
// iterator. Records carry DynamoDB's streaming-destination payload and are
// decoded as infra/kinesisread decodes them.
//
// With Streams set it behaves as DynamoDB Streams does where the two differ:
// reads do not say how far behind the tip they are, and there is no
// AT_TIMESTAMP iterator (the trim horizon is read instead).
//
// Mem is safe for concurrent use.
type Mem struct {
	// Name names the stream in the changes' positions.
	Name string
	// Streams makes Mem behave as DynamoDB Streams (see above).
	Streams bool
	// IteratorTTL, when positive, expires iterators that old.
	IteratorTTL time.Duration
	// Fault, when set, is called before every operation ("shards",
	// "iterator", "read") with the shard concerned; an error it returns is
	// returned instead (e.g. one matching shardread.ErrThrottled).
	Fault func(op, shard string) error
	// Now is the clock for arrival times and iterator expiry; default
	// time.Now.
	Now func() time.Time

	mu     sync.Mutex
	shards []*memShard
	seq    uint64
	nextID int
}

type memShard struct {
	id       string
	parents  []string
	lo, hi   uint64 // hash-key range, inclusive
	startSeq uint64
	endSeq   uint64 // 0: open
	recs     []memRecord
}

type memRecord struct {
	seq     uint64
	pk      string
	data    []byte
	arrival time.Time
}

// seqBase makes sequence numbers 10 digits long at first and 11 after ten
// records, so that comparing them as strings would be wrong.
const seqBase = 9999999990

// NewMem returns a stream with n open shards splitting the hash-key space
// evenly.
func NewMem(name string, n int) *Mem {
	m := &Mem{Name: name, seq: seqBase}
	n = max(n, 1)
	step := math.MaxUint64 / uint64(n)
	for i := range n {
		lo, hi := uint64(i)*step, uint64(i+1)*step-1
		if i == n-1 {
			hi = math.MaxUint64
		}
		m.shards = append(m.shards, m.newShard(nil, lo, hi))
	}
	return m
}

var _ shardread.Source = (*Mem)(nil)

func (m *Mem) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Mem) newShard(parents []string, lo, hi uint64) *memShard {
	id := fmt.Sprintf("shardId-%012d", m.nextID)
	m.nextID++
	return &memShard{id: id, parents: parents, lo: lo, hi: hi, startSeq: m.seq + 1}
}

func hashKey(pk string) uint64 {
	sum := md5.Sum([]byte(pk))
	return binary.BigEndian.Uint64(sum[:8])
}

// Put writes a record and returns its shard and sequence number.
func (m *Mem) Put(partitionKey string, data []byte) (shard, seq string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := hashKey(partitionKey)
	for _, s := range m.shards {
		if s.endSeq == 0 && s.lo <= h && h <= s.hi {
			m.seq++
			s.recs = append(s.recs, memRecord{seq: m.seq, pk: partitionKey, data: data, arrival: m.now()})
			return s.id, strconv.FormatUint(m.seq, 10)
		}
	}
	panic("shardreadtest: no open shard for a hash key") // the ranges always cover the space
}

// Split closes an open shard and opens two children, each with half its
// hash-key range.
func (m *Mem) Split(shard string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shard(shard)
	if s == nil || s.endSeq != 0 {
		return fmt.Errorf("shardreadtest: split %s: no such open shard", shard)
	}
	m.close(s)
	mid := s.lo + (s.hi-s.lo)/2
	m.shards = append(m.shards, m.newShard([]string{s.id}, s.lo, mid), m.newShard([]string{s.id}, mid+1, s.hi))
	return nil
}

// Merge closes two open shards with adjacent ranges and opens one child
// covering both.
func (m *Mem) Merge(a, b string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sa, sb := m.shard(a), m.shard(b)
	if sa == nil || sb == nil || sa.endSeq != 0 || sb.endSeq != 0 {
		return fmt.Errorf("shardreadtest: merge %s and %s: not two open shards", a, b)
	}
	if sb.lo < sa.lo {
		sa, sb = sb, sa
	}
	if sa.hi+1 != sb.lo {
		return fmt.Errorf("shardreadtest: merge %s and %s: ranges are not adjacent", a, b)
	}
	m.close(sa)
	m.close(sb)
	m.shards = append(m.shards, m.newShard([]string{sa.id, sb.id}, sa.lo, sb.hi))
	return nil
}

func (m *Mem) close(s *memShard) {
	s.endSeq = m.seq // a shard's last sequence number: all its records are below
	if s.endSeq < s.startSeq {
		s.endSeq = s.startSeq // empty: its range is its start
	}
}

func (m *Mem) shard(id string) *memShard {
	for _, s := range m.shards {
		if s.id == id {
			return s
		}
	}
	return nil
}

func (m *Mem) fault(op, shard string) error {
	if m.Fault != nil {
		return m.Fault(op, shard)
	}
	return nil
}

// Shards lists every shard, in creation order.
func (m *Mem) Shards(_ context.Context) ([]shardread.Shard, error) {
	if err := m.fault("shards", ""); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]shardread.Shard, len(m.shards))
	for i, s := range m.shards {
		out[i] = shardread.Shard{ID: s.id, Parents: s.parents, StartingSeq: strconv.FormatUint(s.startSeq, 10)}
		if s.endSeq != 0 {
			out[i].EndingSeq = strconv.FormatUint(s.endSeq, 10)
		}
	}
	return out, nil
}

// Iterator returns an iterator: "<shard>|<seq after which to read>|<issued>".
func (m *Mem) Iterator(_ context.Context, shard string, start shardread.Start) (string, error) {
	if err := m.fault("iterator", shard); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shard(shard)
	if s == nil {
		return "", fmt.Errorf("shardreadtest: shard %s: %w", shard, shardread.ErrShardNotFound)
	}
	var after uint64
	switch start.Type {
	case shardread.TrimHorizon:
		after = s.startSeq - 1
	case shardread.Latest:
		after = m.seq
	case shardread.AtTimestamp:
		after = s.startSeq - 1
		if !m.Streams {
			for _, r := range s.recs {
				if r.arrival.Before(start.Time) {
					after = r.seq
				}
			}
		}
	case shardread.AtSequence, shardread.AfterSequence:
		n, err := strconv.ParseUint(start.Seq, 10, 64)
		if err != nil {
			return "", fmt.Errorf("shardreadtest: sequence number %q: %w", start.Seq, err)
		}
		after = n
		if start.Type == shardread.AtSequence {
			after = n - 1
		}
	default:
		return "", fmt.Errorf("shardreadtest: start type %d", start.Type)
	}
	return fmt.Sprintf("%s|%d|%d", shard, after, m.now().UnixNano()), nil
}

// Read reads up to limit records after the iterator's position.
func (m *Mem) Read(_ context.Context, shard, iterator string, limit int) (shardread.Page, error) {
	if err := m.fault("read", shard); err != nil {
		return shardread.Page{}, err
	}
	parts := strings.Split(iterator, "|")
	if len(parts) != 3 || parts[0] != shard {
		return shardread.Page{}, fmt.Errorf("shardreadtest: iterator %q is not one of shard %s", iterator, shard)
	}
	after, err1 := strconv.ParseUint(parts[1], 10, 64)
	issued, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return shardread.Page{}, fmt.Errorf("shardreadtest: iterator %q: %w", iterator, err)
	}
	now := m.now()
	if m.IteratorTTL > 0 && now.Sub(time.Unix(0, issued)) > m.IteratorTTL {
		return shardread.Page{}, fmt.Errorf("shardreadtest: iterator of shard %s: %w", shard, shardread.ErrExpiredIterator)
	}
	m.mu.Lock()
	s := m.shard(shard)
	if s == nil {
		m.mu.Unlock()
		return shardread.Page{}, fmt.Errorf("shardreadtest: shard %s: %w", shard, shardread.ErrShardNotFound)
	}
	var got []memRecord
	rest := 0
	for _, r := range s.recs {
		if r.seq <= after {
			continue
		}
		if len(got) < limit {
			got = append(got, r)
		} else {
			rest++
		}
	}
	var newest time.Time
	if n := len(s.recs); n > 0 {
		newest = s.recs[n-1].arrival
	}
	closed := s.endSeq != 0
	m.mu.Unlock()

	page := shardread.Page{}
	last := after
	for _, r := range got {
		last = r.seq
		seq := strconv.FormatUint(r.seq, 10)
		kr := ktypes.Record{Data: r.data, SequenceNumber: aws.String(seq), PartitionKey: aws.String(r.pk), ApproximateArrivalTimestamp: aws.Time(r.arrival)}
		c, err := pipeline.FromKinesisRecord(kr, m.Name, shard, pipeline.Options{})
		page.Records = append(page.Records, shardread.Record{Seq: seq, Time: r.arrival, Change: c, Err: err, Size: len(r.data)})
	}
	if closed && rest == 0 {
		return page, nil // read to the end: no next iterator
	}
	page.Next = fmt.Sprintf("%s|%d|%d", shard, last, now.UnixNano())
	if !m.Streams {
		page.BehindKnown = true
		if rest > 0 && len(got) > 0 {
			page.Behind = max(time.Millisecond, newest.Sub(got[len(got)-1].arrival))
		}
	}
	return page, nil
}

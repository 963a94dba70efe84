package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// Where the simulated table lives. The names match pipeline/testdata.
const (
	Region           = "eu-west-1"
	TableName        = "app"
	StreamARN        = "arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000"
	KinesisStreamARN = "arn:aws:kinesis:eu-west-1:111122223333:stream/app-changes"
	kinesisRoleARN   = "arn:aws:iam::111122223333:role/tributary-kinesis-consumer"
)

// Record is one DynamoDB stream record: one applied change to one item.
type Record struct {
	Kind pipeline.Kind
	// Keys holds PK and SK; Old and New are the images before and after (nil
	// for an INSERT's Old and a REMOVE's New). Both carry the version.
	Keys, Old, New pipeline.Item
	// TTL is true for a removal by time to live.
	TTL bool
	// Seq is the DynamoDB Streams sequence number: see Stream.
	Seq string
	// Shard is the stream shard the record is in, from a hash of PK.
	Shard int
	// Time is the approximate creation time, to the millisecond.
	Time time.Time
	// EventID is 32 lowercase hex digits, as in a Streams event; the Kinesis
	// payload writes the same bits as a UUID.
	EventID string
	// Action is the workload's name for the operation, e.g. "order-pay".
	Action string
}

// Image returns the newest image: New, or Old for a removal.
func (r *Record) Image() pipeline.Item {
	if r.New != nil {
		return r.New
	}
	return r.Old
}

// Stream turns a Table's changes into stream records. It owns the simulated
// clock and the sequence-number counter.
//
// Shards: a record goes to shard hash(PK) mod shards, so one item's records
// stay in one shard, in the order they were made.
//
// Sequence numbers are decimal strings, unique and increasing in the whole
// stream (so in each shard too): an epoch that grows by one every 1,000 records,
// then the record's 20-digit global count. The epoch starts at 9, so numbers are
// 21 digits long for the first 1,000 records, 22 digits up to record 91,000, then
// 23: like real ones, they must be compared as numbers, not as strings.
//
// The clock starts at the given time and advances 0–3 ms per operation, so
// that some changes share a millisecond (and most share a second). One rule
// bends it: an item created again after a removal gets a time at least 1 ms
// after the removal. The Kinesis path has no sequence numbers and orders one
// item's changes by (time, version); versions restart at 1 in a new
// incarnation, so only a strictly later time puts the new incarnation after the
// removal of the old one. (A removal may share its millisecond with the last
// write before it: both carry the same version, and a removal of version v
// always follows the write of v.)
type Stream struct {
	table   *Table
	shards  int
	rng     *rand.Rand
	now     int64             // the clock, in ms since the epoch
	n       uint64            // records so far
	removed map[itemKey]int64 // ms of the last removal of each key not created since
}

// NewStream returns a stream over an empty table, with shards shards (at
// least 1), a clock starting at start and randomness from seed.
func NewStream(shards int, start time.Time, seed uint64) *Stream {
	return &Stream{
		table:   NewTable(),
		shards:  max(shards, 1),
		rng:     rand.New(rand.NewPCG(seed, streamSalt)),
		now:     start.UnixMilli(),
		removed: make(map[itemKey]int64),
	}
}

// Salts for the PCG streams derived from one seed, so that the workload, the
// stream clock and the event source mapping draw independent numbers.
const (
	workloadSalt = 0x9e3779b97f4a7c15
	streamSalt   = 0xbf58476d1ce4e5b9
	kinesisSalt  = 0x94d049bb133111eb
	esmSalt      = 0xd6e8feb86659fd93
)

// Table returns the stream's table.
func (s *Stream) Table() *Table { return s.table }

// Apply applies op to the table and returns the record it causes; ok is false
// for a no-op. The clock advances for every operation.
func (s *Stream) Apply(op Op) (rec Record, ok bool, err error) {
	s.tick()
	rec, ok, err = s.table.Apply(op)
	if ok {
		s.stamp(&rec)
	}
	return rec, ok, err
}

func (s *Stream) tick() { s.now += s.rng.Int64N(4) }

// stamp gives a record its time, shard, sequence number and event ID.
func (s *Stream) stamp(rec *Record) {
	pk := rec.Keys[attrPK].(*types.AttributeValueMemberS).Value
	k := tableKey(pk, rec.Keys[attrSK].(*types.AttributeValueMemberS).Value)
	switch rec.Kind {
	case pipeline.Remove:
		s.removed[k] = s.now
	case pipeline.Insert:
		if t, ok := s.removed[k]; ok {
			s.now = max(s.now, t+1)
			delete(s.removed, k)
		}
	}
	rec.Time = time.UnixMilli(s.now).UTC()
	rec.Shard = ShardOf(pk, s.shards)
	rec.Seq = seqNumber(s.n)
	s.n++
	rec.EventID = eventID(s.rng)
}

// ShardOf returns the shard of an item with partition key pk.
func ShardOf(pk string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(pk))
	return int(h.Sum32() % uint32(max(shards, 1)))
}

// seqNumber returns the sequence number of the stream's n-th record (from 0).
func seqNumber(n uint64) string {
	buf := make([]byte, 0, 24)
	buf = strconv.AppendUint(buf, 9+n/1000, 10)
	return string(appendPadded(buf, n, 20))
}

// appendPadded appends n in decimal, zero-padded to width digits.
func appendPadded(buf []byte, n uint64, width int) []byte {
	var tmp [20]byte
	d := strconv.AppendUint(tmp[:0], n, 10)
	for i := len(d); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, d...)
}

// eventID returns 32 random hex digits with the version and variant bits of
// a version 4 UUID.
func eventID(r *rand.Rand) string {
	hi, lo := r.Uint64(), r.Uint64()
	hi = hi&^0xf000 | 0x4000     // version 4
	lo = lo&^(0xc<<60) | 0x8<<60 // variant 10
	var b [32]byte
	for i := 15; i >= 0; i-- {
		b[i] = hexDigits[hi&0xf]
		hi >>= 4
	}
	for i := 31; i >= 16; i-- {
		b[i] = hexDigits[lo&0xf]
		lo >>= 4
	}
	return string(b[:])
}

const hexDigits = "0123456789abcdef"

// uuid writes a 32-digit event ID in the 8-4-4-4-12 form.
func uuid(id string) string {
	if len(id) != 32 {
		return id
	}
	return id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
}

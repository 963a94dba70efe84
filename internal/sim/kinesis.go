package sim

import (
	"cmp"
	"crypto/md5"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// KinesisRecord is one record of the Kinesis data stream that DynamoDB's
// streaming destination writes: a copy of a DynamoDB change record, possibly
// duplicated, possibly out of order.
type KinesisRecord struct {
	// Record is the change carried. Its Seq is not in the payload (the
	// streaming destination has no DynamoDB sequence numbers); its EventID is,
	// as a UUID, and a duplicate keeps it.
	Record
	// Index is the change's place in the DynamoDB records given to ToKinesis.
	Index int
	// Duplicate is true for the extra copy of a duplicated change (which may
	// be delivered before the other).
	Duplicate bool
	// KinesisSeq is the Kinesis sequence number, increasing in KinesisShard.
	KinesisSeq string
	// KinesisShard is the Kinesis shard: the record's stream shard, so one
	// item's copies stay in one Kinesis shard.
	KinesisShard int
	// PartitionKey is what DynamoDB writes: 32 uppercase hex digits derived
	// from the item's keys.
	PartitionKey string
	// Arrival is when the record reached Kinesis, to the millisecond,
	// non-decreasing in the shard.
	Arrival time.Time
}

// ToKinesis models DynamoDB's Kinesis streaming destination writing records
// (in stream order) to Kinesis: each record is written once, or twice with
// probability dupRate (a duplicate keeps the eventID), and the order is
// disturbed locally: two records (or copies) at least reorderWindow apart in
// the DynamoDB stream keep their order; closer ones may swap, including two
// changes of the same item. reorderWindow <= 1 keeps the order.
//
// The method: each copy of record i gets the sort key i + U·window, U uniform
// in [0, 1), and copies are written in sort-key order. Two copies of records
// i < j with j - i >= window cannot swap, since i + U·window < j.
//
// Each copy then gets its own Kinesis sequence number, increasing in its
// Kinesis shard, and an arrival time 0.1–1.1 s after the change.
func ToKinesis(records []Record, dupRate float64, reorderWindow int, rng *rand.Rand) []KinesisRecord {
	type slot struct {
		key float64
		i   int
		dup bool
	}
	w := float64(max(reorderWindow, 1))
	slots := make([]slot, 0, len(records)+int(float64(len(records))*dupRate)+1)
	for i := range records {
		slots = append(slots, slot{key: float64(i) + rng.Float64()*w, i: i})
		if dupRate > 0 && rng.Float64() < dupRate {
			slots = append(slots, slot{key: float64(i) + rng.Float64()*w, i: i, dup: true})
		}
	}
	slices.SortStableFunc(slots, func(a, b slot) int { return cmp.Compare(a.key, b.key) })

	out := make([]KinesisRecord, len(slots))
	lastArrival := map[int]int64{}
	for n, s := range slots {
		r := records[s.i]
		arrival := max(lastArrival[r.Shard], r.Time.UnixMilli()+100+rng.Int64N(1000))
		lastArrival[r.Shard] = arrival
		out[n] = KinesisRecord{
			Record:       r,
			Index:        s.i,
			Duplicate:    s.dup,
			KinesisSeq:   kinesisSeq(uint64(n)),
			KinesisShard: r.Shard,
			PartitionKey: partitionKey(&r),
			Arrival:      time.UnixMilli(arrival).UTC(),
		}
	}
	return out
}

// NewKinesisRand returns the generator ToKinesis should draw from for a
// simulation seeded with seed.
func NewKinesisRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, kinesisSalt)) }

// kinesisSeq returns the n-th Kinesis sequence number (56 digits, like real
// ones; counted over the whole stream, so increasing in each shard).
func kinesisSeq(n uint64) string {
	buf := make([]byte, 0, 56)
	buf = append(buf, "49656632116218945776331460"...)
	return string(appendPadded(buf, n, 30))
}

// partitionKey returns the Kinesis partition key of r's item.
func partitionKey(r *Record) string {
	sum := md5.Sum([]byte(shortKey(r.Keys)))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

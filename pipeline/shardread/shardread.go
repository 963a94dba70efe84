// Package shardread reads a sharded change stream — a Kinesis data stream fed
// by DynamoDB, or a table's DynamoDB stream — from a starting point to a time
// or until it has caught up, in lineage order: a shard is read only after
// every parent it has (a split's parent, a merge's two parents) has been read
// to its end, so that the changes of one item, which follow the item's
// partition key from parent to child, are met in the order they were made.
//
// The services differ in the details and meet in the Source interface,
// implemented by infra/kinesisread and infra/streamsread (and by the
// in-memory stream in shardreadtest, which passes the same conformance suite).
// A Reader drives a Source: it lists shards, keeps shards in lineage order,
// turns throttling into backoff with jitter, renews expired iterators from the
// last record read, picks up shards created by a resharding while it reads,
// and hands records to a handler batch by batch, recording after each batch
// the position up to which everything has been handled. Positions are what a
// checkpoint saves, so an interrupted read resumes where it stopped.
package shardread

import (
	"context"
	"errors"
	"time"

	"github.com/tributary/tributary/pipeline"
)

// Shard is one shard of a stream as its listing describes it.
type Shard struct {
	ID string
	// Parents are the shards this one was split or merged from: none, one
	// (split; also DynamoDB Streams' rollover), or two (merge).
	Parents []string
	// StartingSeq is the shard's first sequence number.
	StartingSeq string
	// EndingSeq is the shard's last sequence number once it is closed; empty
	// while it is open and can still receive records.
	EndingSeq string
}

// Closed reports whether the shard can receive no more records.
func (s Shard) Closed() bool { return s.EndingSeq != "" }

// startType says where reading a shard starts.
type startType uint8

// Where a shard's reading can start.
const (
	// TrimHorizon is the oldest record the stream still keeps.
	TrimHorizon startType = iota + 1
	// Latest is just after the newest record: nothing already in the stream.
	Latest
	// AtTimestamp is the first record that arrived at or after Start.Time.
	// DynamoDB Streams has no such iterator; its Source reads from the trim
	// horizon and the Reader drops the records before the time.
	AtTimestamp
	// AtSequence is the record with sequence number Start.Seq.
	AtSequence
	// AfterSequence is the record after the one with sequence number Start.Seq.
	AfterSequence
)

// String returns the iterator type's name, as the services spell it.
func (t startType) String() string {
	switch t {
	case TrimHorizon:
		return "TRIM_HORIZON"
	case Latest:
		return "LATEST"
	case AtTimestamp:
		return "AT_TIMESTAMP"
	case AtSequence:
		return "AT_SEQUENCE_NUMBER"
	case AfterSequence:
		return "AFTER_SEQUENCE_NUMBER"
	}
	return "UNKNOWN"
}

// Start is where reading a shard starts.
type Start struct {
	Type startType
	Time time.Time // AtTimestamp
	Seq  string    // AtSequence, AfterSequence
}

// Record is one stream record, decoded.
type Record struct {
	// Seq is the record's sequence number in its shard.
	Seq string
	// Time is the record's time on the stream: the approximate arrival time in
	// Kinesis, the approximate creation time in DynamoDB Streams. Windows
	// (AtTimestamp, Config.Until) are cut on it.
	Time time.Time
	// Change is the decoded change; meaningless when Err is set.
	Change pipeline.Change
	// Err is why the record could not be decoded (a *pipeline.RecordError).
	Err error
	// Size is the record's size in bytes, as far as the source knows it.
	Size int
}

// Page is one read of a shard.
type Page struct {
	Records []Record
	// Next is the iterator for the next read; empty when the shard is closed
	// and has been read to its end.
	Next string
	// Behind is how far the page is behind the tip of the stream, when the
	// service says (Kinesis's MillisBehindLatest): zero means caught up.
	Behind      time.Duration
	BehindKnown bool
}

// Source is one stream, as the Reader needs it. Implementations must be safe
// for concurrent use: the Reader reads several shards at once. Errors that
// the Reader handles must match ErrExpiredIterator, ErrThrottled, ErrTrimmed
// or ErrShardNotFound (errors.Is): the Source classifies its service's
// errors, the Reader knows no service. Any other error stops the read.
type Source interface {
	// Shards lists the stream's shards, closed ones included, as far back as
	// the stream keeps them.
	Shards(ctx context.Context) ([]Shard, error)
	// Iterator returns an iterator that reads shard from start.
	Iterator(ctx context.Context, shard string, start Start) (string, error)
	// Read reads up to limit records from iterator, which reads shard.
	Read(ctx context.Context, shard, iterator string, limit int) (Page, error)
}

// Pacing is how a stream's service wants its shards read: waits the Reader
// makes so as not to spend the shard's read limits for nothing.
type Pacing struct {
	// MinReadInterval is the least time between two reads of one shard
	// (Kinesis serves 5 reads per second per shard).
	MinReadInterval time.Duration
	// EmptyReadDelay is a wait after a read that returned nothing, before
	// the next read of the shard: a source that can return empty pages
	// before its tip (DynamoDB Streams) gets time to fill.
	EmptyReadDelay time.Duration
}

// A PacedSource is a Source with read limits of its own, found by type
// assertion: its Pacing is the default of Config.MinReadInterval and
// Config.EmptyReadDelay. infra/kinesisread and infra/streamsread are.
type PacedSource interface {
	Source
	Pacing() Pacing
}

// Errors a Source reports, for the Reader to handle.
var (
	// ErrExpiredIterator: the iterator is too old (Kinesis: 5 minutes,
	// DynamoDB Streams: 15); the Reader gets a new one after the last record
	// it read.
	ErrExpiredIterator = errors.New("shard iterator expired")
	// ErrThrottled: the service refused the call for now (read throughput,
	// call rate); the Reader backs off, with jitter, and tries again.
	ErrThrottled = errors.New("throttled")
	// ErrTrimmed: the records asked for are no longer in the stream (beyond
	// its retention). A read that depends on them cannot be exact.
	ErrTrimmed = errors.New("records trimmed from the stream")
	// ErrShardNotFound: the shard is gone (expired with its records).
	ErrShardNotFound = errors.New("shard not found")
)

// Position is how far a shard has been handled: what a checkpoint keeps.
type Position struct {
	// Seq is the sequence number of the last record handled; empty when none
	// has been.
	Seq string `json:"seq,omitempty"`
	// At, when set and Seq is not, starts the shard at this sequence number
	// (inclusive) rather than at the Reader's Start: a position given by hand.
	At string `json:"at,omitempty"`
	// Done: the shard is finished — closed and read to its end, or read past
	// the window's end (Config.Until). Its children may be read.
	Done bool `json:"done,omitempty"`
	// Skipped: the shard is not part of the read (a read from hand-given
	// positions skips the shards that neither hold one nor descend from
	// one), and neither are its children. Skipped shards are Done.
	Skipped bool `json:"skip,omitempty"`
}

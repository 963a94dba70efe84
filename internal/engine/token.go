package engine

import (
	"time"

	"github.com/tributary/tributary/pipeline"
)

// Token orders the changes of one item, across sources and incarnations.
//
//   - Two changes read from the same DynamoDB stream compare by sequence
//     number: exact, because a stream keeps each item's records in order.
//   - Otherwise they compare by approximate creation time, cut to the coarser
//     of the two precisions, then by the item's version: Kinesis records carry
//     milliseconds or microseconds, Streams records whole seconds.
//   - At an equal time and version a removal is newer than a write (it removes
//     the image it carries); otherwise equal tokens are the same change (a
//     duplicate): not newer.
//   - An item's state in an export (a backfill's) against a DynamoDB Streams
//     record compares by the second, the Streams record's precision; in the
//     same second the Streams record is the newer. On the Streams path a
//     shard's records arrive in order and every record of the tail after
//     the export's second is applied, so a record older than the export
//     that is taken for newer is followed by the item's later records, and
//     the last applied is the newest (docs/backfill.md).
//
// The version restarts at 1 when an item is deleted and created again, so it
// cannot order incarnations; the time does, as long as a re-creation comes
// at least one clock tick (of the coarser precision) after the deletion. An
// item without a version attribute is ordered by time alone, so two of its
// changes within one tick are indistinguishable: the first to arrive wins.
// See docs/engine.md.
type Token struct {
	// Stream identifies the DynamoDB stream Seq belongs to (a hash of its ARN);
	// empty for other sources.
	Stream string `json:"s,omitempty"`
	// Seq is the DynamoDB Streams sequence number.
	Seq string `json:"q,omitempty"`
	// Micros is the approximate creation time in microseconds since the epoch,
	// exact to Precision.
	Micros int64 `json:"u,omitempty"`
	// Precision of Micros.
	Precision pipeline.Precision `json:"p,omitempty"`
	// Version is the item's version attribute; HasVersion false when absent.
	Version    int64 `json:"v,omitempty"`
	HasVersion bool  `json:"hv,omitempty"`
	// Removed marks a removal. A removal carries the version of the image it
	// removed and may share its clock tick, so at an equal time and version
	// it is the newer of the two.
	Removed bool `json:"x,omitempty"`
	// Export marks an item's state as an export holds it: Micros is the
	// export's point in time (or, for an item an incremental export
	// changed, the time of its last write).
	Export bool `json:"e,omitempty"`
	// Origin is the change's pipeline.Position.Origin: where its source
	// holds it. It takes no part in the order (Newer).
	Origin string `json:"o,omitempty"`
}

// tokenOf returns the order token of a change.
func tokenOf(c *pipeline.Change) Token {
	t := Token{Version: c.Version, HasVersion: c.HasVersion, Removed: c.Kind == pipeline.Remove, Export: c.Position.Source == pipeline.SourceExport, Origin: c.Position.Origin}
	if !c.Time.IsZero() {
		t.Micros = c.Time.UnixMicro()
		t.Precision = c.Precision
	}
	if c.Position.Source == pipeline.SourceStreams && c.Position.SequenceNumber != "" {
		t.Seq = c.Position.SequenceNumber
		t.Stream = hashString(c.Position.Stream)
	}
	return t
}

// Newer reports whether t is a strictly newer change than u.
func (t Token) Newer(u Token) bool {
	if t.Seq != "" && u.Seq != "" && t.Stream == u.Stream {
		return pipeline.CompareSequenceNumbers(t.Seq, u.Seq) > 0
	}
	if (t.Export && u.Seq != "") || (u.Export && t.Seq != "") {
		a, b := truncMicros(t.Micros, pipeline.Second), truncMicros(u.Micros, pipeline.Second)
		if a != b {
			return a > b
		}
		return t.Seq != "" // the Streams record, in the export's second
	}
	p := t.Precision
	if u.Precision != 0 && (p == 0 || u.Precision < p) {
		p = u.Precision
	}
	a, b := truncMicros(t.Micros, p), truncMicros(u.Micros, p)
	if a != b {
		return a > b
	}
	if t.HasVersion && u.HasVersion && t.Version != u.Version {
		return t.Version > u.Version
	}
	return t.Removed && !u.Removed
}

// same reports whether t and u are the same change: neither is newer,
// and, where both say where their source holds them (Origin), the same
// place — an item an export holds is applied by the backfill of that
// export's line, and by a rerun of it.
func (t Token) same(u Token) bool {
	if t.Newer(u) || u.Newer(t) {
		return false
	}
	return t.Origin == "" || u.Origin == "" || t.Origin == u.Origin
}

func truncMicros(us int64, p pipeline.Precision) int64 {
	var unit int64
	switch p {
	case pipeline.Second:
		unit = int64(time.Second / time.Microsecond)
	case pipeline.Millisecond:
		unit = int64(time.Millisecond / time.Microsecond)
	default:
		return us
	}
	return us - us%unit
}

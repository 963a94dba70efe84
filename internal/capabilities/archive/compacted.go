package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The compacted form's layout. Compaction (package internal/capabilities/archive/lake)
// turns a partition's JSON-lines objects into objects of another format
// (Parquet) under
//
//	<prefix>/compacted/entity=<EntityType>/date=<YYYY-MM-DD>/<firstSeq>-<inputs>.parquet
//
// where firstSeq is the first input's name and inputs 16 hex digits of a
// digest of the inputs' keys and sizes. The readers here list that form
// beside the JSON-lines one; they decode it with the CompactedDecoder they
// are given (WithCompacted), so that the archiver, which only writes JSON
// lines, links no Parquet code.
const (
	// CompactedDir is the segment below the archive prefix that holds the
	// compacted form. It is no partition, so the JSON-lines table's
	// locations never include it.
	CompactedDir = "compacted"
	// CompactedExt ends every compacted object's name.
	CompactedExt = ".parquet"
	// LeaseDir, below CompactedDir, holds the compactions' partition
	// leases: in no partition, so no table and no reader takes them for
	// data.
	LeaseDir = "_leases"
	// MaxExpirySeconds is the largest TTL value (epoch seconds) the
	// archive takes for a time: 9999-12-31T23:59:59Z, the last a date
	// segment can spell.
	MaxExpirySeconds = maxEpochSeconds
)

// Input is one JSON-lines object a compacted object stands for: its key
// below the archive prefix and its size when it was compacted.
type Input struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
}

// CompactedObject is a compacted object, opened.
type CompactedObject interface {
	// Inputs lists the JSON-lines objects whose lines it holds.
	Inputs() []Input
	// Rows calls fn with each row's item (DynamoDB JSON, a JSON object) and
	// metadata, numbered from 1, and stops at fn's first error. The item
	// is valid only during the call.
	Rows(fn func(n int, item json.RawMessage, m Meta) error) error
}

// compactedDecoder opens the compacted object read from r; key names it in
// errors. lake.Decode is the one for the form lake.Compact writes.
type compactedDecoder func(r io.Reader, key string) (CompactedObject, error)

// ErrNoCompactedDecoder matches the error of a reader without a
// CompactedDecoder that finds a compacted object: it refuses the archive
// rather than leave the object's items out.
var ErrNoCompactedDecoder = errors.New("no decoder of the compacted form")

// WithCompacted has the archive's readers decode compacted objects with d
// (lake.Decode), and returns a. Without one, an archive holding compacted
// objects gives an error matching ErrNoCompactedDecoder.
func (a *Archive) WithCompacted(d compactedDecoder) *Archive {
	a.compacted = d
	return a
}

// OpenCompacted reads and opens the compacted object at key.
func (a *Archive) OpenCompacted(ctx context.Context, key string) (_ CompactedObject, err error) {
	if a.compacted == nil {
		return nil, fmt.Errorf("archive: %s is a compacted object, and this reader has %w: build it with WithCompacted(lake.Decode), package internal/capabilities/archive/lake", key, ErrNoCompactedDecoder)
	}
	rc, err := a.src.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	return a.compacted(rc, key)
}

// appendRawLine appends an archive line, without its newline, for an item
// already in DynamoDB JSON (as a compacted object holds it): AppendLine's
// bytes for the same item and metadata, less the newline.
func appendRawLine(buf []byte, item json.RawMessage, m Meta) []byte {
	buf = append(buf, `{"Item":`...)
	buf = append(buf, item...)
	return appendMeta(buf, m)
}

// Package export reads DynamoDB exports to S3 (or local copies of them):
// the export layout (AWSDynamoDB/<ExportId>/, manifest-summary.json,
// manifest-files.json, data/*.json.gz), its data files line by line, and
// incremental exports applied as an overlay onto a full export.
//
// It guarantees that what it hands out reconciles with the manifests: the
// manifest's item counts add up to the summary's, every data file holds
// exactly its itemCount lines and matches its md5Checksum, and every line is
// a well-formed export line; anything else fails with an error naming the
// file and the line, matching ErrCorrupt. ION exports are refused
// (ErrUnsupportedFormat). Incremental exports must leave no gap in time.
// What is built from an export lives beside it: export/repartition splits
// one by entity type, export/reimport loads the result back into DynamoDB,
// and internal/capabilities/verify recomputes the aggregates from one.
package export

import (
	"context"
	"io"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// Source is where exports are read from: a local directory or an S3
// bucket and prefix (objstore's stores). Keys are slash-separated and
// relative to the source's root.
type Source interface {
	// Open returns an object's body; a missing object gives an error
	// matching objstore.ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// List calls fn for every object whose key starts with prefix, in key
	// order.
	List(ctx context.Context, prefix string, fn func(objstore.Object) error) error
	// String names the root for people.
	String() string
}

// LineScanner checks full-export lines, {"Item":{...}}, without building
// the items: it validates each line's JSON and attribute values and finds
// its entity type, accepting exactly the lines dec.DecodeItem accepts (the
// same type, key and version attributes, the same limits). It is the fast
// path of a repartition, which copies lines byte for byte. It is not safe
// for concurrent use.
type LineScanner struct{ s *scanner }

// NewLineScanner returns a scanner of the lines dec decodes.
func NewLineScanner(dec *pipeline.ExportDecoder) *LineScanner {
	return &LineScanner{s: newScanner(dec)}
}

// Scan returns the string value of the entity-type attribute of the line's
// Item, and whether the item has one. A type attribute that is not a string
// is an error, as the decoders treat it. The slice is valid until the next
// call.
func (l *LineScanner) Scan(line []byte) (typ []byte, hasType bool, err error) {
	return l.s.scanItemLine(line)
}

package archive

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// What the compaction's tests (compact_test.go, package archive_test) need
// of this package's own tests: they live outside it because they use
// package lake, which imports it.

// SimArchive is an archive the exactly-once simulation wrote under the
// prefix "archive": the archiver's real output under faults, retries and
// redeliveries.
type SimArchive struct {
	// Dir holds the archive.
	Dir *objstore.Dir
	w   *workload
}

// NewSimArchive runs the simulation (TTL-filtered, over records records)
// and fails unless the archive it wrote holds every removal exactly once.
func NewSimArchive(tb testing.TB, seed uint64, records int) SimArchive {
	tb.Helper()
	res := simRun{seed: seed, filter: true, records: records}.run(tb)
	if res.err != nil {
		tb.Fatalf("the archive before compaction: %v", res.err)
	}
	return SimArchive{Dir: res.store.Dir, w: res.w}
}

// Check reports any removal of the workload that the archive in src does
// not hold exactly once, reading the compacted form with dec.
func (s SimArchive) Check(ctx context.Context, src Source, dec compactedDecoder) error {
	return checkArchiveOf(ctx, Open(src, "archive").WithCompacted(dec), s.w)
}

// Gunzip is gunzip.
var Gunzip = gunzip

// RaceDetector is raceDetector.
const RaceDetector = raceDetector

// Each is (*Selection).each, for the external tests.
func (s *Selection) Each(ctx context.Context, fn func(o ObjectInfo, item pipeline.Item, raw json.RawMessage) error) error {
	return s.each(ctx, fn)
}

package exportgen

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/tributary/tributary/internal/sim"
)

// PartWay writes to st a full export of the table a simulated history
// leaves part-way: after its first k records, k the first at or past frac
// of them whose next record is later, so that the export's point in time
// (its last change's) comes strictly before the next change. bucket and
// prefix are what the manifests record (Export.Bucket, Export.Prefix).
// It returns k and what was written.
func PartWay(ctx context.Context, st Store, h *sim.History, frac float64, seed uint64, bucket, prefix string, files int) (int, Result, error) {
	k := max(int(float64(len(h.Records))*frac), 1)
	for k < len(h.Records) && !h.Records[k].Time.After(h.Records[k-1].Time) {
		k++
	}
	items, _, _ := FromHistory(h, k)
	at := h.Records[k-1].Time
	res, err := WriteFull(ctx, st, Export{ID: ExportID(at, seed), Bucket: bucket, Prefix: prefix, Time: at, Files: files}, slices.Values(items))
	return k, res, err
}

// PeakHeap collects the garbage left before it (generating an export,
// say), then samples the heap in use, every 20 ms, until the returned
// function is called, which returns the largest sample: a benchmark's
// peak memory.
func PeakHeap() (stop func() uint64) {
	runtime.GC()
	var (
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak }
}

package repartition

import (
	"context"
	"errors"
	"sync"
)

// Run does the whole repartition: begin, every data file with workers in
// parallel (resuming files already done), then finish. The output's claim
// is released at the end, whatever happens: a run that failed leaves the
// output to the next (which resumes it).
func (r *Repartitioner) Run(ctx context.Context, workers int, force bool) (s *RunSummary, err error) {
	if done, err := r.begin(ctx, force); err != nil || done != nil {
		return done, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.release(ctx))
		}
	}()
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	keys := r.dataFiles()
	next := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range min(workers, len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				if _, _, err := r.processFile(ctx, k); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel(err)
					}
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for _, k := range keys {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return r.finish(ctx)
}

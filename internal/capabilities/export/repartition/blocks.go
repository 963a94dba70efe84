package repartition

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"

	"github.com/klauspost/compress/flate"

	"github.com/tributary/tributary/infra/objstore"
)

// sourceWriter routes the lines of one source to one pipe per entity type.
// Lines collect in blocks; each pipe's goroutine writes its blocks, in
// order, into parts.
//
// Gzip output is compressed block by block on a few goroutines shared by
// every pipe (as many as there are cores): each block is deflated on its
// own and ended with a sync flush, and a part is its blocks' output in
// order between one gzip header and trailer — a standard single-member
// gzip file, as parallel gzip writers make it. One warm compressor per core
// costs far less CPU than one per entity type taking turns on a core, and a
// single data file still uses every core. Other compressions stream
// through one compressor per pipe.
type sourceWriter struct {
	r      *Repartitioner
	ctx    context.Context
	cancel context.CancelCauseFunc
	id     string
	pipes  map[string]*entityPipe
	segs   *objstore.Names // each pipe's segment, with its entity type
	last   *entityPipe     // the pipe of the last line added by addBytes
	wg     sync.WaitGroup
	zq     chan *block // blocks to deflate (gzip only)
	zwg    sync.WaitGroup
}

type entityPipe struct {
	entity string
	seg    string
	cur    *block
	ch     chan *block
	parts  []PartInfo
	err    error
}

// block is a run of lines of one entity type, and for gzip its deflated
// form once done is closed.
type block struct {
	buf   []byte
	items int64
	out   []byte
	done  chan struct{}
}

// Block sizes: a block is sent once it holds maxBlock bytes, or fewer when
// a source has many entity types, so that the blocks being filled take
// about blockBudget bytes at most.
const (
	maxBlock    = 512 << 10
	minBlock    = 64 << 10
	blockBudget = 8 << 20
)

var blockPool = sync.Pool{New: func() any { return new(block) }}

func (r *Repartitioner) newSourceWriter(ctx context.Context, id string) *sourceWriter {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &sourceWriter{r: r, ctx: ctx, cancel: cancel, id: id, pipes: map[string]*entityPipe{}, segs: objstore.NewNames("entity types")}
	if r.opts.Compression == Gzip {
		n := runtime.GOMAXPROCS(0)
		w.zq = make(chan *block, n)
		w.zwg.Add(n)
		for range n {
			go w.deflate()
		}
	}
	return w
}

// deflate is a compressor goroutine: it deflates each block on its own,
// ending it with a sync flush, and closes its done channel.
func (w *sourceWriter) deflate() {
	defer w.zwg.Done()
	var fw *flate.Writer
	for b := range w.zq {
		if w.ctx.Err() == nil {
			if fw == nil {
				fw, _ = flate.NewWriter(io.Discard, gzipLevel(w.r.opts.Level)) // the level is checked by NewRepartitioner
			}
			b.out = b.out[:0]
			fw.Reset((*appender)(&b.out))
			_, _ = fw.Write(b.buf) // an appender never fails
			_ = fw.Flush()
		}
		close(b.done)
	}
}

// appender is an io.Writer that appends to a byte slice.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}

// add appends one line (without newline) to its entity's pipe.
func (w *sourceWriter) add(entity string, line []byte) error {
	p := w.pipes[entity]
	if p == nil {
		var err error
		if p, err = w.newPipe(entity); err != nil {
			return err
		}
	}
	return w.append(p, line)
}

// addBytes is add with the entity type as bytes, which the lookups do not
// copy. Items of one collection sit together in an export, so the last
// line's pipe is tried first.
func (w *sourceWriter) addBytes(entity []byte, line []byte) error {
	p := w.last
	if p == nil || p.entity != string(entity) {
		if p = w.pipes[string(entity)]; p == nil {
			var err error
			if p, err = w.newPipe(string(entity)); err != nil {
				return err
			}
		}
		w.last = p
	}
	return w.append(p, line)
}

// newPipe starts the pipe of an entity type. It refuses a type whose
// segment another type of the source has: their parts would have one name.
func (w *sourceWriter) newPipe(entity string) (*entityPipe, error) {
	seg := EntitySegment(entity)
	if err := w.segs.Add(seg, entity); err != nil {
		return nil, fmt.Errorf("repartition: source %s: %w", w.id, err)
	}
	p := &entityPipe{entity: entity, seg: seg, ch: make(chan *block, 2)}
	w.pipes[entity] = p
	w.wg.Add(1)
	go w.run(p)
	return p, nil
}

func (w *sourceWriter) append(p *entityPipe, line []byte) error {
	if p.cur == nil {
		p.cur = blockPool.Get().(*block)
	}
	p.cur.buf = append(p.cur.buf, line...)
	p.cur.buf = append(p.cur.buf, '\n')
	p.cur.items++
	if len(p.cur.buf) >= min(maxBlock, max(minBlock, blockBudget/len(w.pipes))) {
		return w.send(p)
	}
	return nil
}

// send passes the pipe's current block on: to the compressors (gzip), and
// to the pipe's goroutine.
func (w *sourceWriter) send(p *entityPipe) error {
	b := p.cur
	if w.zq != nil {
		b.done = make(chan struct{})
		select {
		case w.zq <- b:
		case <-w.ctx.Done():
			return context.Cause(w.ctx)
		}
	}
	// Once with the compressors, the block goes to the pipe even if the
	// run is cancelled meanwhile: the pipe waits for it and frees it.
	p.cur = nil
	p.ch <- b
	return nil
}

// close flushes every pipe, waits for them and returns the parts written.
func (w *sourceWriter) close() ([]PartInfo, error) {
	var err error
	for _, p := range w.pipes {
		if p.cur != nil && len(p.cur.buf) > 0 {
			if e := w.send(p); e != nil && err == nil {
				err = e
			}
		}
		close(p.ch)
	}
	w.stop()
	var parts []PartInfo
	for _, p := range w.pipes {
		if p.err != nil && err == nil {
			err = p.err
		}
		parts = append(parts, p.parts...)
	}
	if w.ctx.Err() != nil {
		// The first failure cancelled the others: report it, not theirs.
		err = context.Cause(w.ctx)
	}
	w.cancel(nil)
	if err != nil {
		return nil, err
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].Key < parts[j].Key })
	return parts, nil
}

// stop waits for the pipes (whose channels are closed) and the compressors.
func (w *sourceWriter) stop() {
	w.wg.Wait()
	if w.zq != nil {
		close(w.zq)
		w.zwg.Wait()
	}
}

// abort stops every pipe; no part of an aborted source is committed after
// this returns, though parts committed earlier stay (and are removed as
// orphans, or overwritten, by the next run).
func (w *sourceWriter) abort(cause error) {
	w.cancel(cause)
	for _, p := range w.pipes {
		close(p.ch)
	}
	w.stop()
}

// run is a pipe's goroutine: it writes blocks into parts, starting a new
// part past MaxPartBytes.
func (w *sourceWriter) run(p *entityPipe) {
	defer w.wg.Done()
	var pw *partWriter
	fail := func(err error) {
		if p.err == nil {
			p.err = err
			w.cancel(err)
		}
	}
	for b := range p.ch {
		if b.done != nil {
			<-b.done
		}
		if p.err == nil && w.ctx.Err() == nil {
			if pw == nil {
				key := fmt.Sprintf("%s/part-%s-%04d%s", p.seg, w.id, len(p.parts), w.r.opts.Compression.ext())
				var err error
				if pw, err = newPartWriter(w.ctx, w.r.out, key, w.r.opts.Compression, w.r.opts.Level); err != nil {
					fail(err)
				}
			}
			if pw != nil {
				if err := pw.write(b); err != nil {
					fail(err)
				} else if pw.info.UncompressedBytes >= w.r.opts.MaxPartBytes {
					if err := pw.commit(w.ctx); err != nil {
						fail(err)
					} else {
						pw.info.Entity = p.entity
						p.parts = append(p.parts, pw.info)
					}
					pw = nil
				}
			}
		}
		b.buf, b.out, b.items, b.done = b.buf[:0], b.out[:0], 0, nil
		blockPool.Put(b)
	}
	if pw == nil {
		return
	}
	if p.err != nil || w.ctx.Err() != nil {
		pw.abort()
		return
	}
	if err := pw.commit(w.ctx); err != nil {
		fail(err)
		return
	}
	pw.info.Entity = p.entity
	p.parts = append(p.parts, pw.info)
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/metrics"
	"github.com/tributary/tributary/pipeline"
)

// Options configures a Handler. The zero value works.
type Options struct {
	// Prefix is prepended to every object key ("" writes at the root). It
	// has no leading or trailing slash.
	Prefix string
	// TTLAttribute names the item attribute holding its expiry in epoch
	// seconds, which dates the item. Default "ttl".
	TTLAttribute string
	// Concurrency is the number of objects written at once. Default 8.
	Concurrency int
	// Logger receives one line per batch and one per failed write; nil
	// means slog.Default().
	Logger *slog.Logger
	// Metrics receives CloudWatch embedded-metric-format lines, one set per
	// batch; nil writes none.
	Metrics io.Writer
	// Namespace and Function are the metrics namespace (default "Tributary")
	// and the Function dimension (default: the Lambda function's name, or
	// "archiver").
	Namespace, Function string
}

// defaultConcurrency is the default number of objects written at once.
const defaultConcurrency = 8

// Handler archives the TTL removals of a batch of stream changes: it is the
// archiver function's pipeline.BatchHandler. See the package documentation
// for the naming and reporting rule it follows.
type Handler struct {
	store Putter
	opts  Options

	archived, ignored, objects, failedPuts atomic.Int64
}

var _ pipeline.BatchHandler = (*Handler)(nil)

// ImageNeed says that the archiver needs old images: what it archives of a
// TTL removal is the item's image before it.
func (h *Handler) ImageNeed() pipeline.ImageNeed {
	return pipeline.ImageNeed{Images: pipeline.OldImages, Why: "the archiver archives the old image of each TTL removal"}
}

// New returns a Handler writing to store.
func New(store Putter, opts Options) *Handler {
	if opts.TTLAttribute == "" {
		opts.TTLAttribute = pipeline.DefaultTTLAttribute
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = defaultConcurrency
	}
	metrics.Defaults(&opts.Logger, &opts.Namespace)
	if opts.Function == "" {
		opts.Function = lambdacontext.FunctionName
	}
	if opts.Function == "" {
		opts.Function = "archiver"
	}
	return &Handler{store: store, opts: opts}
}

// Stats counts what a Handler has done since it was made.
type Stats struct {
	// Archived is the number of TTL removals in the batches handled, whether
	// their objects were written or not: a retried batch counts them again.
	Archived int64
	// Ignored is the number of changes that were not TTL removals.
	Ignored int64
	// Objects is the number of objects written; FailedPuts the number of
	// writes that failed.
	Objects, FailedPuts int64
}

// Stats returns the handler's counters.
func (h *Handler) Stats() Stats {
	return Stats{
		Archived:   h.archived.Load(),
		Ignored:    h.ignored.Load(),
		Objects:    h.objects.Load(),
		FailedPuts: h.failedPuts.Load(),
	}
}

// group is the part of a batch that goes into one object: the TTL removals
// of one (entity, date), in stream order.
type group struct {
	key   string
	first int // index in the batch of the group's first record
	items int
	lines []byte
}

// plan is what a batch comes to.
type plan struct {
	groups  []*group // in order of their first record
	ignored int
	// cut is the index of the first TTL removal that cannot be archived in
	// this batch (no old image, a permanent failure; or a type whose
	// segment another type of the batch has, which the retry from it
	// archives); groups hold only records before it. cut == len(changes)
	// and cutErr == nil when every record can be handled.
	cut    int
	cutErr error
}

// plan groups the batch's TTL removals by (entity, date).
func (h *Handler) plan(changes []pipeline.Change) plan {
	p := plan{cut: len(changes)}
	byPart := make(map[string]*group)
	segments := objstore.NewNames("entity types")
	for i := range changes {
		c := &changes[i]
		if !c.TTL || c.Kind != pipeline.Remove {
			p.ignored++
			continue
		}
		if c.Old == nil {
			p.cut = i
			p.cutErr = pipeline.Permanent(fmt.Errorf("TTL removal of %s (seq %s) has no old image to archive: the stream view type must be NEW_AND_OLD_IMAGES or OLD_IMAGE",
				pipeline.KeyString(c.Keys), c.Position.SequenceNumber))
			break
		}
		seg := EntitySegment(c.OldType)
		if err := segments.Add(seg, c.OldType); err != nil {
			// Two types whose segments are one hash: never in one object.
			// The records before this one are archived; this one is
			// reported, and the retry from it puts its type first.
			p.cut = i
			p.cutErr = fmt.Errorf("TTL removal of %s (seq %s): %w; archiving the records before it, and the rest from it in the next batch",
				pipeline.KeyString(c.Keys), c.Position.SequenceNumber, err)
			break
		}
		part := "entity=" + seg + "/date=" + dateOf(c.Old, h.opts.TTLAttribute, c.Time)
		g := byPart[part]
		if g == nil {
			g = &group{
				key:   joinKey(h.opts.Prefix, part+"/"+c.Position.SequenceNumber+ext),
				first: i,
			}
			byPart[part] = g
			p.groups = append(p.groups, g)
		}
		g.lines = AppendLine(g.lines, c.Old, metaOf(c))
		g.items++
	}
	return p
}

func joinKey(prefix, rel string) string {
	if prefix == "" {
		return rel
	}
	return prefix + "/" + rel
}

// write writes every group's object, Concurrency at a time, and returns one
// error per group (nil where the object was written).
func (h *Handler) write(ctx context.Context, groups []*group) []error {
	errs := make([]error, len(groups))
	sem := make(chan struct{}, h.opts.Concurrency)
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = h.store.Put(ctx, g.key, Gzip(g.lines))
		}()
	}
	wg.Wait()
	return errs
}

// HandleBatch implements pipeline.BatchHandler. It writes one object per
// (entity, date) of the batch's TTL removals and ignores (and counts) every
// other change. If any object is not written, it reports the batch's first
// change as failed, never a later one, so that Lambda retries the whole batch
// from the same checkpoint; see the package documentation for why.
//
// A TTL removal without an old image cannot be archived. The records before
// it are archived as a batch of their own, and the removal is reported as a
// permanent failure, for the event source mapping's retries and on-failure
// destination to deal with. So is a TTL removal of a type whose entity
// segment another type of the batch has (two types hashed alike, which
// SHA-256 makes impossible to arrange but tests arrange): two types never
// share an object, and the removal is reported (not as permanent) so that
// the retry from it archives it first in its batch.
func (h *Handler) HandleBatch(ctx context.Context, changes []pipeline.Change) error {
	start := time.Now()
	p := h.plan(changes)
	errs := h.write(ctx, p.groups)

	var failed []error
	items, bytes := 0, 0
	for i, g := range p.groups {
		items += g.items
		bytes += len(g.lines)
		if errs[i] != nil {
			failed = append(failed, errs[i])
			h.opts.Logger.LogAttrs(ctx, slog.LevelError, "archive object not written",
				slog.String("key", g.key), slog.Int("items", g.items), slog.String("error", errs[i].Error()))
		}
	}
	h.ignored.Add(int64(p.ignored))
	h.archived.Add(int64(items))
	h.objects.Add(int64(len(p.groups) - len(failed)))
	h.failedPuts.Add(int64(len(failed)))
	h.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "archive batch",
		slog.Int("records", len(changes)), slog.Int("ttlRemovals", items), slog.Int("ignored", p.ignored),
		slog.Int("objects", len(p.groups)), slog.Int("failedObjects", len(failed)),
		slog.Duration("duration", time.Since(start)))
	h.emit(ctx, items, p.ignored, len(p.groups)-len(failed), len(failed), bytes)

	if len(failed) > 0 {
		return &pipeline.BatchError{Index: 0, Err: fmt.Errorf("archive: %d of %d objects not written: %w",
			len(failed), len(p.groups), errors.Join(failed...))}
	}
	if p.cutErr != nil {
		return &pipeline.BatchError{Index: p.cut, Err: p.cutErr}
	}
	return nil
}

func (h *Handler) emit(ctx context.Context, items, ignored, objects, failed, bytes int) {
	if h.opts.Metrics == nil {
		return
	}
	set := metrics.Archive.New(h.opts.Namespace, map[string]string{"Function": h.opts.Function})
	set.Add("ArchivedItems", float64(items))
	set.Add("IgnoredRecords", float64(ignored))
	set.Add("ArchiveObjects", float64(objects))
	set.Add("ArchivePutFailures", float64(failed))
	set.Add("ArchiveUncompressedBytes", float64(bytes))
	if _, err := set.WriteTo(h.opts.Metrics, time.Now()); err != nil {
		h.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "metrics not written", slog.String("error", err.Error()))
	}
}

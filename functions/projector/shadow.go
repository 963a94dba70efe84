package projector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/internal/capabilities/redrive"
	"github.com/tributary/tributary/internal/metrics"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections/driver"
)

// Why a shadow rides on the live projector.
//
// A DynamoDB stream serves two readers per shard, and the stack's projector
// and archiver are both. A new projection set (a changed definition, a new
// projection) is built into a table of its own: backfilled from an export,
// then kept current from the stream — by the same function, from the same
// batches, after the live set. The shadow is exactly once on its table as
// the live set is on its own (each has its own ledger). Its failures never
// fail a live record: the live set's response is what Lambda gets, and a
// batch the shadow could not apply in full (or at all, or in time) is
// counted, logged and kept, as an S3 on-failure destination keeps a
// discarded batch, for `tributary redrive --table SHADOW`; applying it
// again is harmless.

// Keeper keeps the batches a shadow could not apply: an S3 prefix or a
// directory (infra/objstore's stores).
type Keeper interface {
	Put(ctx context.Context, key string, body []byte) error
}

// An Option adds to a projector what its environment variables name.
type Option func(*options)

type options struct {
	shadow driver.Table
	keep   Keeper
}

// WithShadow makes the projector keep a shadow set (Config.ShadowProjections)
// on table, keeping the batches it cannot apply in keep.
func WithShadow(table driver.Table, keep Keeper) Option {
	return func(o *options) { o.shadow, o.keep = table, keep }
}

// Handler is a projector's Lambda handler: the live set's processor and,
// with a shadow, the shadow's behind it.
type Handler struct {
	live   *pipeline.Processor
	shadow *shadow
}

// Invoke handles one event: the live set's processor gives the response;
// then the shadow, if any, applies the same event, within the time the
// invocation has left.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	res, err := h.live.Process(ctx, payload)
	var out []byte
	if err == nil {
		out, err = h.live.Response(res)
	}
	if h.shadow != nil {
		h.shadow.invoke(ctx, payload, res.Newest)
	}
	return out, err
}

// ShadowFailures is how many batches the shadow could not apply in full,
// since the handler was made.
func (h *Handler) ShadowFailures() int64 {
	if h.shadow == nil {
		return 0
	}
	return h.shadow.failures.Load()
}

type shadow struct {
	proc    *pipeline.Processor // nil: it could not start (initErr)
	initErr error
	// start opens the shadow's engine again while it could not start,
	// once per shadowRetry at most; lastTry is when it last tried.
	start    func(ctx context.Context) (*pipeline.Processor, error)
	lastTry  time.Time
	source   pipeline.Source
	keep     Keeper
	prefix   string
	table    string
	log      *slog.Logger
	metrics  io.Writer
	failures atomic.Int64
	// applied is the newest change the shadow applied in this environment;
	// behind, while it has applied none, the live set's newest change when
	// the shadow first failed: the lag is measured from them.
	applied, behind time.Time
}

// shadowMargin is the time a shadow leaves its invocation: it stops, and
// keeps the batch, that long before the invocation's deadline.
const shadowMargin = 2 * time.Second

// shadowRetry is how often a shadow that could not start (its table
// missing, or another set's) tries again, in an environment that lives on.
const shadowRetry = time.Minute

func (s *shadow) invoke(ctx context.Context, payload []byte, liveNewest time.Time) {
	start := time.Now()
	if s.proc == nil && s.start != nil && start.Sub(s.lastTry) >= shadowRetry {
		s.lastTry = start
		if p, err := s.start(ctx); err != nil {
			s.initErr = err
		} else {
			s.proc, s.initErr = p, nil
			s.log.Info("shadow started")
		}
	}
	why := s.initErr
	if why == nil {
		sctx := ctx
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			sctx, cancel = context.WithDeadline(ctx, d.Add(-shadowMargin))
			defer cancel()
		}
		res, err := s.proc.Process(sctx, payload)
		why = err
		switch {
		case err != nil:
		case res.Report != "":
			why = fmt.Errorf("records from %s on failed", quote.ID(res.Report))
		case res.Newest.After(s.applied):
			s.applied = res.Newest
		}
	}
	n := 0.0
	if why != nil {
		n = 1
		s.failures.Add(1)
		key, err := s.keepBatch(ctx, payload, why)
		attrs := []any{"shadowTable", s.table, "error", quote.Short(why.Error())}
		if err != nil {
			s.log.Error("shadow batch failed and could not be kept: replay the stream into the shadow table to recover it", append(attrs, "keepError", err.Error())...)
		} else {
			s.log.Warn("shadow batch failed; kept for redrive", append(attrs, "kept", key)...)
		}
	}
	if why != nil && s.applied.IsZero() && s.behind.IsZero() {
		s.behind = liveNewest
	}
	if s.metrics != nil {
		set := metrics.Shadow.New("", nil)
		set.Add("ShadowFailures", n)
		set.AddDuration("ShadowDuration", time.Since(start))
		if lag, ok := s.lag(liveNewest); ok {
			set.AddDuration("ShadowLag", lag)
		}
		if _, err := set.WriteTo(s.metrics, time.Now()); err != nil {
			s.log.Warn("shadow metrics not written", "error", err.Error())
		}
	}
}

// lag is how far the shadow's newest applied change is behind the live
// set's newest: from the shadow's newest in this environment, or, while it
// has applied none, from the live set's newest when it first failed (a
// lower bound). There is none to tell before either set applied a change.
func (s *shadow) lag(liveNewest time.Time) (time.Duration, bool) {
	from := s.applied
	if from.IsZero() {
		from = s.behind
	}
	if liveNewest.IsZero() || from.IsZero() {
		return 0, false
	}
	return max(0, liveNewest.Sub(from)), true
}

// keepBatch writes the event as an invocation record under a key of its
// content, so that a batch delivered again replaces its record.
func (s *shadow) keepBatch(ctx context.Context, payload []byte, why error) (string, error) {
	if s.keep == nil {
		return "", errors.New("no SHADOW_FAILURES location")
	}
	var batch redrive.BatchInfo
	var ev struct {
		Records []struct {
			EventSourceARN string `json:"eventSourceARN"`
			EventID        string `json:"eventID"`
			DynamoDB       struct {
				SequenceNumber string `json:"SequenceNumber"`
			} `json:"dynamodb"`
			Kinesis struct {
				SequenceNumber string `json:"sequenceNumber"`
			} `json:"kinesis"`
		} `json:"Records"`
	}
	if json.Unmarshal(payload, &ev) == nil && len(ev.Records) > 0 {
		first, last := ev.Records[0], ev.Records[len(ev.Records)-1]
		batch.StreamARN, batch.BatchSize = first.EventSourceARN, len(ev.Records)
		batch.StartSequenceNumber, batch.EndSequenceNumber = first.DynamoDB.SequenceNumber, last.DynamoDB.SequenceNumber
		if s.source == pipeline.SourceKinesis {
			batch.StartSequenceNumber, batch.EndSequenceNumber = first.Kinesis.SequenceNumber, last.Kinesis.SequenceNumber
		}
	}
	body, err := redrive.Record(s.source, batch, "ShadowFailed", quote.Short(why.Error()), payload, time.Now())
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(payload)
	key := s.prefix + hex.EncodeToString(sum[:16]) + ".json"
	if err := s.keep.Put(ctx, key, body); err != nil {
		return "", fmt.Errorf("keeping the shadow's failed batch as %s: %w", key, err)
	}
	return key, nil
}

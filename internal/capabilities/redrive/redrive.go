package redrive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// Objects lists and reads the objects of an on-failure destination: an S3
// prefix or a local copy of it (`aws s3 sync s3://bucket/prefix DIR`), as
// objstore's stores give them. Keys with a segment that starts with "." (a
// copy's hidden files, .DS_Store and the like) are passed over.
type Objects interface {
	// List calls fn for every object whose key starts with prefix, in key
	// order.
	List(ctx context.Context, prefix string, fn func(objstore.Object) error) error
	// Open returns an object's body.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Config configures Run.
type Config struct {
	// Handler applies the changes: the projection engine, as in the
	// projector functions.
	Handler pipeline.BatchHandler
	// Options decodes the records.
	Options pipeline.Options
	// Logger receives the processors' logs; nil: slog.Default().
	Logger *slog.Logger
	// Each, if set, is told about each object once it is done.
	Each func(ObjectResult)
}

// ObjectResult is what became of one object.
type ObjectResult struct {
	Key string
	// Invocation is the record read; nil when it could not be read.
	Invocation *Invocation
	// Records is how many records its payload held, Applied how many were
	// handled (already applied ones included: redriving is idempotent),
	// Skipped how many no projection reads (no entity type, or another).
	Records, Applied, Skipped int
	// Failed lists the records that failed again: permanent failures,
	// passed over; or the first transient failure, which stopped the object.
	Failed []pipeline.Failure
	// Err is why the object could not be redriven at all, or stopped.
	Err error
}

// done reports whether every record of the object is applied.
func (r ObjectResult) done() bool { return r.Err == nil && len(r.Failed) == 0 }

// Report sums up a redrive.
type Report struct {
	Objects, Done             int // objects read, and fully applied
	Records, Applied, Skipped int
	Failed                    int // records that failed again
	Unreadable                int // objects that are not invocation records with a payload that is an event
	Results                   []ObjectResult
}

// Run redrives every object: parses the invocation record, decodes its
// payload, and runs it through a Kinesis or a DynamoDB Streams processor
// (pipeline.NewKinesisProcessor, pipeline.NewStreamsProcessor) over
// cfg.Handler — the projectors' code path — with permanent failures logged
// and passed over (pipeline.SkipPermanent), so that one poison record does
// not hold back the rest. Objects are independent: one that fails does not
// stop the others. The error is for a failed listing or a cancelled ctx.
func Run(ctx context.Context, objs Objects, cfg Config) (Report, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pc := pipeline.Config{Options: cfg.Options, Permanent: pipeline.SkipPermanent, Logger: cfg.Logger, Function: "redrive"}
	procs := map[pipeline.Source]*pipeline.Processor{
		pipeline.SourceKinesis: pipeline.NewKinesisProcessor(cfg.Handler, pc),
		pipeline.SourceStreams: pipeline.NewStreamsProcessor(cfg.Handler, pc),
	}
	var rep Report
	err := objs.List(ctx, "", func(o objstore.Object) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		key := o.Key
		if hidden(key) {
			return nil
		}
		res := ObjectResult{Key: key}
		data, err := read(ctx, objs, key)
		if err == nil {
			res.Invocation, err = Parse(key, data)
		}
		if err == nil {
			var pr pipeline.Result
			pr, err = procs[res.Invocation.Source].Process(ctx, res.Invocation.Payload)
			res.Records, res.Applied, res.Skipped, res.Failed = pr.Records, pr.Applied, pr.Skipped, pr.Failed
			if err == nil && pr.Report != "" {
				err = fmt.Errorf("stopped at record %s: %w", pr.Report, pr.Failed[len(pr.Failed)-1].Err)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.Err = err
		}
		rep.Objects++
		rep.Records += res.Records
		rep.Applied += res.Applied
		rep.Skipped += res.Skipped
		rep.Failed += len(res.Failed)
		switch {
		case res.done():
			rep.Done++
		case res.Invocation == nil || errors.Is(res.Err, ErrNoPayload) || errors.Is(res.Err, pipeline.ErrNotEvent):
			rep.Unreadable++
		}
		rep.Results = append(rep.Results, res)
		if cfg.Each != nil {
			cfg.Each(res)
		}
		return nil
	})
	return rep, err
}

// hidden reports whether a key has a segment that starts with ".".
func hidden(key string) bool {
	return strings.HasPrefix(key, ".") || strings.Contains(key, "/.")
}

// read reads an object, up to one byte past MaxRecordBytes (Parse refuses
// what is longer).
func read(ctx context.Context, objs Objects, key string) (_ []byte, err error) {
	r, err := objs.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("redrive: %w", err)
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	b, err := io.ReadAll(io.LimitReader(r, maxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("redrive: reading %s: %w", key, err)
	}
	return b, nil
}

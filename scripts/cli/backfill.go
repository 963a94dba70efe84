package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// defaultBatch is the backfill's batch into DynamoDB (its transactions
// hold 100 items: a batch is their group); embeddedInFlight the items the
// batches into the embedded store hold at once, over the workers. bbolt
// writes every page a commit touches anew, so a commit of 10,000 items
// costs less per item than one of 1,000: durable, on 2 workers, the
// 1,000,000-item ledger export took 61.0 s in batches of 1,000 (95 MB),
// 41.6 s in batches of 10,000 (406 MB), 44.9 s in batches of 20,000
// (707 MB) (docs/backfill.md, "Local speed with durability").
const (
	defaultBatch     = 1000
	embeddedInFlight = 20_000
)

// runBackfill is `tributary backfill`: build the projections' aggregates
// from an export, into a store that the stream then keeps current.
func runBackfill(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("backfill", "")
	var xf exportFlags
	xf.register(fs)
	var sf storeFlags
	sf.register(fs)
	specFile := specFlag(fs)
	var only subsetFlag
	only.register(fs)
	workers := fs.Int("workers", runtime.NumCPU(), "data files backfilled at once")
	batch := fs.Int("batch-size", 0, fmt.Sprintf("items per batch through the engine (default: with --store, %d items in flight over the workers, at least %d a batch; with --table, %d): the embedded store commits a batch at once, and a larger commit costs it less per item", embeddedInFlight, defaultBatch, defaultBatch))
	exportTime := fs.String("export-time", "", "the export's point in time (RFC 3339), for an export whose manifest does not say it")
	var hf handoffFlag
	hf.register(fs)
	noSync := fs.Bool("no-sync", false, "with --store: do not fsync the embedded store (a crash of the process loses nothing, but a power cut or a crash of the machine can lose the last commits or corrupt the file: then backfill into a new store; the durable default syncs once a batch)")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if e, err = e.withSpec(*specFile); err != nil {
		return err
	}
	if e.set() == nil {
		return errNoProjections
	}
	set, err := only.set(e)
	if err != nil {
		return err
	}
	if *batch == 0 {
		*batch = defaultBatch
		if sf.table == "" {
			*batch = max(defaultBatch, embeddedInFlight / *workers)
		}
	}
	if *workers < 1 || *batch < 1 {
		return fmt.Errorf("%w: --workers and --batch-size must be at least 1", errUsage)
	}
	if err := hf.check(); err != nil {
		return err
	}
	var asOf time.Time
	if *exportTime != "" {
		if asOf, err = time.Parse(time.RFC3339Nano, *exportTime); err != nil {
			return fmt.Errorf("%w: --export-time %s: want an RFC 3339 time, e.g. 2026-11-30T10:00:02Z", errUsage, quote.Value(*exportTime))
		}
	}
	if err := xf.resolve(e); err != nil {
		return err
	}
	src, overlay, err := xf.open(ctx, e)
	if err != nil {
		return err
	}
	sf.noSync = *noSync
	st, closeStore, err := sf.open(ctx, true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	eng, err := openEngine(ctx, st, sf.String(), set, engine.Config{Logger: log})
	if err != nil {
		return err
	}
	handoff, err := hf.open(ctx, sf.endpoint)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	return runBackfillJob(ctx, e, w, backfillRun{
		verb: "backfill", src: src, overlay: overlay, engine: eng, store: st, set: set, workers: *workers,
		opts:    backfill.Options{Decode: pipeline.Options{Schema: xf.schema}, BatchSize: *batch, SkipMD5: xf.skipMD5, AsOf: asOf, Handoff: handoff},
		handoff: true,
		title:   fmt.Sprintf("backfill of %s into %s", src, sf.String()),
		words:   [3]string{"item states", "store", "no projection reads"}, reads: "the projections read",
		failed: "%d items in %d data files that the projections could not take (listed above, or by the run that read them): they are in no aggregate, and the gate cannot agree while the export holds them. Each is applied when its item next changes on the stream; otherwise fix the projections and backfill a new table",
		stream: func(from string) string {
			return fmt.Sprintf("the stream's changes from %s on must reach this store: a projector (or shadow) attached before then, or `%s replay --start %s`", from, e.Name, from)
		},
	})
}

// backfillRun is one run of a backfill job, as a command prints it.
type backfillRun struct {
	verb    string // the progress line's
	src     *export.Export
	overlay *export.Overlay
	engine  *engine.Engine
	store   driver.Store
	set     *projections.Set
	workers int
	opts    backfill.Options
	// title is the first line's start: what is backfilled into what.
	title string
	// words name, in the items line, what the engine writes, where, and
	// what reads the types it skips; reads what reads the types it takes.
	words [3]string
	reads string
	// failed is the status line of a job complete but for items it could
	// not take (its %ds: how many, in how many files); stream the line
	// that says from when the stream must reach the store.
	failed string
	stream func(from string) string
	// handoff: the store is caught up by `replay --start` when nothing was
	// attached to it before the export (opts.Handoff, --replay-from, the
	// stream that replay reads); without opts.Handoff, a note says that the
	// hand-off guard did not run.
	handoff bool
}

// handoffFlag is --replay-from, the stream a backfilled store is caught
// up from by `replay --start` when nothing was attached to it before the
// export: the hand-off guard refuses a backfill that would finish after
// the stream has trimmed the export's second.
type handoffFlag struct{ from string }

func (f *handoffFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&f.from, "replay-from", "", "the stream the store will be caught up from by `replay --start` (replay's --from: kinesis://STREAM, or streams://TABLE for its DynamoDB stream, which keeps 24 hours): when nothing was attached to the store before the export, refuse a backfill that would finish after the stream has trimmed the export's second (with --endpoint, that server's Kinesis)")
}

func (f *handoffFlag) check() error {
	if f.from != "" && !streamLocation(f.from) {
		return fmt.Errorf("%w: --replay-from %s: want kinesis://STREAM (a name or ARN) or streams://TABLE (a table name or ARN, or its stream's ARN), as replay's --from", errUsage, quote.Value(f.from))
	}
	return nil
}

// open returns the guard's Handoff: the stream's retention (a Kinesis
// stream's read through endpoint when given); nil without --replay-from.
func (f *handoffFlag) open(ctx context.Context, endpoint string) (*backfill.Handoff, error) {
	if f.from == "" {
		return nil, nil
	}
	var cfg aws.Config
	if strings.HasPrefix(f.from, "kinesis://") {
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("loading AWS configuration: %w", err)
		}
		if endpoint != "" {
			cfg.BaseEndpoint = aws.String(endpoint)
		}
	}
	retention, err := streamRetention(ctx, cfg, f.from)
	if err != nil {
		return nil, fmt.Errorf("--replay-from: %w", err)
	}
	return &backfill.Handoff{Retention: retention, Stream: f.from}, nil
}

// handoffLine is the guard's estimate as the running command prints it.
func handoffLine(h *backfill.Handoff, e backfill.Estimate) string {
	trim := fmt.Sprintf("%s trims the export's second about %s", h.Stream, e.Deadline.UTC().Format(time.RFC3339))
	switch {
	case e.Finish.IsZero() && e.Headroom < 0:
		return fmt.Sprintf("hand-off: %s trimmed the export's second about %s, %s ago", h.Stream, e.Deadline.UTC().Format(time.RFC3339), (-e.Headroom).Round(time.Second))
	case e.Finish.IsZero():
		return fmt.Sprintf("hand-off: %s, in %s", trim, e.Headroom.Round(time.Second))
	}
	when := "before"
	if e.Headroom < 0 {
		when = "after"
	}
	return fmt.Sprintf("hand-off: at %.0f items/s, %d of %d items read, the backfill would finish about %s, %s %s %s", e.Rate, e.Done, e.Items,
		e.Finish.UTC().Format(time.RFC3339), e.Headroom.Abs().Round(time.Second), when, trim)
}

// runBackfillJob opens the job, runs it with a progress line on stderr
// and prints what it did to w: its title and point in time, its files,
// its items and its failures, and that it stopped when it did (a nil job:
// it did not open). The caller says what comes next.
func runBackfillJob(ctx context.Context, e *Env, w io.Writer, r backfillRun) error {
	progress := newByteProgress(e.Stderr, r.verb, r.src.Summary.ItemCount)
	progress.unit = "items"
	r.opts.Progress = progress.addItems
	if h := r.opts.Handoff; h != nil {
		hc := *h
		hc.Report = func(est backfill.Estimate) { // from a goroutine of the guard's
			progress.print(fmt.Sprintf("%s %s: %s", e.Name, r.verb, handoffLine(h, est)))
		}
		r.opts.Handoff = &hc
	}
	job, err := backfill.Open(r.src, r.overlay, r.engine, r.store, r.set, r.opts)
	if err != nil {
		return err
	}
	if r.handoff && r.opts.Handoff == nil {
		attached, err := job.Attached(ctx)
		if err != nil {
			return err
		}
		if !attached {
			fmt.Fprintf(e.Stderr, "%s %s: note: the hand-off guard did not run: nothing was attached to the %s before the export, so it must be caught up by `%s replay --start %s`, which needs the stream to hold that second still; give --replay-from with replay's --from to refuse a backfill that would finish after the stream trims it (docs/backfill.md, \"The hand-off\")\n",
				e.Name, r.verb, r.words[1], e.Name, job.AsOf().Truncate(time.Second).Format(time.RFC3339))
		}
	}
	start := time.Now()
	sum, runErr := job.Run(ctx, r.workers)
	progress.done()
	took := time.Since(start)
	s := sum.Stats
	fmt.Fprintf(w, "%s, as of %s (job %s)\n", r.title, job.AsOf().Format(time.RFC3339Nano), job.ID())
	fmt.Fprintf(w, "files:    %d (%d done by an earlier run)\n", sum.Files, sum.FilesDone)
	rate := 0.0
	if took > 0 {
		rate = float64(sum.Items) / took.Seconds()
	}
	// An item skipped is either one this job applied in an earlier run
	// (its ledger entry is this very state: a resumed run redoes the files
	// not done) or one the store holds newer (the stream got there first).
	fmt.Fprintf(w, "items:    %d read in %.1fs (%.0f items/s); %d %s written in %d transactions (%.0f write units), %d already applied (an earlier run), %d newer in the %s, %d of types %s\n",
		sum.Items, took.Seconds(), rate, s.Items, r.words[0], s.Transactions, s.WriteUnits, s.Repeated, s.Stale-s.Repeated, r.words[1], s.Unprojected, r.words[2])
	if sum.Items > 0 && s.Items == 0 && s.Stale == 0 && sum.Failed == 0 {
		fmt.Fprintf(w, "warning:  none of the %d items is of a type %s (%s), by the attribute %s: is that the table's type attribute (--type-attribute)?\n",
			sum.Items, r.reads, printableList(r.set.EntityTypes(), ", "), quote.Printable(r.opts.Decode.Schema.TypeAttribute))
	}
	for _, f := range sum.Failures {
		fmt.Fprintf(w, "failed:   %s\n", quote.Printable(f.Error()))
	}
	if n := sum.Failed - int64(len(sum.Failures)); n > 0 {
		fmt.Fprintf(w, "failed:   ... and %d more\n", n)
	}
	var failed *backfill.FailedItemsError
	if errors.Is(runErr, backfill.ErrRefused) {
		mixed, err := job.Mixed(ctx)
		for _, m := range mixed {
			fmt.Fprintf(w, "mixed:    %s: items of it were applied from an object that is not the exported one (%s); no run can tell them from the export's own: backfill into a new store\n",
				quote.Printable(m.File), quote.Printable(m.Error))
		}
		fmt.Fprintf(w, "status:   refused; the same command would be refused again: the error says what to do instead\n")
		return errors.Join(runErr, err)
	}
	if runErr != nil && !errors.As(runErr, &failed) {
		fmt.Fprintf(w, "status:   stopped; run the same command again to resume\n")
		return runErr
	}
	if failed != nil {
		fmt.Fprintf(w, "status:   complete but for "+r.failed+"\n", failed.Items, failed.Files)
	} else {
		fmt.Fprintf(w, "status:   complete\n")
	}
	fmt.Fprintf(w, "stream:   %s\n", r.stream(job.AsOf().Truncate(time.Second).Format(time.RFC3339)))
	if failed != nil {
		return errFailed
	}
	return nil
}

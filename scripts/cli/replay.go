package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/kinesisread"
	"github.com/tributary/tributary/infra/streamsread"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/replay"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
	"github.com/tributary/tributary/projections/driver"
)

const replayUsage = `--from kinesis://STREAM|streams://TABLE [--start TRIM_HORIZON|<RFC3339>|SHARD:SEQ,...] [--until <RFC3339>]
       [--projection NAME]... (--store DIR | --table NAME | --rebuild-into NEW_TABLE) [--endpoint URL] [--dry-run]

Replays a window of the table's change stream into the projections, through the
projector's engine: exactly once, whatever was applied before. Progress is saved
in a checkpoint; run the same command again to resume an interrupted replay, or
to catch up with what the stream received since.`

// replayFlags are replay's command line.
type replayFlags struct {
	from, start, until, rebuild  string
	projections                  multiFlag
	store                        storeFlags
	dryRun, restart, verbose     bool
	caughtUp                     bool
	checkpointDir, checkpointTab string
	projs                        projectionFlags
	decode                       pipeline.Options // the projections' attributes, from projs
	batch, concurrency           int
	limit                        int64
}

func runReplay(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("replay", replayUsage)
	var f replayFlags
	fs.StringVar(&f.from, "from", "", "the stream: kinesis://STREAM (name or ARN) or streams://TABLE (table name or ARN, or the stream's ARN)")
	fs.StringVar(&f.start, "start", "TRIM_HORIZON", "where the window starts: TRIM_HORIZON, an RFC 3339 time, or SHARD:SEQ[,SHARD:SEQ...] (e.g. a failed batch's shardId and startSequenceNumber)")
	fs.StringVar(&f.until, "until", "", "where the window ends, an RFC 3339 time (default: until caught up with the stream)")
	fs.Var(&f.projections, "projection", "apply only this projection (repeat for several); needs a store of its own: --rebuild-into, or a new --store")
	f.store.register(fs)
	fs.StringVar(&f.rebuild, "rebuild-into", "", "build the projections from scratch into this new DynamoDB table (created), for a blue/green switch")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read and decide what would be written; write nothing (neither aggregates nor checkpoint)")
	fs.StringVar(&f.checkpointDir, "checkpoint-dir", "", "directory of checkpoint files (default <--store DIR>/checkpoints, or the user cache directory)")
	fs.StringVar(&f.checkpointTab, "checkpoint-table", "", "keep the checkpoint in this DynamoDB table instead (string keys PK and SK; the aggregate table will do)")
	fs.BoolVar(&f.restart, "restart", false, "discard this replay's checkpoint and read the window from its start")
	fs.IntVar(&f.batch, "batch-size", 1000, "records per read of a shard, and per batch applied")
	fs.IntVar(&f.concurrency, "concurrency", 4, "shards read at once (children wait for their parents)")
	fs.Int64Var(&f.limit, "limit", 0, "stop after applying this many records; the next run resumes (0: no limit)")
	fs.BoolVar(&f.verbose, "v", false, "log as JSON to stderr")
	fs.BoolVar(&f.caughtUp, "caught-up", false, "into a backfilled store: a projector has applied the stream to it since before the backfill's export time, so a window starting later leaves nothing out")
	f.projs.register(fs, typeFlag|versionFlag)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if e, f.decode, err = e.withProjections(f.projs); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	plan, err := f.check()
	if err != nil {
		return err
	}
	log := e.engineLog(f.verbose)

	awsCfg, err := f.awsConfig(ctx)
	if err != nil {
		return err
	}
	src, srcName, err := f.source(ctx, awsCfg, plan)
	if err != nil {
		return err
	}
	st, target, closeStore, err := f.target(ctx, awsCfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()

	bm, _, err := backfill.ReadMarker(ctx, st)
	if err != nil {
		return err
	}
	if bm != nil && !f.caughtUp && plan.spec.At == nil && !f.dryRun {
		var start time.Time
		if plan.spec.Start.Type == shardread.AtTimestamp {
			start = plan.spec.Start.Time
		}
		retention, err := f.retention(ctx, awsCfg)
		if err != nil {
			return err
		}
		if err := backfill.WindowGap(bm, start, retention, time.Now()); err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
	}

	selected, err := e.set().Select(f.projections...)
	if err != nil {
		return fmt.Errorf("%w: --projection: %v", errUsage, err)
	}
	var names []string
	if len(f.projections) > 0 {
		names = selected.Names()
	}
	var (
		writeTo driver.Table = st
		dry     *engine.DryRun
	)
	if f.dryRun {
		dry = engine.NewDryRun(st)
		writeTo = dry
	}
	eng, err := openEngine(ctx, writeTo, target, selected, engine.Config{Logger: log})
	if err != nil {
		return err
	}

	cps, cpWhere, err := f.checkpoints(awsCfg)
	if err != nil {
		return err
	}
	projList := "all"
	if names != nil {
		projList = strings.Join(names, ",")
	}
	job := checkpoint.JobID(srcName, plan.spec.String(), f.until, projList, target)
	if f.rebuild != "" && !f.dryRun && !f.restart {
		if err := freshRebuild(ctx, st, cps, job, f.rebuild); err != nil {
			return err
		}
	}

	rc := shardread.Config{
		Start: plan.spec.Start, At: plan.spec.At, Until: plan.until, BatchSize: f.batch, Concurrency: f.concurrency,
		MaxRecords: f.limit, Logger: log,
	}
	rp := replay.New(replay.Config{
		Source: src, Reader: rc, Handler: eng, Checkpoints: cps, Job: job, Restart: f.restart, ReadOnly: f.dryRun, Logger: log,
		About: map[string]string{"source": srcName, "start": plan.spec.String(), "until": f.until, "projections": projList, "target": target},
	})

	out := e.Stdout
	window := "until caught up"
	if f.until != "" {
		window = "until " + plan.until.Format(time.RFC3339Nano)
	}
	dryNote := ""
	if f.dryRun {
		dryNote = " (dry run: nothing is written)"
	}
	fmt.Fprintf(out, "replay %s from %s %s into %s, projections: %s%s\n", srcName, plan.spec, window, target, projList, dryNote)
	fmt.Fprintf(out, "checkpoint: %s, job %s\n", cpWhere, job)

	prog := startReplayProgress(e.Stderr, rp)
	t0 := time.Now()
	sum, runErr := rp.Run(ctx)
	prog.stop()
	stats := eng.Stats()
	printReplaySummary(e, sum, stats, dry, time.Since(t0))

	switch {
	case runErr != nil && ctx.Err() != nil:
		fmt.Fprintln(out, "status:   interrupted; run the same command to resume from the checkpoint")
		return fmt.Errorf("interrupted: %w", ctx.Err())
	case runErr != nil:
		fmt.Fprintln(out, "status:   stopped by an error; the checkpoint holds what was applied: fix the cause and run the same command to resume")
		return runErr
	case sum.Read.Limited:
		fmt.Fprintf(out, "status:   stopped at --limit %d; run the same command to go on\n", f.limit)
	case sum.Finished:
		fmt.Fprintln(out, "status:   window complete: every shard read to the window's end")
		markCaughtUp(ctx, e, st, bm, plan)
	default:
		lag := "up to the tip of every shard"
		if !sum.Read.Latest.IsZero() {
			lag += " (newest record " + sum.Read.Latest.UTC().Format(time.RFC3339) + ")"
		}
		fmt.Fprintln(out, "status:   caught up with the stream, "+lag)
		markCaughtUp(ctx, e, st, bm, plan)
		if f.rebuild != "" {
			fmt.Fprintf(out, "rebuild:  %s has caught up. Keep it current by running this command again (it resumes), or start a kinesis-projector on it; then switch readers to it (docs/replay.md, \"Rebuild, blue/green\").\n", f.rebuild)
		}
	}
	if f.dryRun && sum.Resumed {
		fmt.Fprintln(out, "note:     the dry run started from the saved checkpoint, as the real run would")
	}
	if sum.Failed > 0 {
		return errFailed
	}
	return nil
}

// markCaughtUp records in a backfilled store that a replay from at or
// before its export's time has completed; a failure to is reported, and
// changes nothing but that a later replay must say --caught-up.
func markCaughtUp(ctx context.Context, e *Env, st store, bm *backfill.Marker, plan replayPlan) {
	if bm == nil || !bm.CaughtUp.IsZero() || plan.spec.At != nil {
		return
	}
	if plan.spec.Start.Type == shardread.AtTimestamp && plan.spec.Start.Time.After(bm.AsOf.Truncate(time.Second)) {
		return
	}
	if err := backfill.MarkCaughtUp(ctx, st, time.Now()); err != nil {
		fmt.Fprintf(e.Stderr, "%s replay: the store is caught up, but recording it failed (the next replay needs --caught-up): %s\n", e.Name, quote.Printable(err.Error()))
	}
}

// retention is how far back the source stream keeps records: Kinesis's
// retention period, or DynamoDB Streams' 24 hours.
func (f *replayFlags) retention(ctx context.Context, cfg aws.Config) (time.Duration, error) {
	return streamRetention(ctx, cfg, f.from)
}

// streamLocation says whether loc names a stream as replay's --from does:
// kinesis://STREAM or streams://TABLE.
func streamLocation(loc string) bool {
	for _, scheme := range []string{"kinesis://", "streams://"} {
		if rest, ok := strings.CutPrefix(loc, scheme); ok && rest != "" {
			return true
		}
	}
	return false
}

// streamRetention is how long the stream at loc (kinesis://STREAM or
// streams://TABLE) keeps its records: a Kinesis stream's retention period
// (DescribeStreamSummary), DynamoDB Streams' 24 hours.
func streamRetention(ctx context.Context, cfg aws.Config, loc string) (time.Duration, error) {
	name, ok := strings.CutPrefix(loc, "kinesis://")
	if !ok {
		return streamsread.Retention, nil
	}
	return kinesisread.Retention(ctx, kinesis.NewFromConfig(cfg), name)
}

// replayPlan is the command line, checked.
type replayPlan struct {
	spec  shardread.StartSpec
	until time.Time
}

func (f *replayFlags) check() (replayPlan, error) {
	var p replayPlan
	var errs []string
	if !streamLocation(f.from) {
		errs = append(errs, "--from must be kinesis://STREAM or streams://TABLE")
	}
	var err error
	if p.spec, err = shardread.ParseStart(f.start); err != nil {
		errs = append(errs, "--"+err.Error())
	}
	if f.until != "" {
		if p.until, err = time.Parse(time.RFC3339Nano, f.until); err != nil {
			errs = append(errs, fmt.Sprintf("--until %q: want an RFC 3339 time", f.until))
		} else if p.spec.Start.Type == shardread.AtTimestamp && !p.until.After(p.spec.Start.Time) {
			errs = append(errs, "--until must be after --start")
		}
	}
	targets := 0
	for _, s := range []string{f.store.dir, f.store.table, f.rebuild} {
		if s != "" {
			targets++
		}
	}
	switch {
	case targets == 0:
		errs = append(errs, "give --store DIR, --table NAME or --rebuild-into NEW_TABLE")
	case targets > 1:
		errs = append(errs, "--store, --table and --rebuild-into are exclusive")
	}
	if f.rebuild != "" && f.dryRun {
		errs = append(errs, "--dry-run with --rebuild-into would build nothing; dry-run against --store or --table")
	}
	if f.checkpointDir != "" && f.checkpointTab != "" {
		errs = append(errs, "--checkpoint-dir and --checkpoint-table are exclusive")
	}
	if f.batch < 1 || f.batch > kinesisread.MaxBatch {
		errs = append(errs, fmt.Sprintf("--batch-size must be between 1 and %d", kinesisread.MaxBatch))
	}
	if f.concurrency < 1 {
		errs = append(errs, "--concurrency must be at least 1")
	}
	if f.limit < 0 {
		errs = append(errs, "--limit must not be negative")
	}
	if len(errs) > 0 {
		return p, fmt.Errorf("%w: %s", errUsage, strings.Join(errs, "; "))
	}
	return p, nil
}

// awsConfig loads the AWS configuration; --endpoint, when given, applies
// to every client the command makes.
func (f *replayFlags) awsConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if f.store.endpoint != "" {
		cfg.BaseEndpoint = aws.String(f.store.endpoint)
	}
	return cfg, nil
}

func (f *replayFlags) source(ctx context.Context, cfg aws.Config, plan replayPlan) (shardread.Source, string, error) {
	if name, ok := strings.CutPrefix(f.from, "kinesis://"); ok {
		return kinesisread.New(kinesis.NewFromConfig(cfg), name, f.decode), f.from, nil
	}
	table := strings.TrimPrefix(f.from, "streams://")
	client := dynamodbstreams.NewFromConfig(cfg)
	arn, err := streamsread.StreamARN(ctx, client, table)
	if err != nil {
		return nil, "", err
	}
	if plan.until.IsZero() && plan.spec.Start.Type == shardread.AtTimestamp && time.Since(plan.spec.Start.Time) > streamsread.Retention {
		return nil, "", fmt.Errorf("%w: --start %s is more than 24 hours ago: DynamoDB Streams keeps a day; replay from Kinesis or an export", errUsage, plan.spec)
	}
	return streamsread.New(client, arn, f.decode), "streams://" + arn, nil
}

// target opens the store to write to: --store, --table or a new table for
// --rebuild-into. It returns the store and a name for it.
func (f *replayFlags) target(ctx context.Context, cfg aws.Config) (store, string, func() error, error) {
	switch {
	case f.store.dir != "":
		st, closeStore, err := f.store.open(ctx, true)
		if err != nil {
			return nil, "", nil, err
		}
		abs, _ := filepath.Abs(f.store.dir)
		return st, "store:" + abs, closeStore, nil
	case f.store.table != "":
		// An existing table (the live aggregate table): no CreateTable, for
		// which an operator's role need not have the permission.
		st, closeStore, err := f.store.open(ctx, false)
		return st, "table:" + f.store.table, closeStore, err
	}
	client := dynamodb.NewFromConfig(cfg)
	if err := dynamostore.CreateTable(ctx, client, f.rebuild); err != nil {
		return nil, "", nil, err
	}
	return dynamostore.New(client, f.rebuild), "table:" + f.rebuild, func() error { return nil }, nil
}

// checkpoints returns the checkpoint store and where it is, for people.
func (f *replayFlags) checkpoints(cfg aws.Config) (checkpoint.Store, string, error) {
	if f.checkpointTab != "" {
		return checkpoint.NewTable(dynamodb.NewFromConfig(cfg), f.checkpointTab), "table " + f.checkpointTab, nil
	}
	dir := f.checkpointDir
	switch {
	case dir != "":
	case f.store.dir != "":
		dir = filepath.Join(f.store.dir, "checkpoints")
	default:
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, "", fmt.Errorf("%w: no user cache directory (%v): give --checkpoint-dir or --checkpoint-table", errUsage, err)
		}
		dir = filepath.Join(cache, "tributary", "checkpoints")
	}
	return checkpoint.NewDir(dir), dir, nil
}

// freshRebuild refuses to rebuild into a table that already holds
// aggregates, unless it is this job's own (a checkpoint says so).
func freshRebuild(ctx context.Context, st store, cps checkpoint.Store, job, table string) error {
	if _, err := cps.Load(ctx, job); err == nil {
		return nil // resuming this rebuild
	} else if !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	empty, err := engine.Empty(ctx, st)
	if err != nil {
		return err
	}
	if !empty {
		return fmt.Errorf("%w: --rebuild-into %s: the table already holds aggregates and no checkpoint of this rebuild: a rebuild goes into a new table (or add --restart to rebuild over it)", errUsage, table)
	}
	return nil
}

func printReplaySummary(e *Env, sum replay.Summary, s engine.Stats, dry *engine.DryRun, took time.Duration) {
	out := e.Stdout
	r := sum.Read
	resumed := ""
	if sum.Resumed {
		resumed = ", resumed from the checkpoint"
	}
	fmt.Fprintf(out, "read:     %d records from %d shards (%d finished, %d caught up%s) in %.1fs; read %.1fs, apply %.1fs (summed over shards)\n",
		r.Records, r.Shards, r.ShardsDone, r.ShardsCaughtUp, resumed, took.Seconds(), r.ReadTime.Seconds(), r.HandleTime.Seconds())
	if r.BeforeStart > 0 || r.AfterUntil > 0 || r.Throttles > 0 || r.ExpiredIterators > 0 || r.ShardsExpired > 0 {
		fmt.Fprintf(out, "          outside the window: %d before it, %d after it; %d throttled calls waited out, %d iterators renewed, %d shards expired before they were read\n",
			r.BeforeStart, r.AfterUntil, r.Throttles, r.ExpiredIterators, r.ShardsExpired)
	}
	verb := "applied: "
	if dry != nil {
		txs, actions := dry.Counts()
		verb = "would apply:"
		fmt.Fprintf(out, "%s %d item states in %d transactions (%d write actions)\n", verb, s.Items, txs, actions)
	} else {
		fmt.Fprintf(out, "%s %d item states written in %d transactions (%.0f write units)\n", verb, s.Items, s.Transactions, s.WriteUnits)
	}
	fmt.Fprintf(out, "skipped:  %d already applied (duplicates, earlier runs), %d superseded by a newer change in their batch, %d of entity types no projection here reads\n",
		s.Stale, s.Superseded, s.Unprojected)
	fmt.Fprintf(out, "failed:   %d records", sum.Failed)
	if sum.Bisections > 0 {
		fmt.Fprintf(out, " (%d failed batches applied in halves)", sum.Bisections)
	}
	fmt.Fprintln(out)
	for _, f := range sum.Failures {
		fmt.Fprintf(e.Stderr, "failed: shard %s seq %s item %s (%s): %s\n", quote.Printable(f.Shard), quote.Printable(f.Seq), quote.Printable(f.Item), quote.Printable(quote.Short(f.EntityType)), quote.Printable(f.Err.Error()))
	}
	if n := sum.Failed - int64(len(sum.Failures)); n > 0 {
		fmt.Fprintf(e.Stderr, "failed: ... and %d more (run with -v for every one)\n", n)
	}
}

// replayProgress prints a progress line: records, rate, how far behind the
// stream's tip, and an estimate of the time left from how fast that lag
// shrinks; on a terminal one line rewritten every second, elsewhere a line
// of its own every progressEvery.
type replayProgress struct {
	done chan struct{}
	wg   sync.WaitGroup
	w    io.Writer
	tty  bool
}

func startReplayProgress(w io.Writer, rp *replay.Replay) *replayProgress {
	p := &replayProgress{done: make(chan struct{}), w: w, tty: isTerminal(w)}
	every, format := progressEvery, "replaying: %d records, %.0f/s, %s behind the stream's tip, ETA %s\n"
	if p.tty {
		every, format = time.Second, "\rreplaying: %d records, %.0f/s, %s behind the stream's tip, ETA %s   "
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		start := time.Now()
		tick := time.NewTicker(every)
		defer tick.Stop()
		var (
			lastLag time.Duration
			lastAt  time.Time
			speed   float64 // stream time caught up per second of wall time
		)
		for {
			select {
			case <-p.done:
				return
			case now := <-tick.C:
				s := rp.Progress()
				el := now.Sub(start).Seconds()
				if !lastAt.IsZero() {
					if gain := (lastLag - s.Behind).Seconds() / now.Sub(lastAt).Seconds(); gain > 0 {
						if speed == 0 {
							speed = gain
						} else {
							speed = 0.7*speed + 0.3*gain
						}
					}
				}
				lastLag, lastAt = s.Behind, now
				eta := "--"
				switch {
				case s.Behind == 0 && s.Records > 0:
					eta = "0s"
				case speed > 0:
					eta = (time.Duration(s.Behind.Seconds()/speed) * time.Second).Round(time.Second).String()
				}
				fmt.Fprintf(p.w, format,
					s.Records, float64(s.Records)/el, s.Behind.Round(time.Second), eta)
			}
		}
	}()
	return p
}

func (p *replayProgress) stop() {
	close(p.done)
	p.wg.Wait()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

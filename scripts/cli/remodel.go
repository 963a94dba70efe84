package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/internal/capabilities/backfill"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/remodel"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/projections/driver/target"
)

// targetFile is the embedded target's file under a remodel's --store
// directory: a store of target items, not an aggregate store.
const targetFile = "target.db"

// remodelSubcommands are `tributary remodel`'s.
var remodelSubcommands = []struct{ name, summary string }{
	{"backfill", "put an export's items through the transform into the target, exactly once with the stream"},
	{"apply", "run captured Lambda events (Streams or Kinesis form) through the remodeler's handler into the target"},
	{"verify", "compare the target with the transform of an export as of its time (the gate before a switch)"},
	{"items", "print the target's items, one {\"Item\": …} DynamoDB JSON line each"},
}

// runRemodel is `tributary remodel`: a live table's items put through a
// transform into a target table of a new key design, backfilled from an
// export and kept current from the stream (docs/remodel.md).
func runRemodel(ctx context.Context, e *Env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(e.Stderr, "Usage: %s remodel <subcommand> [flags]\n\nSubcommands:\n", e.Name)
		for _, s := range remodelSubcommands {
			fmt.Fprintf(e.Stderr, "  %-9s %s\n", s.name, s.summary)
		}
		fmt.Fprintf(e.Stderr, "\nRun '%s remodel <subcommand> -h' for its flags; docs/remodel.md for the road.\n", e.Name)
		if len(args) == 0 {
			return fmt.Errorf("%w: a subcommand is required", errUsage)
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "backfill":
		return remodelBackfill(ctx, e, args[1:])
	case "apply":
		return remodelApply(ctx, e, args[1:])
	case "verify":
		return remodelVerify(ctx, e, args[1:])
	case "items":
		return remodelItems(ctx, e, args[1:])
	}
	return fmt.Errorf("%w: unknown subcommand %s (backfill, apply, verify or items)", errUsage, quote.Value(args[0]))
}

// remodelFlags are what every remodel subcommand but items takes: the
// transform (a binary's, or a spec's) and the target.
type remodelFlags struct {
	transform, spec string
	target          targetFlags
}

func (f *remodelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.transform, "transform", "", "the transform, by name: one of this binary's (repartition --list-transforms lists them), or of the --spec file")
	fs.StringVar(&f.spec, "spec", "", "a spec file declaring the transform (docs/projections-spec.md, \"Transforms\"), in place of this binary's; with several, name one with --transform")
	f.target.register(fs)
}

// targetFlags choose a remodel's target: an embedded one under a
// directory, or a DynamoDB table and its ledger table.
type targetFlags struct {
	dir, table, ledger, endpoint string
	noSync                       bool
}

func (f *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "store", "", "directory of the embedded target (a store of target items, created if missing)")
	fs.StringVar(&f.table, "table", "", "the DynamoDB target table (instead of --store)")
	fs.StringVar(&f.ledger, "ledger-table", "", "with --table: the target's ledger table (default <table>"+dynamostore.LedgerSuffix+")")
	fs.StringVar(&f.endpoint, "endpoint", "", "DynamoDB endpoint URL, e.g. a local AWS-protocol server (with --table)")
}

// String names the target for messages.
func (f *targetFlags) String() string {
	if f.table != "" {
		return "table " + f.table + " (ledger " + f.ledgerTable() + ")"
	}
	return "store " + f.dir
}

func (f *targetFlags) ledgerTable() string {
	if f.ledger != "" {
		return f.ledger
	}
	return dynamostore.LedgerTable(f.table)
}

// remodelTarget is a remodel's target as the subcommands use it.
type remodelTarget interface {
	driver.Table
	remodel.Reader
}

// open opens the target of transform t for the source schema: the
// target's key is the transform's, or the table's own (a DynamoDB table,
// or what an embedded target recorded), or the source's key attributes.
// With create, a target that does not exist is created (a DynamoDB table
// on-demand, keyed by the transform, saying so on stderr), and a ledger
// table that does not exist too.
func (f *targetFlags) open(ctx context.Context, e *Env, t *projections.Transform, schema pipeline.Schema, create bool) (remodelTarget, *remodel.Remodel, func() error, error) {
	switch {
	case f.dir != "" && f.table != "":
		return nil, nil, nil, fmt.Errorf("%w: --store and --table are exclusive", errUsage)
	case f.dir == "" && f.table == "":
		return nil, nil, nil, fmt.Errorf("%w: give --store DIR or --table NAME", errUsage)
	case f.ledger != "" && f.table == "":
		return nil, nil, nil, fmt.Errorf("%w: --ledger-table goes with --table", errUsage)
	case f.table != "" && f.ledgerTable() == f.table:
		return nil, nil, nil, fmt.Errorf("%w: --ledger-table is the target table: the ledger needs a table of its own", errUsage)
	}
	if f.dir != "" {
		return f.openDir(t, schema, create)
	}
	client, err := f.client(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	tableKey, err := dynamostore.TargetKeyOf(ctx, client, f.table)
	if _, missing := errors.AsType[*types.ResourceNotFoundException](err); missing && create {
		tableKey = target.Key{}
	} else if err != nil {
		return nil, nil, nil, err
	}
	key, err := remodel.ResolveKey(t, tableKey, schema)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("table %s: %w", f.table, err)
	}
	r, err := remodel.New(t, key, schema)
	if err != nil {
		return nil, nil, nil, err
	}
	if create {
		if tableKey.Partition.Name == "" {
			fmt.Fprintf(e.Stderr, "%s: the target table %s does not exist: creating it keyed %s, on-demand (a production target is the team's own: docs/remodel.md)\n", e.Name, f.table, key)
		}
		if err := dynamostore.CreateTargetTables(ctx, client, f.table, f.ledgerTable(), key); err != nil {
			return nil, nil, nil, err
		}
	}
	return dynamostore.NewTarget(client, f.table, f.ledgerTable(), r.Name(), key), r, func() error { return nil }, nil
}

func (f *targetFlags) client(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if f.endpoint != "" {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	}), nil
}

// openDir opens the embedded target under f.dir: the one it holds, which
// must be t's, or, with create, a new one.
func (f *targetFlags) openDir(t *projections.Transform, schema pipeline.Schema, create bool) (remodelTarget, *remodel.Remodel, func() error, error) {
	path := filepath.Join(f.dir, targetFile)
	var opts []boltstore.Option
	if f.noSync {
		opts = append(opts, boltstore.WithoutSync())
	}
	var recorded target.Key
	if _, err := os.Stat(path); err == nil {
		ts, err := boltstore.OpenTarget(path, "", target.Key{}, opts...)
		if err != nil {
			return nil, nil, nil, err
		}
		if ts.Name() != t.Name {
			_ = ts.Close() // the error says why
			return nil, nil, nil, fmt.Errorf("store %s holds the target of transform %s, not %s: a target is one remodel's (remodel into a new directory)", f.dir, ts.Name(), t.Name)
		}
		recorded = ts.Key
		key, err := remodel.ResolveKey(t, recorded, schema)
		if err == nil {
			var r *remodel.Remodel
			if r, err = remodel.New(t, key, schema); err == nil {
				return ts, r, ts.Close, nil
			}
		}
		_ = ts.Close() // the error says why
		return nil, nil, nil, fmt.Errorf("store %s: %w", f.dir, err)
	} else if !create {
		return nil, nil, nil, fmt.Errorf("no remodel target at %s", path)
	}
	key, err := remodel.ResolveKey(t, recorded, schema)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := remodel.New(t, key, schema)
	if err != nil {
		return nil, nil, nil, err
	}
	ts, err := boltstore.OpenTarget(path, r.Name(), key, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	return ts, r, ts.Close, nil
}

// transformOf returns the transform the flags name, and the environment
// it runs in (the spec's attributes, when it comes from a spec).
func (f *remodelFlags) transformOf(e *Env) (*Env, *projections.Transform, error) {
	if f.spec == "" {
		if f.transform == "" {
			return nil, nil, fmt.Errorf("%w: give --transform NAME or --spec FILE", errUsage)
		}
		t, err := e.Environment.Transform(f.transform)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --transform: %v", errUsage, err)
		}
		return e, t, nil
	}
	env, err := e.Environment.WithSpec(f.spec)
	if err != nil {
		return nil, nil, fmt.Errorf("--spec: %w", err)
	}
	with := *e
	with.Environment = env
	declared := with.Environment.Transforms[len(e.Environment.Transforms):]
	switch {
	case f.transform != "":
		for _, t := range declared {
			if t.Name == f.transform {
				return &with, t, nil
			}
		}
		return nil, nil, fmt.Errorf("%w: --transform %s: the spec %s declares no such transform (it declares %s)", errUsage, f.transform, f.spec, names(declared))
	case len(declared) == 1:
		return &with, declared[0], nil
	case len(declared) == 0:
		return nil, nil, fmt.Errorf("%w: --spec %s declares no transform", errUsage, f.spec)
	}
	return nil, nil, fmt.Errorf("%w: --spec %s declares %s: name one with --transform", errUsage, f.spec, names(declared))
}

func names(ts []*projections.Transform) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// remodelBackfill is `tributary remodel backfill`.
func remodelBackfill(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("remodel backfill", "")
	var rf remodelFlags
	rf.register(fs)
	var xf exportFlags
	xf.register(fs)
	xf.attrs.register(fs, ttlFlag)
	workers := fs.Int("workers", runtime.NumCPU(), "data files backfilled at once")
	batch := fs.Int("batch-size", 1000, "items per batch through the engine")
	exportTime := fs.String("export-time", "", "the export's point in time (RFC 3339), for an export whose manifest does not say it")
	fs.BoolVar(&rf.target.noSync, "no-sync", false, "with --store: do not fsync the embedded target (a crash of the process loses nothing, but a power cut or a crash of the machine can lose the last commits or corrupt the file: then backfill into a new target; the durable default syncs once a batch)")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *workers < 1 || *batch < 1 {
		return fmt.Errorf("%w: --workers and --batch-size must be at least 1", errUsage)
	}
	var asOf time.Time
	if *exportTime != "" {
		if asOf, err = time.Parse(time.RFC3339Nano, *exportTime); err != nil {
			return fmt.Errorf("%w: --export-time: %v", errUsage, err)
		}
	}
	e, t, err := rf.transformOf(e)
	if err != nil {
		return err
	}
	if err := xf.resolve(e); err != nil {
		return err
	}
	src, overlay, err := xf.open(ctx, e)
	if err != nil {
		return err
	}
	target, r, closeTarget, err := rf.target.open(ctx, e, t, xf.schema, true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeTarget()) }()
	eng, err := r.Open(ctx, target, engine.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("%s: %w", rf.target.String(), err)
	}
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	return runBackfillJob(ctx, e, w, backfillRun{
		verb: "remodel backfill", src: src, overlay: overlay, engine: eng, store: target, set: r.Set(), workers: *workers,
		opts:  backfill.Options{Decode: pipeline.Options{Schema: xf.schema}, BatchSize: *batch, SkipMD5: xf.skipMD5, AsOf: asOf},
		title: fmt.Sprintf("remodel backfill of %s by transform %s into %s, keyed %s", src, r.Name(), rf.target.String(), r.Key()),
		words: [3]string{"source items' states", "target", "the transform does not take"}, reads: "the transform takes",
		failed: "%d source items in %d data files that the transform could not take (listed above, or by the run that read them): they are not in the target, and the gate cannot agree while the export holds them. Each is applied when its item next changes on the stream; otherwise fix the transform and backfill a new target",
		stream: func(from string) string {
			return fmt.Sprintf("the stream's changes from %s on must reach this target: the remodeler attached before then (docs/remodel.md), or `%s remodel apply` of them", from, e.Name)
		},
	})
}

// remodelApply is `tributary remodel apply`: captured Lambda events
// through exactly the remodeler's handler.
func remodelApply(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("remodel apply", "")
	var rf remodelFlags
	rf.register(fs)
	var files multiFlag
	fs.Var(&files, "events", "captured Lambda event file (DynamoDB Streams or Kinesis form); repeat for several")
	format := fs.String("format", "", "event form: streams or kinesis (default: told from each file's structure)")
	verbose := fs.Bool("v", false, "log each batch as JSON to stderr")
	var sf schemaFlags
	sf.register(fs, typeFlag|versionFlag|ttlFlag)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		return fmt.Errorf("%w: no --events files", errUsage)
	}
	e, t, err := rf.transformOf(e)
	if err != nil {
		return err
	}
	schema, err := e.schema(sf)
	if err != nil {
		return err
	}
	target, r, closeTarget, err := rf.target.open(ctx, e, t, schema, true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeTarget()) }()
	log := e.engineLog(*verbose)
	eng, err := r.Open(ctx, target, engine.Config{Logger: log})
	if err != nil {
		return fmt.Errorf("%s: %w", rf.target.String(), err)
	}
	cfg := pipeline.Config{Logger: log, Options: pipeline.Options{Schema: schema}}
	failed := false
	for _, name := range files {
		_, _, report, err := processEvent(ctx, e, r.Handler(eng), cfg, name, *format, "types the transform does not take")
		if err != nil {
			return err
		}
		failed = failed || report
	}
	s := eng.Stats()
	fmt.Fprintf(e.Stdout, "engine: %d changes, %d source items' states written in %d transactions, %d stale, %d superseded, %.0f write units\n",
		s.Changes, s.Items, s.Transactions, s.Stale, s.Superseded, s.WriteUnits)
	if failed {
		return errFailed
	}
	return nil
}

// remodelVerify is `tributary remodel verify`: the gate.
func remodelVerify(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("remodel verify", "")
	var rf remodelFlags
	rf.register(fs)
	var xf exportFlags
	xf.register(fs)
	xf.attrs.register(fs, ttlFlag)
	partitions := fs.Int("partitions", 4096, "hash partitions of the key space compared by their content hashes")
	maxPrint := fs.Int("max-print", 100, fmt.Sprintf("print at most this many differences, at most %d (0: all that were named); the check names at least 1000 and reads again up to 64 target items for each it may name, holding them in memory", maxPrintLimit))
	at := fs.String("at", "", "the check's time (RFC 3339, no later than now), which the target items' TTL is compared with (default now)")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *partitions < 1 || *partitions > remodel.MaxPartitions {
		return fmt.Errorf("%w: --partitions must be between 1 and %d (the check holds four 24-byte hashes per partition: %d MiB at the most)", errUsage, remodel.MaxPartitions, remodel.MaxPartitions*4*24>>20)
	}
	if err := checkMaxPrint(*maxPrint, "all that were named"); err != nil {
		return err
	}
	now := time.Now()
	if *at != "" {
		t, err := time.Parse(time.RFC3339Nano, *at)
		if err != nil {
			return fmt.Errorf("%w: --at: %v", errUsage, err)
		}
		if t.After(now) {
			return fmt.Errorf("%w: --at %s is after now (%s): every TTL passed by then would count as passed, and target items compared by key alone; give a time no later than now", errUsage, t.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339))
		}
		now = t
	}
	e, t, err := rf.transformOf(e)
	if err != nil {
		return err
	}
	if err := xf.resolve(e); err != nil {
		return err
	}
	if xf.export == "" {
		return fmt.Errorf("%w: --export is required", errUsage)
	}
	target, r, closeTarget, err := rf.target.open(ctx, e, t, xf.schema, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeTarget()) }()
	// The target must be this remodel's: another transform's would differ
	// everywhere.
	m, err := engine.ReadMarker(ctx, target)
	if err != nil {
		return err
	}
	if m == nil || !sameIDs(m.Set, r.Set().IDs()) {
		return fmt.Errorf("%s: %w", rf.target.String(), &engine.SetMismatchError{Table: m, Engine: r.Set().IDs()})
	}
	bm, _, err := backfill.ReadMarker(ctx, target)
	if err != nil {
		return err
	}
	reads := xf.countReads(e, "remodel verify")
	src, overlay, err := xf.open(ctx, e)
	if err != nil {
		return err
	}
	reads.start(src, overlay)
	defer reads.prog.done()
	start := time.Now()
	res, err := r.Check(ctx, src, overlay, target, remodel.CheckOptions{
		Decode: pipeline.Options{Schema: xf.schema}, SkipMD5: xf.skipMD5, Now: now, Partitions: *partitions,
		MaxNamed: max(*maxPrint, 1000),
	})
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	as := "as of the export"
	if !res.AsOf.IsZero() {
		as = "as of " + res.AsOf.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "compared %d target items with the %d the transform %s makes of %d items of %s (%s) in %.1fs: %d hash partitions, %d differing\n",
		res.Found, res.Expected, r.Name(), res.Items, src, as, time.Since(start).Seconds(), res.Partitions, res.Differing)
	if res.Changed > 0 {
		fmt.Fprintf(w, "%d source items changed since the export: told apart by their state in the ledger, and checked against it\n", res.Changed)
	}
	if res.Expired > 0 {
		fmt.Fprintf(w, "%d items left out: their TTL (%s) passed before %s, and the target's own TTL may have removed them\n", res.Expired, r.TTLAttribute(), now.UTC().Format(time.RFC3339))
	}
	if !res.Newest.IsZero() {
		fmt.Fprintf(w, "the newest state the target's ledger records is from %s", res.Newest.Format(time.RFC3339Nano))
		if lag := now.Sub(res.Newest); lag > 0 {
			fmt.Fprintf(w, ", %s before the check's time", lag.Round(time.Second))
		}
		fmt.Fprintln(w)
	}
	printNamed(w, res.Differences, *maxPrint)
	if res.More > 0 {
		fmt.Fprintf(w, "  ... and at least %d more, in partitions not read again\n", res.More)
	}
	if n := len(res.Unjudged); n > 0 {
		fmt.Fprintf(w, "%d source items could not be judged: their state in the ledger is from the export's own second, and the version cannot order it against the export's\n", n)
		printNamed(w, res.Unjudged, *maxPrint)
	}
	if bm != nil && bm.Completed.IsZero() {
		fmt.Fprintf(w, "NOT READY: the target's backfill (job %s) has not completed: run it to the end (`%s remodel backfill` again) and verify again\n", bm.Job, e.Name)
		return errFailed
	}
	switch {
	case len(res.Differences) > 0 || res.More > 0:
		fmt.Fprintf(w, "MISMATCH: %d differences between the target and the transform of the export (the items changed since it taken as their state in the ledger says)\n", int64(len(res.Differences))+res.More)
		return errFailed
	case res.Unsettled > 0:
		fmt.Fprintf(w, "UNSETTLED: %d differences the stream made while they were read, and no other: verify again\n", res.Unsettled)
		return errFailed
	case len(res.Unjudged) > 0:
		fmt.Fprintf(w, "NOT READY: %d source items could not be judged against the export (in its own second; see above), the rest agrees: %s\n", len(res.Unjudged), verify.UnjudgedAdvice)
		return errFailed
	case !res.Agree():
		// The partitions' hashes differ, and reading them again named
		// nothing: never an agreement.
		fmt.Fprintf(w, "UNSETTLED: %d partitions differ, but reading them again named no difference (the stream changed them meanwhile?): verify again\n", res.Differing)
		return errFailed
	}
	fmt.Fprintf(w, "AGREE: every target item equals the transform of its source item as of the export, with the %d source items changed since as their ledger entries say\n", res.Changed)
	return nil
}

// remodelItems is `tributary remodel items`: the target's items as an
// export writes them.
func remodelItems(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("remodel items", "")
	var tf targetFlags
	tf.register(fs)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	var rows remodel.Reader
	switch {
	case tf.dir != "" && tf.table != "":
		return fmt.Errorf("%w: --store and --table are exclusive", errUsage)
	case tf.dir != "":
		path := filepath.Join(tf.dir, targetFile)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no remodel target at %s", path)
		}
		ts, err := boltstore.OpenTarget(path, "", target.Key{})
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, ts.Close()) }()
		rows = ts
	case tf.table != "":
		client, err := tf.client(ctx)
		if err != nil {
			return err
		}
		key, err := dynamostore.TargetKeyOf(ctx, client, tf.table)
		if err != nil {
			return err
		}
		rows = dynamostore.NewTarget(client, tf.table, tf.ledgerTable(), "", key)
	default:
		return fmt.Errorf("%w: give --store DIR or --table NAME", errUsage)
	}
	w := bufio.NewWriter(e.Stdout)
	defer flush(w, &err)
	var line []byte
	return rows.ScanRows(ctx, func(row driver.StoredRow) error {
		line = export.AppendItemLine(line[:0], row.Attrs)
		line = append(quote.PrintableJSON(line), '\n')
		_, err := w.Write(line)
		return err
	})
}

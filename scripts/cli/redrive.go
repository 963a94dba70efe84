package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/redrive"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

const redriveUsage = `--from s3://BUCKET/PREFIX|DIR (--store DIR | --table NAME) [--endpoint URL] [--dry-run]

Runs the batches that the projector's event source mapping discarded, and
whose invocation records its S3 on-failure destination kept, through the
projector's handler again: exactly once (records already applied are skipped),
so redriving twice is harmless. --from DIR reads a local copy of the
destination (aws s3 sync s3://BUCKET/PREFIX DIR).`

// subsetFlag is --projection, repeatable: the store's set is this subset
// of the environment's projections, as a projector's PROJECTIONS or
// SHADOW_PROJECTIONS makes it.
type subsetFlag struct{ names multiFlag }

func (f *subsetFlag) register(fs *flag.FlagSet) {
	fs.Var(&f.names, "projection", "the store's set is this subset of the projections (repeat for several): a projector's PROJECTIONS or SHADOW_PROJECTIONS")
}

// set returns the subset; the whole set when no --projection is given.
func (f *subsetFlag) set(e *Env) (*projections.Set, error) {
	if len(f.names) == 0 {
		return e.set(), nil
	}
	sub, err := e.set().Select(f.names...)
	if err != nil {
		return nil, fmt.Errorf("%w: --projection: %v", errUsage, err)
	}
	return sub, nil
}

func runRedrive(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("redrive", redriveUsage)
	from := fs.String("from", "", "the destination: s3://BUCKET/PREFIX, or a directory holding a copy of it")
	var sf storeFlags
	sf.register(fs)
	dryRun := fs.Bool("dry-run", false, "decode and decide what would be written; write nothing")
	verbose := fs.Bool("v", false, "log as JSON to stderr")
	var only subsetFlag
	only.register(fs)
	var pf projectionFlags
	pf.register(fs, typeFlag|versionFlag)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	e, decode, err := e.withProjections(pf)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *from == "" {
		return fmt.Errorf("%w: --from is required", errUsage)
	}
	objs, where, err := redriveObjects(ctx, *from, sf.endpoint)
	if err != nil {
		return err
	}
	// A directory's store is created if missing; a table must exist.
	st, closeStore, err := sf.open(ctx, sf.table == "")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	log := e.engineLog(*verbose)
	var writeTo driver.Table = st
	var dry *engine.DryRun
	if *dryRun {
		dry = engine.NewDryRun(st)
		writeTo = dry
	}
	// The projector's engine: the binary's projection set (or the subset
	// --projection names), which must be the one that built the store.
	set, err := only.set(e)
	if err != nil {
		return err
	}
	eng, err := openEngine(ctx, writeTo, sf.String(), set, engine.Config{Logger: log})
	if err != nil {
		return err
	}

	out := e.Stdout
	note := ""
	if *dryRun {
		note = " (dry run: nothing is written)"
	}
	fmt.Fprintf(out, "redrive %s%s\n", where, note)
	t0 := time.Now()
	rep, err := redrive.Run(ctx, objs, redrive.Config{Handler: eng, Options: decode, Logger: log, Each: func(r redrive.ObjectResult) {
		printRedriven(e, r)
	}})
	s := eng.Stats()
	fmt.Fprintf(out, "objects:  %d read, %d fully applied, %d without a payload or unreadable (%.1fs)\n", rep.Objects, rep.Done, rep.Unreadable, time.Since(t0).Seconds())
	fmt.Fprintf(out, "records:  %d; %d applied, %d skipped (no projection reads their entity type), %d failed again\n", rep.Records, rep.Applied, rep.Skipped, rep.Failed)
	if dry != nil {
		txs, actions := dry.Counts()
		fmt.Fprintf(out, "would apply: %d item states in %d transactions (%d write actions)\n", s.Items, txs, actions)
	} else {
		fmt.Fprintf(out, "applied:  %d item states written in %d transactions (%.0f write units)\n", s.Items, s.Transactions, s.WriteUnits)
	}
	fmt.Fprintf(out, "skipped:  %d already applied, %d superseded in their batch, %d of entity types no projection reads\n", s.Stale, s.Superseded, s.Unprojected)
	if err != nil {
		return err
	}
	if rep.Done < rep.Objects {
		return errFailed
	}
	return nil
}

// redriveObjects opens --from: an S3 prefix or a directory.
func redriveObjects(ctx context.Context, from, endpoint string) (redrive.Objects, string, error) {
	loc, err := objstore.Parse(from)
	if err != nil {
		return nil, "", fmt.Errorf("%w: --from: %v", errUsage, err)
	}
	if !loc.IsS3() {
		st, err := os.Stat(from)
		if err != nil {
			return nil, "", fmt.Errorf("--from %s: %w", from, errors.Unwrap(err))
		}
		if !st.IsDir() {
			return nil, "", fmt.Errorf("--from %s is not a directory", from)
		}
	}
	objs, err := openLocation(ctx, loc, endpoint, objstore.S3Options{}, false)
	return objs, from, err
}

// printRedriven reports one object: on stdout what it held and came to, on
// stderr the records that failed again.
func printRedriven(e *Env, r redrive.ObjectResult) {
	inv := r.Invocation
	switch {
	case inv == nil:
		fmt.Fprintf(e.Stdout, "%s: not an invocation record: %s\n", quote.Printable(r.Key), quote.Printable(r.Err.Error()))
		return
	case errors.Is(r.Err, redrive.ErrNoPayload):
		fmt.Fprintf(e.Stdout, "%s: %s, shard %s, %d records from %s: no payload (an SQS or SNS destination's record); read them from the stream again:\n  %s\n",
			r.Key, inv.Condition, inv.Batch.ShardID, inv.Batch.BatchSize, inv.Batch.StartSequenceNumber, replayCommand(e.Name, inv))
		return
	}
	status := "applied"
	switch {
	case r.Err != nil:
		status = "stopped: " + quote.Printable(r.Err.Error())
	case len(r.Failed) > 0:
		status = fmt.Sprintf("%d failed again", len(r.Failed))
	}
	fmt.Fprintf(e.Stdout, "%s: %s %s shard %s, %d records (%s): %d applied, %d skipped, %s\n",
		r.Key, inv.Source, inv.Condition, inv.Batch.ShardID, r.Records, inv.Timestamp.UTC().Format(time.RFC3339), r.Applied, r.Skipped, status)
	for _, f := range r.Failed {
		fmt.Fprintf(e.Stderr, "%s: %s\n", quote.Printable(r.Key), quote.Printable(f.String()))
	}
}

// replayCommand is the replay that reads a metadata-only record's batch
// from its stream.
func replayCommand(name string, inv *redrive.Invocation) string {
	scheme := "kinesis://"
	if inv.Source == pipeline.SourceStreams {
		scheme = "streams://"
	}
	cmd := fmt.Sprintf("%s replay --from %s%s --start %s:%s", name, scheme, inv.Batch.StreamARN, inv.Batch.ShardID, inv.Batch.StartSequenceNumber)
	if !inv.Batch.ApproximateArrivalOfLast.IsZero() {
		cmd += " --until " + inv.Batch.ApproximateArrivalOfLast.Add(time.Second).UTC().Format(time.RFC3339)
	}
	return cmd + " --store DIR|--table NAME"
}

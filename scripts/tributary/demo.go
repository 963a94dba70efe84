package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/scripts/cli"
)

// demo is the `demo` command: a simulated workload over the seed domains,
// delivered through Lambda's event source mapping with faults into an
// embedded store, then checked against a recomputation.
func demo() cli.Command {
	return cli.Command{Name: "demo", Summary: "simulate a workload over the seed domains through Lambda's delivery with faults, then check the aggregates", Run: runDemo}
}

func runDemo(ctx context.Context, e *cli.Env, args []string) (err error) {
	fs := e.FlagSet("demo", "")
	seedFlag := fs.Uint64("seed", 1, "workload seed: the same seed gives the same run")
	changes := fs.Int("changes", 20_000, "number of changes to the simulated table")
	faultRate := fs.Float64("fault-rate", 0.02, "probability of each injected fault (failed commits, lost acknowledgements, failed reads, failed invocations)")
	dir := fs.String("dir", "", "directory for the embedded store (default: a new temporary directory)")
	source := fs.String("source", "streams", "delivery: streams (Lambda on DynamoDB Streams) or kinesis (Lambda on Kinesis, with duplicates and reordering)")
	batch := fs.Int("batch-size", 100, "event source mapping batch size")
	skew := fs.Float64("skew", 1.0, "Zipf exponent of key popularity (0: uniform)")
	noSync := fs.Bool("no-sync", false, "do not fsync the store on every commit (faster, not crash-safe)")
	specFile := fs.String("projections", "", "run the seed projections written as a spec (internal/seed/seed.yaml, or a file of the same projections) instead of the Go ones; the aggregates are checked against both")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	set, spec := seed.Set(), ""
	if *specFile != "" {
		env, err := e.Environment.WithSpec(*specFile)
		if err != nil {
			return fmt.Errorf("--projections: %w", err)
		}
		set, spec = env.Projections, *specFile
	}
	switch {
	case *changes < 1:
		return fmt.Errorf("%w: --changes must be at least 1", cli.ErrUsage)
	case *faultRate < 0 || *faultRate > 0.2:
		return fmt.Errorf("%w: --fault-rate must be between 0 and 0.2", cli.ErrUsage)
	case *source != "streams" && *source != "kinesis":
		return fmt.Errorf("%w: --source must be streams or kinesis", cli.ErrUsage)
	case *batch < 1 || *batch > 10000:
		return fmt.Errorf("%w: --batch-size must be between 1 and 10000", cli.ErrUsage)
	}
	kept := *dir != ""
	if !kept {
		// Without --dir the demo's store is a temporary one, removed when
		// the demo ends: nothing is left behind.
		d, err := os.MkdirTemp("", "tributary-demo-")
		if err != nil {
			return err
		}
		*dir = d
		defer func() { err = errors.Join(err, os.RemoveAll(d)) }()
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	out := e.Stdout
	fmt.Fprintf(out, "Tributary demo: %d changes over the seed domains (seed %d), delivered by Lambda on %s, batches of %d, fault rate %g\n",
		*changes, *seedFlag, map[string]string{"streams": "DynamoDB Streams", "kinesis": "Kinesis (duplicates, reordering)"}[*source], *batch, *faultRate)

	start := time.Now()
	h, err := sim.Workload{Seed: *seedFlag, Changes: *changes, Skew: *skew}.Run()
	if err != nil {
		return fmt.Errorf("generating the workload: %w", err)
	}
	var shards [][]sim.Event
	if *source == "kinesis" {
		shards = sim.KinesisShards(sim.ToKinesis(h.Records, 0.05, 8, sim.NewKinesisRand(*seedFlag)))
	} else {
		shards = sim.StreamsShards(h.Records)
	}
	total := 0
	for _, s := range shards {
		total += len(s)
	}
	fmt.Fprintf(out, "workload: %d stream records in %d shards, %d items in the final table (%.1fs)\n",
		total, len(shards), h.Table.Len(), time.Since(start).Seconds())

	path := filepath.Join(*dir, cli.StoreFile)
	// A demo starts from an empty store.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var opts []boltstore.Option
	if *noSync {
		opts = append(opts, boltstore.WithoutSync())
	}
	st, err := boltstore.Open(path, opts...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	if kept {
		fmt.Fprintf(out, "store: %s\n", path)
	} else {
		fmt.Fprintf(out, "store: %s (temporary, removed when the demo ends; --dir DIR keeps it)\n", path)
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	faulty := &sim.FaultyStore{Store: st, Seed: *seedFlag + 1, CommitFailBefore: *faultRate, CommitFailAfter: *faultRate, ReadFail: *faultRate / 2}
	eng, err := engine.Open(ctx, faulty.Table(st), set, engine.Config{Logger: quiet, Ignore: []string{"User", "Workspace", "Cart"}})
	if err != nil {
		return fmt.Errorf("store %s: %w", *dir, err)
	}
	cfg := pipeline.Config{Logger: quiet}
	p := pipeline.NewStreamsProcessor(eng, cfg)
	if *source == "kinesis" {
		p = pipeline.NewKinesisProcessor(eng, cfg)
	}
	invoke := &sim.FlakyInvoke{Invoke: p.Invoke, Seed: *seedFlag + 2, FailBefore: *faultRate / 2, FailAfter: *faultRate / 2}
	prog := newProgress(e.Stderr, total)
	esm := &sim.ESM{BatchSize: *batch, Bisect: true, RedeliverRate: 2 * *faultRate, MaxAttempts: 10_000, Seed: *seedFlag + 3,
		Trace: func(d sim.Delivery) { prog.add(d.To - d.From) }}
	deliver := time.Now()
	stats, err := esm.Run(ctx, shards, invoke.Call)
	prog.done()
	if err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	took := time.Since(deliver)
	f := faulty.Faults()
	_, failedCalls := invoke.Faults()
	fmt.Fprintf(out, "delivered: %d invocations, %d retries, %d bisections, %d redelivered batches; injected %d store faults and %d failed invocations\n",
		stats.Invocations, stats.Retries, stats.Bisections, stats.Redeliveries, f.Total(), failedCalls)
	s := eng.Stats()
	fmt.Fprintf(out, "engine: %d changes in %.1fs (%.0f changes/s), %d item states written in %d transactions, %d duplicates or stale skipped, %d superseded in batch; %.0f write units (%.0f per 1,000 changes)\n\n",
		s.Changes, took.Seconds(), float64(s.Changes)/took.Seconds(), s.Items, s.Transactions, s.Stale, s.Superseded, s.WriteUnits, s.WriteUnits*1000/float64(len(h.Records)))

	got, err := projections.ReadView(ctx, st)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	showLeaderboard(w, got)
	showAggregates(w, got)
	if err := w.Flush(); err != nil {
		return err
	}

	archived, err := demoArchive(ctx, out, filepath.Join(*dir, "archive"), h, *seedFlag, *faultRate, *batch)
	if err != nil {
		return err
	}

	want, err := projections.Recompute(h.Table.Items(), "", seed.All()...)
	if err != nil {
		return err
	}
	diff := projections.Diff(got, want)
	if spec != "" {
		// The spec's own recomputation must agree too: the store is checked
		// against the Go projections and against the spec's.
		specWant, err := projections.Recompute(h.Table.Items(), "", set.Projections()...)
		if err != nil {
			return err
		}
		for _, d := range projections.Diff(got, specWant) {
			diff = append(diff, "spec: "+d)
		}
		fmt.Fprintf(out, "\nprojections: %s (%s), checked against the Go seed projections' recomputation and the spec's\n", spec, set)
	}
	fmt.Fprintf(out, "\nrecomputed %d aggregates and %d rows from the %d final items\n", len(want.Aggregates), len(want.Rows), h.Table.Len())
	if !archived {
		fmt.Fprintln(out, "VERDICT: ARCHIVE MISMATCH — see above")
		return cli.ErrFailed
	}
	if len(diff) > 0 {
		for i, d := range diff {
			if i == 20 {
				fmt.Fprintf(out, "  ... and %d more\n", len(diff)-20)
				break
			}
			fmt.Fprintln(out, "  "+d)
		}
		fmt.Fprintf(out, "VERDICT: MISMATCH — %d differences between the store and the recomputation\n", len(diff))
		return cli.ErrFailed
	}
	fmt.Fprintln(out, "VERDICT: exact — every aggregate and row equals a from-scratch recomputation, and every TTL removal is archived exactly once, despite the retries, redeliveries and faults above")
	return nil
}

// showLeaderboard prints the top 10 of the season with the most players.
func showLeaderboard(w *bufio.Writer, v *projections.View) {
	bySeason := map[string][]driver.RowRef{}
	for r := range v.Rows {
		if r.Projection == "season-leaderboard" {
			bySeason[r.Partition] = append(bySeason[r.Partition], r)
		}
	}
	best := ""
	for p, rows := range bySeason {
		if len(rows) > len(bySeason[best]) || (len(rows) == len(bySeason[best]) && p < best) {
			best = p
		}
	}
	if best == "" {
		return
	}
	rows := bySeason[best]
	sort.Slice(rows, func(i, j int) bool { return rows[i].Sort > rows[j].Sort })
	fmt.Fprintf(w, "%s leaderboard, top 10 of %d (one Query on the aggregate table):\n", quote.Printable(strings.TrimPrefix(best, "SEASON#")), len(rows))
	for i, r := range rows[:min(10, len(rows))] {
		a := v.Rows[r]
		fmt.Fprintf(w, "  %2d. %-10s %-24s %6s\n", i+1, attr(a, "player"), attr(a, "handle"), attr(a, "rating"))
	}
}

// showAggregates prints a few of the busiest aggregates.
func showAggregates(w *bufio.Writer, v *projections.View) {
	fmt.Fprintln(w, "\nsome aggregates:")
	var keys []projections.AggregateKey
	for k := range v.Aggregates {
		if !strings.Contains(k.Key, "#DAY#") && !strings.Contains(k.Key, "#PLAYER#") && !strings.Contains(k.Key, "#DOC#") && k.Projection != "cart-contents" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Projection != keys[j].Projection {
			return keys[i].Projection < keys[j].Projection
		}
		return keys[i].Key < keys[j].Key
	})
	shown := map[string]int{}
	for _, k := range keys {
		if shown[k.Projection] == 4 {
			continue
		}
		shown[k.Projection]++
		fmt.Fprintf(w, "  %-20s %-22s %s\n", quote.Printable(k.Projection), quote.Printable(k.Key), quote.Pairs(v.Aggregates[k]))
	}
}

// progress prints a progress line to a terminal every second; it is silent
// when stderr is not a terminal.
type progress struct {
	w          io.Writer
	total, n   int
	start, out time.Time
	tty        bool
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	now := time.Now()
	return &progress{w: w, total: total, start: now, out: now, tty: tty}
}

func (p *progress) add(n int) {
	p.n += n
	if !p.tty || time.Since(p.out) < time.Second {
		return
	}
	p.out = time.Now()
	el := time.Since(p.start).Seconds()
	pct := min(100, float64(p.n)*100/float64(max(p.total, 1)))
	eta := 0.0
	if p.n > 0 && p.n < p.total {
		eta = el * float64(p.total-p.n) / float64(p.n)
	}
	fmt.Fprintf(p.w, "\rdelivering: %d records delivered (%.0f%% of the stream, retries included), %.0f/s, ETA %.0fs   ", p.n, pct, float64(p.n)/el, eta)
}

func (p *progress) done() {
	if p.tty && time.Since(p.start) > time.Second {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// demoArchive runs the archiver's handler over the table's DynamoDB stream
// through the same simulated delivery, then reads the archive back and checks
// that it holds every TTL removal exactly once and nothing else.
func demoArchive(ctx context.Context, out io.Writer, dir string, h *sim.History, seedValue uint64, faultRate float64, batch int) (bool, error) {
	if err := os.RemoveAll(dir); err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	handler := archive.New(objstore.NewDir(dir), archive.Options{Logger: quiet})
	p := pipeline.NewStreamsProcessor(handler, pipeline.Config{Logger: quiet})
	invoke := &sim.FlakyInvoke{Invoke: p.Invoke, Seed: seedValue + 4, FailBefore: faultRate / 2, FailAfter: faultRate / 2}
	esm := &sim.ESM{BatchSize: batch, Bisect: true, RedeliverRate: 2 * faultRate, MaxAttempts: 10_000, Seed: seedValue + 5}
	if _, err := esm.Run(ctx, sim.StreamsShards(h.Records), invoke.Call); err != nil {
		return false, fmt.Errorf("archiver delivery: %w", err)
	}

	// Key and version of every TTL removal, counted: an item re-created with
	// the same key expires again at the same version.
	want, removals := map[string]int{}, 0
	for i := range h.Records {
		if r := &h.Records[i]; r.TTL {
			want[pipeline.ItemKey(r.Keys)+" v"+versionOf(r.Old)]++
			removals++
		}
	}
	a := archive.Open(objstore.NewDir(dir), "")
	objs, _, err := a.Objects(ctx, archive.Filter{})
	if err != nil {
		return false, err
	}
	got := map[string]int{}
	for _, o := range objs {
		err := a.ReadLines(ctx, o.Key, func(n int, line []byte) error {
			l, err := archive.ParseLine(line)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", o.Key, n, err)
			}
			item, err := attributevalue.UnmarshalMapJSON(l.Item)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", o.Key, n, err)
			}
			got[pipeline.ItemKey(pipeline.Item{"PK": item["PK"], "SK": item["SK"]})+" v"+versionOf(item)]++
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	var missing, dup, extra int
	for k, n := range want {
		switch g := got[k]; {
		case g < n:
			missing += n - g
		case g > n:
			dup += g - n
		}
	}
	for k := range got {
		if want[k] == 0 {
			extra++
		}
	}
	st := handler.Stats()
	fmt.Fprintf(out, "\narchive: %d TTL removals in %d objects under %s (%d object writes, %d other changes ignored)\n",
		removals, len(objs), dir, st.Objects, st.Ignored)
	if missing+dup+extra > 0 {
		fmt.Fprintf(out, "archive: %d missing, %d duplicated, %d unexpected\n", missing, dup, extra)
		return false, nil
	}
	fmt.Fprintln(out, "archive: every TTL removal is there exactly once, and nothing else")
	return true, nil
}

func versionOf(item pipeline.Item) string {
	if n, ok := item["version"].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return "?"
}
